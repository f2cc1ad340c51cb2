#!/usr/bin/env python3
"""A FIFO where a model, a Modelfile or a FROM file is expected: every command fails at
once (no reader waits for a writer that never comes) with one error line saying it is not
a regular file, and a non-zero exit status.

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
    ("create -f FIFO", ["create", "m1", "-f", fifo]),
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
print("%d passed, %d failed" % (len(cases) - failed, failed))
sys.exit(1 if failed else 0)
