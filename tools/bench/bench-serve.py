#!/usr/bin/env python3
"""bench-serve: generation throughput of `anvil serve` (or any Ollama-compatible server)
with 1, 2 and 4 concurrent streams, against the same requests run one after another.
Tokens/s = generated tokens (eval_count) of all streams / wall time. With continuous
batching, N concurrent streams should beat N sequential ones.

  tools/bench/bench-serve.py --model gemma3:270m                  # a running server (ANVIL_HOST)
  tools/bench/bench-serve.py --anvil build/anvil --model m.gguf   # starts its own server
Options: --streams 1,2,4  --num-predict 128  --prompt TEXT  --json"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request


def generate(base, model, prompt, n_predict, seed):
    body = json.dumps({"model": model, "prompt": prompt, "stream": True,
                       "options": {"num_predict": n_predict, "seed": seed, "temperature": 0.8}}).encode()
    req = urllib.request.Request(base + "/api/generate", data=body, headers={"Content-Type": "application/json"})
    last = None
    first_token_s = None
    t0 = time.time()
    with urllib.request.urlopen(req, timeout=3600) as resp:
        for line in resp:
            if not line.strip():
                continue
            obj = json.loads(line)
            if "error" in obj:
                raise RuntimeError(obj["error"])
            if first_token_s is None and obj.get("response"):
                first_token_s = time.time() - t0
            last = obj
    return {"eval_count": last.get("eval_count", 0), "eval_ns": last.get("eval_duration", 0),
            "ttft_s": first_token_s or 0.0}


def run_concurrent(base, model, prompt, n_predict, n):
    results = [None] * n
    errors = []

    def one(i):
        try:
            results[i] = generate(base, model, prompt, n_predict, 1000 + i)
        except Exception as ex:  # noqa: BLE001
            errors.append(repr(ex))
    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.time() - t0
    if errors:
        raise RuntimeError("; ".join(errors))
    return sum(r["eval_count"] for r in results), wall


def run_sequential(base, model, prompt, n_predict, n):
    t0 = time.time()
    tokens = sum(generate(base, model, prompt, n_predict, 1000 + i)["eval_count"] for i in range(n))
    return tokens, time.time() - t0


def start_server(anvil, parallel):
    tmp = tempfile.mkdtemp(prefix="bench-serve-")
    env = dict(os.environ, ANVIL_HOST="127.0.0.1:0", ANVIL_MODELS=os.path.join(tmp, "models"),
               ANVIL_NUM_PARALLEL=str(parallel))
    p = subprocess.Popen([anvil, "serve"], env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    for line in p.stderr:
        m = re.search(r"listening on (\S+)", line)
        if m:
            threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
            return p, "http://" + m.group(1)
    raise RuntimeError("anvil serve did not start")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="model name, or a GGUF path with --anvil")
    ap.add_argument("--host", default=os.environ.get("ANVIL_HOST", "127.0.0.1:11434"))
    ap.add_argument("--anvil", help="start this anvil binary's server (ANVIL_NUM_PARALLEL = the largest stream count)")
    ap.add_argument("--streams", default="1,2,4")
    ap.add_argument("--num-predict", type=int, default=128)
    ap.add_argument("--prompt", default="Write a short story about a lighthouse keeper.")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    a = ap.parse_args()
    counts = [int(x) for x in a.streams.split(",")]
    proc = None
    base = a.host if a.host.startswith("http") else "http://" + a.host
    if a.anvil:
        proc, base = start_server(a.anvil, max(counts))
    rows = []
    try:
        generate(base, a.model, a.prompt, 8, 1)  # load the model, warm up
        for n in counts:
            ct, cw = run_concurrent(base, a.model, a.prompt, a.num_predict, n)
            st, sw = run_sequential(base, a.model, a.prompt, a.num_predict, n)
            rows.append({"streams": n, "concurrent_tokens": ct, "concurrent_s": round(cw, 3),
                         "concurrent_tok_s": round(ct / cw, 2), "sequential_tokens": st,
                         "sequential_s": round(sw, 3), "sequential_tok_s": round(st / sw, 2),
                         "speedup": round((ct / cw) / (st / sw), 2)})
    finally:
        if proc:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
    if a.json:
        print(json.dumps(rows, indent=1))
        return
    print("%-8s %22s %22s %8s" % ("streams", "concurrent t/s (tok)", "sequential t/s (tok)", "speedup"))
    for r in rows:
        print("%-8d %14.1f (%5d) %14.1f (%5d) %7.2fx" % (r["streams"], r["concurrent_tok_s"], r["concurrent_tokens"],
                                                       r["sequential_tok_s"], r["sequential_tokens"], r["speedup"]))


if __name__ == "__main__":
    sys.exit(main())
