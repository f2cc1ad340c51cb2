#!/usr/bin/env python3
"""conventions: the llama.cpp/Ollama habits the CLI honours. `anvil -v` and `anvil --version`
print the version tools/server/api.h defines (the one /api/version answers) and exit 0; -ngl N above the model's
layer count means all layers (llama.cpp's behaviour: -ngl 99 / 999 is "everything"), a small
-ngl stays as given, and a negative one other than -1 is refused with one line.

usage: conventions.py ANVIL_BINARY MODEL.gguf API_H
"""
import re
import subprocess
import sys

anvil, model, api_h = sys.argv[1], sys.argv[2], sys.argv[3]
fails = 0


def check(ok, what, detail=""):
    global fails
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else "\n     " + str(detail)[-1500:]))
    fails += not ok


want = re.search(r'#define ANVIL_VERSION "([^"]+)"', open(api_h).read())
check(want is not None, "api.h defines ANVIL_VERSION")
for flag in ("-v", "--version"):
    p = subprocess.run([anvil, flag], capture_output=True, text=True, timeout=30)
    check(p.returncode == 0, "anvil %s exits 0" % flag, p.stderr)
    check(want is not None and p.stdout.strip() == "anvil version " + want.group(1),
          "anvil %s prints the project version" % flag, repr(p.stdout))


def run_ngl(n):
    return subprocess.run([anvil, "run", "--local", model, "hello", "--raw", "-n", "1", "--temp", "0",
                           "-ngl", n, "--verbose"], capture_output=True, text=True, timeout=120)


p = run_ngl("1")
layers = re.search(r"layers 0-(\d+)", p.stderr)
check(p.returncode == 0 and layers is not None, "-ngl 1 runs; the placement line names the layers", p.stderr)
n_layers = int(layers.group(1)) + 1 if layers else -1
check("-ngl 1 asks for GPU layers" in p.stderr, "-ngl 1 stays 1", p.stderr)
for n in ("99", "999"):
    p = run_ngl(n)
    check(p.returncode == 0, "-ngl %s is accepted (not refused for exceeding the layer count)" % n, p.stderr)
    check("-ngl %d asks for GPU layers" % n_layers in p.stderr, "-ngl %s means all %d layers" % (n, n_layers), p.stderr)
p = run_ngl("-3")
check(p.returncode != 0 and p.stderr.count("\n") == 1 and "-ngl" in p.stderr, "-ngl -3: one error line", p.stderr)
sys.exit(1 if fails else 0)
