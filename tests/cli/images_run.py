#!/usr/bin/env python3
"""images_run: `anvil run` with image files named in the prompt (Ollama's CLI rules,
tools/cli/cli_images.c), against the text-only tiny model (issue 32):
- one-shot: a prompt naming an existing image ends in one line saying the model does not
  support image input (exit 1, nothing generated); an escaped path with spaces too; a file
  with an image extension that is not an image is one line naming it; a path that does not
  exist stays text and the model answers;
- the interactive chat (pty, pexpect): a line starting with an image path is a prompt, not an
  unknown command, and is refused in one line without being sent; the chat goes on.

  images_run.py ANVIL MODEL.gguf"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
from common import check, finish  # noqa: E402

anvil, model = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
home = tempfile.mkdtemp(prefix="anvil-images-run-")
env = dict(os.environ, HOME=home, ANVIL_MODELS=os.path.join(home, "store"), ANVIL_BACKEND="cpu", TERM="xterm")
for k in ("OLLAMA_MODELS", "OLLAMA_HOST", "ANVIL_HOST"):
    env.pop(k, None)
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64
photo = os.path.join(home, "photo.png")
spaced = os.path.join(home, "my cat (1).jpg")
fake = os.path.join(home, "notes.png")
for path, data in ((photo, PNG), (spaced, b"\xff\xd8\xff" + b"\0" * 64), (fake, b"not an image")):
    with open(path, "wb") as f:
        f.write(data)
TEXT_ONLY = "does not support image input"


def run(prompt):
    return subprocess.run([anvil, "run", "--local", model, prompt, "--num-predict", "2"], capture_output=True,
                          text=True, env=env, timeout=120)


def one_line(p):
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    return lines[0] if len(lines) == 1 else None


p = run("describe %s please" % photo)
check(p.returncode == 1 and one_line(p) and TEXT_ONLY in one_line(p) and photo in one_line(p) and not p.stdout,
      "one-shot image: one line, exit 1 (%d %r)" % (p.returncode, p.stderr[-300:]))
esc = spaced.replace(" ", "\\ ").replace("(", "\\(").replace(")", "\\)")
p = run("what is in %s" % esc)
check(p.returncode == 1 and one_line(p) and TEXT_ONLY in one_line(p),
      "one-shot escaped path: refused in one line (%d %r)" % (p.returncode, p.stderr[-300:]))
p = run("look at %s" % fake)
check(p.returncode == 1 and one_line(p) and fake in one_line(p) and "not a JPEG" in one_line(p),
      "one-shot non-image: one line naming it (%d %r)" % (p.returncode, p.stderr[-300:]))
p = run("is %s/none.png there" % home)
check(p.returncode == 0 and TEXT_ONLY not in p.stderr, "missing file: stays text, answered (%d %r)"
      % (p.returncode, p.stderr[-300:]))

try:
    import pexpect
except ImportError:
    print("SKIP: python pexpect is not installed (tools/install-deps.sh installs it)")
    finish()
c = pexpect.spawn(anvil, ["run", "--local", model], env=env, encoding="utf-8", codec_errors="replace", timeout=60,
                  dimensions=(50, 200))
try:
    c.expect(">>> ")
    c.sendline("%s what is it" % photo)
    c.expect(">>> ")
    out = c.before
    check(TEXT_ONLY in out and "Unknown command" not in out, "chat: an image path line is refused in one line (%r)"
          % out[-300:])
    c.sendline("/foo")
    c.expect(">>> ")
    check("Unknown command '/foo'" in c.before, "chat: other unknown commands still answered")
    c.sendline("/bye")
    c.expect(pexpect.EOF, timeout=30)
except (pexpect.TIMEOUT, pexpect.EOF) as e:
    check(False, "chat: %s; output ended with %r" % (type(e).__name__, (c.before or "")[-500:]))
c.close()
check(c.exitstatus == 0, "chat exits 0 (%s)" % c.exitstatus)
finish()
