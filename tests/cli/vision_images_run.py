#!/usr/bin/env python3
"""vision_images_run: `anvil run MODEL "<image path> Describe it."` on the synthetic gemma3 vision
model (tests/vision: text model + projector + image made by its fixture) must give exactly
llama-mtmd-cli's 12-token greedy reply to the same image and prompt (the committed
<entry>.greedy.txt, made from the PPM): the image found in the prompt by Ollama's CLI rules,
decoded by engine/image (the PPM re-encoded as PNG and lossless WebP: the same pixels), its
marker placed before the text as Ollama places it. Also: an escaped path with spaces, the
projector found next to the model (mmproj-*.gguf) without --mmproj, two images (runs), and an
undecodable file with an image's name (one line, exit 1).

  vision_images_run.py ANVIL BASE GREEDY.txt   (BASE.gguf, BASE-mmproj.gguf, BASE.ppm)"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
from common import check, finish  # noqa: E402
from PIL import Image  # noqa: E402

anvil, base, greedy = sys.argv[1], sys.argv[2], sys.argv[3]
tmp = tempfile.mkdtemp(prefix="anvil-vision-run-")
env = dict(os.environ, HOME=tmp, ANVIL_MODELS=os.path.join(tmp, "store"), ANVIL_BACKEND="cpu")
for k in ("OLLAMA_MODELS", "OLLAMA_HOST", "ANVIL_HOST"):
    env.pop(k, None)
with open(greedy, "rb") as f:
    want = f.read().strip(b"\n").decode(errors="replace")
img = Image.open(base + ".ppm")
png = os.path.join(tmp, "picture.png")
img.save(png)
spaced = os.path.join(tmp, "my picture (2).webp")
img.save(spaced, lossless=True)
broken = os.path.join(tmp, "broken.png")
with open(broken, "wb") as f:
    f.write(open(png, "rb").read()[:60])


def run(model, prompt, *extra):
    cmd = [anvil, "run", model, "--local", *extra, prompt, "-n", "12", "--temp", "0"]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=300)
    return r.returncode, r.stdout.strip(b"\n").decode(errors="replace"), r.stderr.decode(errors="replace")


mm = ["--mmproj", base + "-mmproj.gguf"]
rc, out, err = run(base + ".gguf", "%s Describe it." % png, *mm)
check(rc == 0 and out == want and ("Added image '%s'" % png) in err,
      "PNG path in the prompt: llama-mtmd-cli's reply (%d %r vs %r; %s)" % (rc, out, want, err.strip()[-300:]))
esc = spaced.replace(" ", "\\ ").replace("(", "\\(").replace(")", "\\)")
rc, out, err = run(base + ".gguf", "Describe it. %s" % esc, *mm)
check(rc == 0 and out == want, "escaped WebP path after the text: the same reply (%d %r; %s)" % (rc, out, err.strip()[-300:]))
# the projector next to the model, as a store or a download would place it
mdir = os.path.join(tmp, "model")
os.makedirs(mdir)
shutil.copy(base + ".gguf", os.path.join(mdir, "tiny.gguf"))   # copies: a path is resolved before the search
shutil.copy(base + "-mmproj.gguf", os.path.join(mdir, "mmproj-tiny.gguf"))
rc, out, err = run(os.path.join(mdir, "tiny.gguf"), "%s Describe it." % png)
check(rc == 0 and out == want, "projector found next to the model: the same reply (%d %r; %s)" % (rc, out, err.strip()[-300:]))
rc, out, err = run(base + ".gguf", "compare %s with %s" % (png, esc), *mm)
check(rc == 0 and err.count("Added image") == 2, "two images: run (%d; %s)" % (rc, err.strip()[-300:]))
rc, out, err = run(base + ".gguf", "%s Describe it." % broken, *mm)
lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("Added image")]
check(rc == 1 and len(lines) == 1 and "image:" in lines[0] and broken in lines[0],
      "truncated PNG: one line naming it (%d %r)" % (rc, err[-300:]))
shutil.rmtree(tmp, ignore_errors=True)
finish()
