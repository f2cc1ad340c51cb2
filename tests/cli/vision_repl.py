#!/usr/bin/env python3
"""vision_repl: images in `anvil run MODEL`'s interactive chat (issue 32), on the synthetic gemma3
vision model of tests/vision, through a pseudo-terminal (pexpect), in this process (--local):
- a message naming an image file (Ollama's CLI rules) attaches it ("Added image '<path>'") and
  the reply is llama-mtmd-cli's 12-token greedy reply to that image (the committed greedy text);
- the image stays in the conversation: the next turn re-renders it, and /set verbose's images
  line says it was neither encoded nor taken from the cache but already in the context;
- /clear drops the conversation's images: the same message again gives the same reply (the
  context's prefix, image included, reused), a second image of the same size is encoded (never
  taken for the first), and after /clear that image alone comes from the cache;
- an image file that cannot be decoded is one line naming it, nothing is sent, the chat goes on;
and through a running `anvil serve` (the images sent base64 with their messages each turn): the
same reply, and the server's /metrics show the follow-up turn reused the image with the prefix.

  vision_repl.py ANVIL BASE GREEDY.txt   (BASE.gguf, BASE-mmproj.gguf, BASE.ppm)"""
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
from common import Server, check, finish, request  # noqa: E402
from PIL import Image  # noqa: E402

try:
    import pexpect
except ImportError:
    print("SKIP: python pexpect is not installed (tools/install-deps.sh installs it)")
    sys.exit(0)

anvil, base, greedy = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3]
with open(greedy, "rb") as f:
    want = f.read().strip(b"\n").decode(errors="replace")
tmp = tempfile.mkdtemp(prefix="anvil-vision-repl-")
env = dict(os.environ, HOME=tmp, ANVIL_MODELS=os.path.join(tmp, "store"), ANVIL_BACKEND="cpu", TERM="xterm")
for k in ("OLLAMA_MODELS", "OLLAMA_HOST", "ANVIL_HOST", "ANVIL_VISION_CACHE"):
    env.pop(k, None)
img = Image.open(base + ".ppm")
png = os.path.join(tmp, "picture.png")
img.save(png)
other = os.path.join(tmp, "other.png")
img.transpose(Image.Transpose.FLIP_LEFT_RIGHT).save(other)
broken = os.path.join(tmp, "broken.png")
with open(broken, "wb") as f:
    f.write(open(png, "rb").read()[:60])
PROMPT = ">>> "
IMAGES = r"images:\s+(\d+) encoded, (\d+) from the cache, (\d+) already in the context"



def spawn(args, e):
    return pexpect.spawn(anvil, ["run"] + args + ["-n", "12", "--temp", "0"], env=e, encoding="utf-8", codec_errors="replace",
                         timeout=120, dimensions=(50, 400))


c = spawn(["--local", base + ".gguf", "--mmproj", base + "-mmproj.gguf"], env)


def step(line, what):
    """Sends a line, returns everything printed until the next prompt (None after a FAIL)."""
    c.sendline(line)
    try:
        c.expect(PROMPT)
        return c.before
    except (pexpect.TIMEOUT, pexpect.EOF) as e:
        check(False, what, "%s; the output ended with: %r" % (type(e).__name__, (c.before or "")[-800:]))
        return None


def reply_of(out, line):
    """The reply text: what follows the echoed line, before the verbose timings."""
    text = (out or "").split(line, 1)[-1].split("total duration")[0]
    text = "\n".join(ln for ln in text.splitlines() if not ln.startswith("Added image"))
    return text.strip()


def images(out):
    m = re.search(IMAGES, out or "")
    return tuple(int(g) for g in m.groups()) if m else None


try:
    c.expect(PROMPT)
except (pexpect.TIMEOUT, pexpect.EOF):
    check(False, "the chat starts", repr(c.before))
    sys.exit(finish())
step("/set verbose", "/set verbose")
line = "%s Describe it." % png
out = step(line, "a message with an image")
check(out is not None and ("Added image '%s'" % png) in out, "the image is attached (Added image ...)", repr(out))
check(reply_of(out, line) == want, "the reply is llama-mtmd-cli's (%r vs %r)" % (reply_of(out, line), want))
check(images(out) == (1, 0, 0), "the first turn encodes the image (%r)" % (images(out),))
out = step("And again?", "a follow-up turn")
check(images(out) == (0, 0, 1), "the follow-up re-renders the image: already in the context, not encoded (%r)" % (images(out),))
out = step("/clear", "/clear")
check("Cleared session context" in (out or ""), "/clear", repr(out))
out = step(line, "the same message after /clear")
check(reply_of(out, line) == want and images(out) == (0, 0, 1),
      "after /clear the same message gives the same reply from the reused prefix (%r, %r)" % (reply_of(out, line), images(out)))
out = step("%s And this one?" % other, "a second image")
check(images(out) == (1, 0, 1), "a second image of the same size is encoded, the first reused (%r)" % (images(out),))
step("/clear", "/clear again")
out = step("%s Describe it." % other, "the second image alone")
check(images(out) == (0, 1, 0), "the second image after /clear comes from the cache (%r)" % (images(out),))
out = step("%s Describe it." % broken, "an undecodable image")
check(out is not None and ("%s: image:" % broken) in out and "Added image" not in out,
      "an undecodable image: one line naming it, not sent", repr(out))
out = step("/clear", "the chat goes on")
check("Cleared session context" in (out or ""), "the chat goes on after the error", repr(out))
c.sendline("/bye")
try:
    c.expect(pexpect.EOF, timeout=30)
except pexpect.TIMEOUT:
    c.terminate(force=True)
c.close()
check(c.exitstatus == 0, "/bye exits 0 (%r)" % c.exitstatus)

# through a running server: the projector next to the model, as the server finds it
mdir = os.path.join(tmp, "model")
os.makedirs(mdir)
shutil.copy(base + ".gguf", os.path.join(mdir, "tiny.gguf"))
shutil.copy(base + "-mmproj.gguf", os.path.join(mdir, "mmproj-tiny.gguf"))
srv = Server(anvil)


def served_images():
    _, _, body = request(srv, "GET", "/metrics")
    got = {}
    for ln in body.decode().splitlines():
        if ln.startswith("anvil_images_total{"):
            got[ln.split('source="')[1].split('"')[0]] = int(float(ln.rsplit(" ", 1)[1]))
    return got


c = spawn([os.path.join(mdir, "tiny.gguf")], dict(env, ANVIL_HOST=srv.host))
try:
    c.expect(PROMPT)
    out = step(line, "through the server: a message with an image")
    check(reply_of(out, line) == want, "through the server: llama-mtmd-cli's reply (%r)" % reply_of(out, line))
    m1 = served_images()
    step("And again?", "through the server: a follow-up")
    m2 = served_images()
    check(m1.get("encoded") == 1 and m2.get("encoded") == 1 and m2.get("prefix", 0) - m1.get("prefix", 0) == 1,
          "through the server: the follow-up resends the image, reused with the prefix (%r -> %r)" % (m1, m2))
except (pexpect.TIMEOUT, pexpect.EOF):
    check(False, "through the server: the chat starts", repr(c.before))
c.sendline("/bye")
try:
    c.expect(pexpect.EOF, timeout=30)
except pexpect.TIMEOUT:
    c.terminate(force=True)
c.close()
rc, _ = srv.stop()
check(rc == 0, "the server exits 0")
shutil.rmtree(tmp, ignore_errors=True)
finish()
