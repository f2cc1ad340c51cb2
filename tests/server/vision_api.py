#!/usr/bin/env python3
"""vision_api: `anvil serve` with a model that has a projector (the synthetic gemma3 vision model of
tests/vision, its projector as mmproj-*.gguf next to it): /api/show lists "vision" right after
"completion" (Ollama's order); a good image is decoded and then answered with a 501 saying the
server does not evaluate images yet (never silently dropped); a corrupt image is a 400 naming
it and engine/image's reason; an http(s) URL stays a 400; text alone is still answered.

  vision_api.py ANVIL BASE   (BASE.gguf, BASE-mmproj.gguf, BASE.ppm)"""
import base64
import io
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Server, check, finish, post_json  # noqa: E402
from PIL import Image  # noqa: E402

anvil, base = sys.argv[1], sys.argv[2]
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
st, _, o, raw = post_json(srv, "/api/chat", {"model": model, "messages": [
    {"role": "user", "content": "Describe it.", "images": [b64]}]})
check(st == 501 and "does not evaluate images yet" in str(o), "chat with an image: 501, not dropped (%d %r)" % (st, raw[:200]))
st, _, o, raw = post_json(srv, "/api/generate", {"model": model, "prompt": "x", "images": [b64, bad]})
check(st == 400 and "image 1: image: invalid PNG" in str(o), "corrupt second image: 400 naming it (%d %r)" % (st, raw[:200]))
st, _, o, raw = post_json(srv, "/v1/chat/completions", {"model": model, "messages": [{"role": "user", "content": [
    {"type": "image_url", "image_url": {"url": "data:image/png;base64," + b64}}]}]})
check(st == 501, "/v1 data URI: 501 (%d %r)" % (st, raw[:200]))
st, _, o, raw = post_json(srv, "/v1/chat/completions", {"model": model, "messages": [{"role": "user", "content": [
    {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]}]})
check(st == 400 and "image URLs are not supported" in str(o), "/v1 https URL: 400 (%d)" % st)
st, _, o, raw = post_json(srv, "/api/generate", {"model": model, "prompt": "hi", "stream": False,
                                                 "options": {"num_predict": 2}})
check(st == 200 and o.get("done") is True, "text alone answered (%d %r)" % (st, raw[:200]))
rc, _ = srv.stop()
check(rc == 0, "server exits 0")
shutil.rmtree(tmp, ignore_errors=True)
finish()
