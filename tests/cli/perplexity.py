#!/usr/bin/env python3
"""`anvil perplexity` on a synthetic llama: perplexity over a text file is finite and
sensible, and --kl-ref against llama.cpp's golden dump of the same model reports a
KL divergence at the F32 noise level with every top-1 agreeing.

usage: perplexity.py ANVIL MODELS_DIR GOLDEN_DIR CORPUS WORKDIR
"""
import gzip
import json
import os
import re
import subprocess
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from checks import check, finish  # noqa: E402


anvil, models, golden_dir, corpus, work = sys.argv[1:6]
os.makedirs(work, exist_ok=True)
model = os.path.join(models, "llama-tiny-f32.gguf")


p = subprocess.run([anvil, "perplexity", model, corpus, "--ctx", "64", "-t", "2"], capture_output=True, text=True, timeout=600)
check(p.returncode == 0, "perplexity exits 0", p.stderr)
m = re.search(r"perplexity: ([0-9.]+) \+/- ([0-9.]+) over (\d+) tokens in (\d+) chunks of 64", p.stdout)
check(m is not None, "perplexity line printed", p.stdout[-500:])
if m:
    ppl = float(m.group(1))
    meta = json.load(gzip.open(os.path.join(golden_dir, "llama-f32.json.gz")))
    n_vocab = meta["n_vocab"]
    # random weights with sharp distributions: far worse than chance on real text, but finite
    check(1.0 < ppl < 1e9, f"perplexity {ppl} (n_vocab {n_vocab}) is finite and > 1")
    check(int(m.group(3)) == int(m.group(4)) * 31, "scores the second half of every chunk (31 of 64)")

ref = os.path.join(work, "llama-f32.json")
with open(ref, "w") as f:
    json.dump(json.load(gzip.open(os.path.join(golden_dir, "llama-f32.json.gz"))), f)
p = subprocess.run([anvil, "perplexity", model, "--kl-ref", ref, "--kv-type", "f32"], capture_output=True, text=True, timeout=600)
check(p.returncode == 0, "--kl-ref exits 0", p.stderr)
m = re.search(r"positions (\d+)\s+mean KL ([0-9.e+-]+)\s+max KL ([0-9.e+-]+)\s+top-1 agreement (\d+)/(\d+)", p.stdout)
check(m is not None, "--kl-ref summary printed", p.stdout[-500:])
if m:
    print(f"     llama-tiny-f32 vs llama.cpp: mean KL {m.group(2)}, max KL {m.group(3)}, top-1 {m.group(4)}/{m.group(5)}")
    check(float(m.group(3)) < 1e-5, "max KL vs llama.cpp < 1e-5 (F32 weights, F32 KV; dump has 7 digits)")
    check(m.group(4) == m.group(5), "top-1 agrees at every position")

p = subprocess.run([anvil, "perplexity", model, os.path.join(work, "missing.txt")], capture_output=True, text=True, timeout=60)
check(p.returncode != 0 and "missing.txt" in p.stderr, "missing text file: one-line error", p.stderr)
finish()
