#!/usr/bin/env python3
"""bench_vision_resend: what a chat that resends its images costs on `anvil serve` (issue 32: the
per-image-digest cache and the image-aware prompt-prefix reuse). A chat with 3 images (different
pixels, same size) is sent, then resent with the reply and a follow-up question (what every chat
client does each turn), then the same 3 images after another system prompt (the prefix cannot be
reused: the images come from the cache). For each request: wall time, prompt_eval_count, and
/metrics' anvil_images_total by source (encoded / cache / prefix). Then the same with
ANVIL_VISION_CACHE=0 (images encoded whenever the prefix is lost). Synthetic weights
(tools/make_test_model.py gemma3 tiny + tools/make_test_mmproj.py gemma3 --preset bench:
224 px, 14 px patches, 384 wide, 4 blocks), CPU, ANVIL_NUM_THREADS threads (default 2).

  bench_vision_resend.py ANVIL [--reps 2]   (run from the repository root)"""
import argparse
import base64
import io
import os
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "tests", "server"))
from common import Server, post_json, request  # noqa: E402
from PIL import Image  # noqa: E402


def images_total(srv):
    st, _, body = request(srv, "GET", "/metrics")
    out = {"encoded": 0, "cache": 0, "prefix": 0}
    for line in body.decode().splitlines():
        if line.startswith("anvil_images_total{"):
            out[line.split('source="')[1].split('"')[0]] = int(float(line.rsplit(" ", 1)[1]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("anvil")
    ap.add_argument("--reps", type=int, default=2)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="anvil-bench-vision-")
    model, proj, ppm = (os.path.join(tmp, n) for n in ("tiny.gguf", "mmproj-bench.gguf", "img.ppm"))
    py = sys.executable
    subprocess.run([py, os.path.join(here, "make_test_model.py"), "--family", "gemma3", "--preset", "tiny", "--type", "f32",
                    "--gemma3-swa", "off", "--out", model], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([py, os.path.join(here, "make_test_mmproj.py"), "--family", "gemma3", "--preset", "bench", "--type", "f32",
                    "--n-embd-text", "128", "--out", proj], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([py, os.path.join(here, "make_test_mmproj.py"), "--image", "640x480", "--out", ppm], check=True,
                   stdout=subprocess.DEVNULL)
    base = Image.open(ppm)
    b64 = []
    for t in (None, Image.Transpose.FLIP_LEFT_RIGHT, Image.Transpose.FLIP_TOP_BOTTOM):
        buf = io.BytesIO()
        (base.transpose(t) if t is not None else base).save(buf, "PNG")
        b64.append(base64.b64encode(buf.getvalue()).decode())
    opts = {"temperature": 0, "num_predict": 4}
    first = [{"role": "user", "content": "Compare these.", "images": b64}]
    for env in ({}, {"ANVIL_VISION_CACHE": "0"}):
        for rep in range(a.reps):
            srv = Server(a.anvil, env=env)
            post_json(srv, "/api/generate", {"model": model, "prompt": "hi", "options": {"num_predict": 1}, "stream": False})
            rows = []
            for label, body in (("first", first), ("resent + follow-up", None), ("other system prompt", None)):
                if label == "resent + follow-up":
                    body = first + [{"role": "assistant", "content": reply}, {"role": "user", "content": "And now?"}]
                elif label == "other system prompt":
                    body = [{"role": "system", "content": "Be brief."}] + first
                m0 = images_total(srv)
                t0 = time.perf_counter()
                st, _, o, raw = post_json(srv, "/api/chat", {"model": model, "messages": body, "stream": False, "options": opts})
                dt = time.perf_counter() - t0
                m1 = images_total(srv)
                if st != 200:
                    sys.exit("request failed: %d %r" % (st, raw[:300]))
                reply = o["message"]["content"] if label == "first" else reply
                d = {k: m1[k] - m0[k] for k in m0}
                rows.append("%-20s %7.3f s  prompt_eval_count %4d  images encoded %d, cache %d, prefix %d"
                            % (label, dt, o.get("prompt_eval_count", -1), d["encoded"], d["cache"], d["prefix"]))
            srv.stop()
            print("ANVIL_VISION_CACHE=%s rep %d" % (env.get("ANVIL_VISION_CACHE", "default"), rep + 1))
            for r in rows:
                print("  " + r)


if __name__ == "__main__":
    main()
