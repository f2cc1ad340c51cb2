#!/usr/bin/env python3
"""vision_api: `anvil serve` with a model that has a projector (the synthetic gemma3 vision model of
tests/vision, its projector as mmproj-*.gguf next to it): /api/show lists "vision" right after
"completion" (Ollama's order); an image on /api/chat gives exactly llama-mtmd-cli's 12-token
greedy reply (the committed <entry>.greedy.txt), prompt_eval_count grows by the same count (image
rows and markers) per image; the same through /v1 (data URI)
and /api/generate; a follow-up turn that resends the image works; a corrupt image is a 400
naming it and engine/image's reason; an http(s) URL stays a 400; count_tokens with an image
counts its rows (the same count the chat reports); text alone is still answered.
The per-digest image cache and prefix reuse (issue 32), through /metrics' anvil_images_total:
a resent chat encodes 0 images (its prefix, image included, is reused), the same image after
other text comes from the cache (0 encoded), another image of the same size is encoded and
never taken for the first (its rows all evaluated), and ANVIL_VISION_CACHE=0 turns the cache off.

  vision_api.py ANVIL BASE GREEDY.txt   (BASE.gguf, BASE-mmproj.gguf, BASE.ppm)"""
import base64
import io
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Server, check, finish, post_json, request  # noqa: E402
from PIL import Image  # noqa: E402

anvil, base, greedy = sys.argv[1], sys.argv[2], sys.argv[3]
with open(greedy, "rb") as f:
    want = f.read().strip(b"\n").decode(errors="replace")
tmp = tempfile.mkdtemp(prefix="anvil-vision-api-")
model = os.path.join(tmp, "tiny.gguf")
shutil.copy(base + ".gguf", model)
shutil.copy(base + "-mmproj.gguf", os.path.join(tmp, "mmproj-tiny.gguf"))
buf = io.BytesIO()
Image.open(base + ".ppm").save(buf, "PNG")
png = buf.getvalue()
b64 = base64.b64encode(png).decode()
bad = base64.b64encode(png[:len(png) // 2]).decode()
flipped = io.BytesIO()   # another image of the same size
Image.open(base + ".ppm").transpose(Image.Transpose.FLIP_LEFT_RIGHT).save(flipped, "PNG")
b64_other = base64.b64encode(flipped.getvalue()).decode()
check(b64_other != b64, "the second test image differs from the first")


def images_total(srv):
    """anvil_images_total by source from /metrics."""
    st, _, body = request(srv, "GET", "/metrics")
    out = {}
    for line in body.decode().splitlines():
        if line.startswith("anvil_images_total{"):
            src = line.split('source="')[1].split('"')[0]
            out[src] = int(float(line.rsplit(" ", 1)[1]))
    return out


def delta(before, after):
    return {k: after.get(k, 0) - before.get(k, 0) for k in ("encoded", "cache", "prefix")}


srv = Server(anvil)
st, _, o, raw = post_json(srv, "/api/show", {"model": model})
caps = o.get("capabilities", []) if isinstance(o, dict) else []
check(st == 200 and caps[:2] == ["completion", "vision"], "show: capabilities start completion, vision (%r)" % caps)
opts = {"temperature": 0, "num_predict": 12}
# the counts below each on a freshly loaded model (keep_alive 0): no prefix of an earlier request reused
_, _, ot, _ = post_json(srv, "/api/chat", {"model": model, "stream": False, "options": opts, "keep_alive": 0,
                                          "messages": [{"role": "user", "content": "Describe it."}]})
ask = [{"role": "user", "content": "Describe it.", "images": [b64]}]
st, _, o, raw = post_json(srv, "/api/chat", {"model": model, "messages": ask, "stream": False, "options": opts,
                                             "keep_alive": 0})
got = o.get("message", {}).get("content") if isinstance(o, dict) else None
check(st == 200 and got == want, "chat with an image: llama-mtmd-cli's reply (%d %r vs %r)" % (st, got, want))
# prompt_eval_count counts the image rows (Ollama's): each image adds the same rows + markers
count = o.get("prompt_eval_count") if isinstance(o, dict) else None
_, _, o2i, _ = post_json(srv, "/api/chat", {"model": model, "stream": False, "options": opts, "keep_alive": 0,
                                           "messages": [{"role": "user", "content": "Describe it.", "images": [b64, b64]}]})
ct, c2 = (ot or {}).get("prompt_eval_count"), (o2i or {}).get("prompt_eval_count")
check(None not in (count, ct, c2) and count - ct > 4 and c2 - count == count - ct,
      "prompt_eval_count counts the image rows: text %r, 1 image %r, 2 images %r" % (ct, count, c2))
rows = (count or 0) - (ct or 0)   # one image's rows and its begin / end markers
# the cache and prefix reuse: the first request loads the model (the counts above unloaded it)
m0 = images_total(srv)
st, _, o, raw = post_json(srv, "/api/chat", {"model": model, "messages": ask, "stream": False, "options": opts})
m1 = images_total(srv)
check(st == 200 and delta(m0, m1) == {"encoded": 1, "cache": 0, "prefix": 0} and o.get("prompt_eval_count") == count,
      "a new chat with an image encodes it once (%r, prompt_eval_count %r)" % (delta(m0, m1), o.get("prompt_eval_count")))
resent = ask + [{"role": "assistant", "content": got or ""}, {"role": "user", "content": "And again?"}]
st2, _, o2, raw = post_json(srv, "/api/chat", {"model": model, "stream": False, "options": opts, "messages": resent})
m2 = images_total(srv)
check(st2 == 200 and delta(m1, m2) == {"encoded": 0, "cache": 0, "prefix": 1},
      "the chat resent with a follow-up: 0 images encoded, its prefix reused (%d %r %r)" % (st2, delta(m1, m2), raw[:200]))
check(isinstance(o2, dict) and 0 < o2.get("prompt_eval_count", 0) < rows,
      "the follow-up evaluates only its new tokens (prompt_eval_count %r, one image is %d rows)"
      % (o2.get("prompt_eval_count") if isinstance(o2, dict) else None, rows))
sysmsg = [{"role": "system", "content": "Be brief."}]
st, _, o, raw = post_json(srv, "/api/chat", {"model": model, "stream": False, "options": opts, "messages": sysmsg + ask})
m3 = images_total(srv)
check(st == 200 and delta(m2, m3) == {"encoded": 0, "cache": 1, "prefix": 0},
      "the same image after other text: from the cache, not encoded (%d %r)" % (st, delta(m2, m3)))
other = [{"role": "user", "content": "Describe it.", "images": [b64_other]}]
st, _, o, raw = post_json(srv, "/api/chat", {"model": model, "stream": False, "options": opts, "messages": other})
m4 = images_total(srv)
check(st == 200 and delta(m3, m4) == {"encoded": 1, "cache": 0, "prefix": 0} and o.get("prompt_eval_count", 0) >= rows,
      "another image of the same size: encoded, its rows evaluated (no match with the first) (%r, prompt_eval_count %r)"
      % (delta(m3, m4), o.get("prompt_eval_count")))
# count_tokens with an image: its rows counted without encoding, as /v1/messages counts the same message
an_msgs = [{"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64}},
                                        {"type": "text", "text": "Describe it."}]}]
st, _, o, raw = post_json(srv, "/v1/messages/count_tokens", {"model": model, "messages": an_msgs})
st_t, _, o_t, _ = post_json(srv, "/v1/messages/count_tokens", {"model": model, "messages": [{"role": "user", "content": [
    {"type": "text", "text": "Describe it."}]}]})
n_img, n_txt = (o or {}).get("input_tokens"), (o_t or {}).get("input_tokens")
check(images_total(srv) == m4, "count_tokens encodes nothing")
st_m, _, o_m, _ = post_json(srv, "/v1/messages", {"model": model, "max_tokens": 2, "messages": an_msgs})
usage = (o_m or {}).get("usage") or {}
n_run = usage.get("input_tokens", 0) + usage.get("cache_read_input_tokens", 0)   # what ran + the prefix reused
check(st == 200 and st_t == 200 and st_m == 200 and n_img == n_run and isinstance(n_txt, int) and n_img - n_txt >= rows,
      "count_tokens counts the image's rows as /v1/messages does (%d %r = %r; text alone %r, one image %d rows)"
      % (st, raw[:200], n_run, n_txt, rows))
st, _, o, raw = post_json(srv, "/api/generate", {"model": model, "prompt": "x", "images": [b64], "stream": False,
                                                 "options": opts})
check(st == 200 and o.get("done") is True and "context" not in o, "generate with an image: 200, no context (%d %r)"
      % (st, raw[:200]))
st, _, o, raw = post_json(srv, "/v1/chat/completions", {"model": model, "temperature": 0, "max_tokens": 12, "messages": [
    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64," + b64}},
                                 {"type": "text", "text": "Describe it."}]}]})
