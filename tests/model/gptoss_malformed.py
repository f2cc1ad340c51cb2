#!/usr/bin/env python3
"""gptoss_malformed: a gpt-oss file with a gpt-oss piece missing or mis-shaped is refused with one
line naming the problem (never a crash): no attention sinks, sinks of the wrong length, no output
bias, an expert bias of the wrong shape, an expert bias that is not F32, no sliding window, a zero
YaRN original context, a sliding-window pattern array of strings or of more than 512 layers. Each case is the good synthetic file (tools/make_test_model.py --family
gptoss) rewritten with gguf-py, one thing changed.

  gptoss_malformed.py --anvil build/anvil --gen tools/make_test_model.py --dir DIR
"""
import argparse
import os
import subprocess
import sys

import gguf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from gguf_rewrite import rewrite  # noqa: E402

ARCH = "gpt-oss"
# (case name, edit, text the one error line must contain)
CASES = [
    ("no-sinks", ("drop", "blk.1.attn_sinks.weight"), "missing tensor 'blk.1.attn_sinks.weight'"),
    ("sinks-short", ("shape", "blk.0.attn_sinks.weight", (7,)), "'blk.0.attn_sinks.weight' has shape [7, 1, 1, 1], expected [8, 1]"),
    ("no-out-bias", ("drop", "blk.2.attn_output.bias"), "missing tensor 'blk.2.attn_output.bias'"),
    ("no-q-bias", ("drop", "blk.0.attn_q.bias"), "missing tensor 'blk.0.attn_q.bias'"),
    ("exp-bias-shape", ("shape", "blk.3.ffn_up_exps.bias", (5, 96)), "tensor 'blk.3.ffn_up_exps.bias' is f32 [96, 5, 1, 1], expected f32 [96, 6]"),
    ("exp-bias-f16", ("f16", "blk.0.ffn_down_exps.bias"), "tensor 'blk.0.ffn_down_exps.bias' is f16"),
    ("no-router-bias", ("drop", "blk.1.ffn_gate_inp.bias"), "missing tensor 'blk.1.ffn_gate_inp.bias'"),
    ("no-swa", ("dropkey", ARCH + ".attention.sliding_window"), "missing metadata key gpt-oss.attention.sliding_window"),
    ("yarn-orig-0", ("setu32", ARCH + ".rope.scaling.original_context_length", 0), "original_context_length = 0 is invalid"),
    # sliding_window_pattern's per-layer form (model.c model_read_swa_pattern, shared with gemma3)
    ("swa-pattern-strings", ("setarr", ARCH + ".attention.sliding_window_pattern", ["a", "b"], gguf.GGUFValueType.STRING),
     "sliding_window_pattern must be an integer or an array of bools"),
    ("swa-pattern-long", ("setarr", ARCH + ".attention.sliding_window_pattern", [True] * 600, gguf.GGUFValueType.BOOL),
     "sliding_window_pattern has 600 entries (at most 512)"),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--anvil", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--dir", required=True)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    good = os.path.join(a.dir, "gptoss-good.gguf")
    subprocess.run([sys.executable, a.gen, "--family", "gptoss", "--preset", "tiny", "--type", "mxfp4", "--n-layer", "4",
                    "--out", good], check=True, capture_output=True)
    bad = 0
    for case, edit, want in [("good", ("none", ""), None)] + CASES:
        path = good if case == "good" else os.path.join(a.dir, "bad-gptoss-%s.gguf" % case)
        if case != "good":
            rewrite(good, path, ARCH, edit)
        r = subprocess.run([a.anvil, "eval", path, "--tokens", "1,2", "--dump", os.path.join(a.dir, "x.json")],
                           capture_output=True, text=True, env=dict(os.environ, ANVIL_DEVICE="cpu"))
        lines = [ln for ln in r.stderr.splitlines() if ln.strip() and "vulkan0" not in ln]
        if want is None:  # the unmodified file loads (the rewrite itself is not what breaks the others)
            ok = r.returncode == 0
        else:
            ok = r.returncode not in (0,) and r.returncode < 128 and len(lines) == 1 and want in lines[0]
        print("%s %s: rc %d: %s" % ("ok" if ok else "FAIL", case, r.returncode, " | ".join(lines)))
        bad += not ok
    # a rewrite with nothing changed also loads (so each refusal above is the edit's)
    same = os.path.join(a.dir, "gptoss-rewritten.gguf")
    rewrite(good, same, ARCH, ("none", ""))
    r = subprocess.run([a.anvil, "eval", same, "--tokens", "1,2", "--dump", os.path.join(a.dir, "x.json")],
                       capture_output=True, text=True, env=dict(os.environ, ANVIL_DEVICE="cpu"))
    print("%s rewritten-unchanged: rc %d" % ("ok" if r.returncode == 0 else "FAIL", r.returncode))
    bad += r.returncode != 0
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
