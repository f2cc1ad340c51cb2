#!/usr/bin/env python3
"""A FIFO where a model or a FROM file is expected: every command fails at once (no reader
waits for a writer that never comes) with one error line saying it is not a regular file, and
a non-zero exit status. The user's own Modelfile may be a pipe, as with Ollama: `-f -`
(standard input), `-f <(...)` (a /dev/fd pipe) and a named FIFO that a writer feeds all create
the model (issue 28: refused since the FIFO rule).

usage: fifo_input.py ANVIL_BINARY WORKDIR
"""
import os
import subprocess
import sys
import tempfile

anvil, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
tmp = tempfile.mkdtemp(prefix="fifo-", dir=work)
fifo = os.path.join(tmp, "model.gguf")
os.mkfifo(fifo)
modelfile = os.path.join(tmp, "Modelfile")
with open(modelfile, "w") as f:
    f.write("FROM %s\n" % fifo)
env = dict(os.environ, HOME=tmp, ANVIL_MODELS=os.path.join(tmp, "models"), ANVIL_BACKEND="cpu")
env.pop("OLLAMA_MODELS", None)
env.pop("ANVIL_HOST", None)

cases = [
    ("run", ["run", fifo, "hi", "-n", "1", "--local"]),
    ("show", ["show", fifo]),
    ("create FROM FIFO", ["create", "m2", "-f", modelfile]),
]
failed = 0
for label, cmd in cases:
    try:
        p = subprocess.run([anvil] + cmd, capture_output=True, text=True, timeout=20, env=env)
    except subprocess.TimeoutExpired:
        print("FAIL %-18s hung on the FIFO (killed after 20 s)" % label)
        failed += 1
        continue
    lines = [l for l in p.stderr.splitlines() if l.strip() and not l.startswith(("parsing", "gathering"))]
    ok = p.returncode > 0 and len(lines) == 1 and lines[0].startswith("anvil: ") and "not a regular file" in lines[0]
    print(("ok  " if ok else "FAIL") + " %-18s exit %d: %s" % (label, p.returncode, lines[0] if lines else "(no message)"))
    if not ok:
        failed += 1
        print("   stderr was:\n   " + "\n   ".join(p.stderr.splitlines()[:20]))
# The Modelfile through a pipe: FROM a real model (relative to the current directory)
import shutil
import threading
model = os.path.join(tmp, "real.gguf")
subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                "make_test_model.py"), "--family", "llama", "--preset", "tiny", "--type", "q8_0", "--out", model],
               check=True, stdout=subprocess.DEVNULL)
text = b"FROM real.gguf\nPARAMETER temperature 0.3\n"
piped = []
r, w = os.pipe()                       # what a shell's <(...) hands over: /dev/fd/N
os.write(w, text)
os.close(w)
piped.append(("create -f <(...)", ["create", "p1", "-f", "/dev/fd/%d" % r], None, (r,)))
piped.append(("create -f -", ["create", "p2", "-f", "-"], text, ()))
fifo_mf = os.path.join(tmp, "Modelfile.fifo")
os.mkfifo(fifo_mf)
feeder = threading.Thread(target=lambda: open(fifo_mf, "wb").write(text), daemon=True)
feeder.start()
piped.append(("create -f FIFO", ["create", "p3", "-f", fifo_mf], None, ()))
for label, cmd, stdin, fds in piped:
    try:
        p = subprocess.run([anvil] + cmd, input=stdin, capture_output=True, timeout=60, env=env, cwd=tmp, pass_fds=fds)
        ok = p.returncode == 0 and b"success" in p.stdout + p.stderr
        msg = (p.stderr.decode(errors="replace").strip().splitlines() or ["(no message)"])[-1]
    except subprocess.TimeoutExpired:
        ok, msg = False, "hung (killed after 60 s)"
    print(("ok  " if ok else "FAIL") + " %-18s %s" % (label, msg))
    failed += not ok
os.close(r)
ls = subprocess.run([anvil, "ls"], capture_output=True, text=True, env=env).stdout
ok = all(n in ls for n in ("p1:latest", "p2:latest", "p3:latest"))
print(("ok  " if ok else "FAIL") + " the piped Modelfiles' models are listed")
failed += not ok
shutil.rmtree(tmp, ignore_errors=True)
cases += piped + [None]
print("%d passed, %d failed" % (len(cases) - failed, failed))
sys.exit(1 if failed else 0)
