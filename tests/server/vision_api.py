#!/usr/bin/env python3
"""vision_api: `anvil serve` with a model that has a projector (the synthetic gemma3 vision model of
tests/vision, its projector as mmproj-*.gguf next to it): /api/show lists "vision" right after
"completion" (Ollama's order); an image on /api/chat gives exactly llama-mtmd-cli's 12-token
greedy reply (the committed <entry>.greedy.txt), prompt_eval_count grows by the same count (image
rows and markers) per image; the same through /v1 (data URI)
and /api/generate; a follow-up turn that resends the image works; a corrupt image is a 400
naming it and engine/image's reason; an http(s) URL stays a 400; count_tokens with an image is a
clear 400 (not counted yet); text alone is still answered.

  vision_api.py ANVIL BASE GREEDY.txt   (BASE.gguf, BASE-mmproj.gguf, BASE.ppm)"""
import base64
import io
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Server, check, finish, post_json  # noqa: E402
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

srv = Server(anvil)
st, _, o, raw = post_json(srv, "/api/show", {"model": model})
caps = o.get("capabilities", []) if isinstance(o, dict) else []
check(st == 200 and caps[:2] == ["completion", "vision"], "show: capabilities start completion, vision (%r)" % caps)
opts = {"temperature": 0, "num_predict": 12}
# first, on a fresh server (no cached prefix to reuse): the text alone, for prompt_eval_count below
_, _, ot, _ = post_json(srv, "/api/chat", {"model": model, "stream": False, "options": opts,
                                          "messages": [{"role": "user", "content": "Describe it."}]})
ask = [{"role": "user", "content": "Describe it.", "images": [b64]}]
st, _, o, raw = post_json(srv, "/api/chat", {"model": model, "messages": ask, "stream": False, "options": opts})
got = o.get("message", {}).get("content") if isinstance(o, dict) else None
check(st == 200 and got == want, "chat with an image: llama-mtmd-cli's reply (%d %r vs %r)" % (st, got, want))
# prompt_eval_count counts the image rows (Ollama's): each image adds the same rows + markers
count = o.get("prompt_eval_count") if isinstance(o, dict) else None
_, _, o2i, _ = post_json(srv, "/api/chat", {"model": model, "stream": False, "options": opts,
                                           "messages": [{"role": "user", "content": "Describe it.", "images": [b64, b64]}]})
ct, c2 = (ot or {}).get("prompt_eval_count"), (o2i or {}).get("prompt_eval_count")
check(None not in (count, ct, c2) and count - ct > 4 and c2 - count == count - ct,
      "prompt_eval_count counts the image rows: text %r, 1 image %r, 2 images %r" % (ct, count, c2))
st2, _, o2, raw = post_json(srv, "/api/chat", {"model": model, "stream": False, "options": opts, "messages": ask + [
    {"role": "assistant", "content": got or ""}, {"role": "user", "content": "And again?"}]})
check(st2 == 200 and isinstance(o2, dict) and o2.get("prompt_eval_count", 0) > (count or 0),
      "follow-up turn resending the image (%d %r)" % (st2, raw[:200]))
st, _, o, raw = post_json(srv, "/api/generate", {"model": model, "prompt": "x", "images": [b64], "stream": False,
                                                 "options": opts})
check(st == 200 and o.get("done") is True and "context" not in o, "generate with an image: 200, no context (%d %r)"
      % (st, raw[:200]))
st, _, o, raw = post_json(srv, "/v1/chat/completions", {"model": model, "temperature": 0, "max_tokens": 12, "messages": [
    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64," + b64}},
                                 {"type": "text", "text": "Describe it."}]}]})
check(st == 200, "/v1 data URI: 200 (%d %r)" % (st, raw[:200]))
st, _, o, raw = post_json(srv, "/v1/messages/count_tokens", {"model": model, "messages": [{"role": "user", "content": [
    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64}}, {"type": "text", "text": "x"}]}]})
check(st == 400 and "not supported yet" in str(o), "count_tokens with an image: a clear 400 (%d %r)" % (st, raw[:200]))
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
shutil.rmtree(tmp, ignore_errors=True)
finish()
