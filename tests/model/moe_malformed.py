#!/usr/bin/env python3
"""moe_malformed: a MoE file whose metadata disagrees with its expert tensors is refused with one
line naming the problem (never a crash): expert_count larger / smaller than the tensors' third
dimension, expert_used_count 0 or above expert_count.

  moe_malformed.py --anvil build/anvil --gen tools/make_test_model.py --dir DIR
"""
import argparse
import os
import subprocess
import sys

CASES = [  # (family, expert_count, expert_used_count, text the error must contain)
    ("qwen3moe", 9, 3, "expected [128, 9]"),
    ("qwen3moe", 7, 3, "expected [128, 7]"),       # the router [n_embd, n_expert] is checked first
    ("qwen2moe", 6, 0, "expert_used_count = 0 is invalid"),
    ("llamamoe", 5, 6, "expert_used_count = 6 is invalid"),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--anvil", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--dir", required=True)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    bad = 0
    for fam, n, used, want in CASES:
        path = os.path.join(a.dir, "bad-%s-%d-%d.gguf" % (fam, n, used))
        subprocess.run([sys.executable, a.gen, "--family", fam, "--preset", "tiny", "--type", "f32",
                        "--bad-expert-meta", str(n), str(used), "--out", path], check=True, capture_output=True)
        r = subprocess.run([a.anvil, "eval", path, "--tokens", "1,2", "--dump", os.path.join(a.dir, "x.json")],
                           capture_output=True, text=True, env=dict(os.environ, ANVIL_DEVICE="cpu"))
        lines = [ln for ln in r.stderr.splitlines() if ln.strip() and "vulkan0" not in ln]
        ok = r.returncode not in (0,) and r.returncode < 128 and len(lines) == 1 and want in lines[0]
        print("%s %s: rc %d: %s" % ("ok" if ok else "FAIL", os.path.basename(path), r.returncode, " | ".join(lines)))
        bad += not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