check(st == 200, "/v1 data URI: 200 (%d %r)" % (st, raw[:200]))
st, _, o, raw = post_json(srv, "/api/generate", {"model": model, "prompt": "x", "images": [b64, bad]})
check(st == 400 and "image 1: image: invalid PNG" in str(o), "corrupt second image: 400 naming it (%d %r)" % (st, raw[:200]))
st, _, o, raw = post_json(srv, "/v1/chat/completions", {"model": model, "messages": [{"role": "user", "content": [
    {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]}]})
check(st == 400 and "image URLs are not supported" in str(o), "/v1 https URL: 400 (%d)" % st)
st, _, o, raw = post_json(srv, "/api/generate", {"model": model, "prompt": "hi", "stream": False,
                                                 "options": {"num_predict": 2}})
check(st == 200 and o.get("done") is True, "text alone answered (%d %r)" % (st, raw[:200]))
rc, _ = srv.stop()
check(rc == 0, "server exits 0")
# ANVIL_MAX_IMAGE_PIXELS / ANVIL_MAX_IMAGE_BYTES: an image over either limit is a 400 naming it
w, h = Image.open(base + ".ppm").size
for env, words in (({"ANVIL_MAX_IMAGE_PIXELS": str(w * h - 1)}, "pixels"),
                   ({"ANVIL_MAX_IMAGE_BYTES": str(len(png) - 1)}, "bytes")):
    srv = Server(anvil, env=env)
    st, _, o, raw = post_json(srv, "/api/generate", {"model": model, "prompt": "x", "images": [b64]})
    check(st == 400 and words in str(o), "%s: 400 naming the limit (%d %r)" % (env, st, raw[:200]))
    rc, _ = srv.stop()
    check(rc == 0, "server exits 0")
# ANVIL_VISION_CACHE=0: no cache, so the same image after other text is encoded again
srv = Server(anvil, env={"ANVIL_VISION_CACHE": "0"})
for msgs in (ask, sysmsg + ask):
    m0 = images_total(srv)
    st, _, o, raw = post_json(srv, "/api/chat", {"model": model, "stream": False, "options": opts, "messages": msgs})
    check(st == 200 and delta(m0, images_total(srv))["encoded"] == 1, "ANVIL_VISION_CACHE=0: encoded each time (%d)" % st)
rc, _ = srv.stop()
check(rc == 0, "server exits 0")
shutil.rmtree(tmp, ignore_errors=True)
finish()
