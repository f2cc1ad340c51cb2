#!/usr/bin/env python3
"""mistral3_malformed: a mistral3 (Ministral 3) file with a bad YaRN or query-temperature value,
or a piece Anvil does not run yet, is refused with one line naming the problem (never a crash or
a silent wrong answer): a negative or NaN attention.temperature_scale, the same under Ollama's
key rope.scaling_beta, a negative yarn_log_multiplier, an infinite yarn_beta_fast, a zero YaRN
original context (the temperature's floor), FFN biases. Each case is the good synthetic file
(tools/make_test_model.py --family mistral3) rewritten with gguf-py, one thing changed.
Also: `anvil show` of the good file names the chat format ministral3 and lists the capabilities
completion, tools and thinking (its template's default system prompt asks for [THINK]).

  mistral3_malformed.py --anvil build/anvil --gen tools/make_test_model.py --dir DIR
"""
import argparse
import os
import subprocess
import sys

import gguf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from gguf_rewrite import check_refusals  # noqa: E402

ARCH = "mistral3"
# (case name, edit, text the one error line must contain)
CASES = [
    ("temp-negative", ("setf32", ARCH + ".attention.temperature_scale", -0.5),
     "mistral3.attention.temperature_scale = -0.5 is invalid (must be >= 0)"),
    ("temp-nan", ("setf32", ARCH + ".attention.temperature_scale", float("nan")),
     "mistral3.attention.temperature_scale = nan is invalid (must be a finite number)"),
    ("log-mul-negative", ("setf32", ARCH + ".rope.scaling.yarn_log_multiplier", -1.0),
     "mistral3.rope.scaling.yarn_log_multiplier = -1 is invalid (must be a finite number >= 0)"),
    ("beta-fast-inf", ("setf32", ARCH + ".rope.scaling.yarn_beta_fast", float("inf")),
     "mistral3.rope.scaling.yarn_beta_fast = inf is invalid (must be a finite number)"),
    ("orig-ctx-0", ("setu32", ARCH + ".rope.scaling.original_context_length", 0),
     "original_context_length = 0 is invalid"),
    ("ffn-bias", ("addvec", "blk.1.ffn_up.bias", 352), "tensor 'blk.1.ffn_up.bias' is not supported for mistral3"),
]
OLLAMA_CASES = [
    ("ollama-temp-negative", ("setf32", ARCH + ".rope.scaling_beta", -0.1),
     "mistral3.rope.scaling_beta = -0.1 is invalid (must be >= 0)"),
    ("ollama-mscale-all-dim-negative", ("setf32", ARCH + ".rope.scaling.mscale_all_dim", -2.0),
     "mistral3.rope.scaling.mscale_all_dim = -2 is invalid (must be a finite number >= 0)"),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--anvil", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--dir", required=True)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    bad = 0
    for variant, cases in (("llamacpp", CASES), ("ollama", OLLAMA_CASES)):
        good = os.path.join(a.dir, "mistral3-good-%s.gguf" % variant)
        subprocess.run([sys.executable, a.gen, "--family", "mistral3", "--preset", "tiny", "--type", "f32", "--out", good]
                       + (["--ollama-keys"] if variant == "ollama" else []), check=True, capture_output=True)
        r = subprocess.run([a.anvil, "show", good], capture_output=True, text=True)
        caps = r.stdout.split("Capabilities")[-1].split()
        ok = r.returncode == 0 and "ministral3" in r.stdout and caps[:3] == ["completion", "tools", "thinking"]
        print("%s show %s: format ministral3, capabilities %s" % ("ok" if ok else "FAIL", variant, caps[:3]))
        bad += not ok
        bad += check_refusals(a.anvil, good, ARCH, "mistral3-" + variant, cases, a.dir)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
