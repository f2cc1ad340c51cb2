#!/usr/bin/env python3
"""qwen35_malformed: a qwen35 (Qwen3.5 / 3.6 dense) file with missing or inconsistent ssm
metadata, a missing or mis-shaped recurrent tensor, a non-F32 conv kernel, no rope sections or
no layer left after the MTP layers is refused with one line naming the problem (never a crash
or a silent wrong answer). Each case is the good synthetic file (tools/make_test_model.py
--family qwen35) rewritten with gguf-py, one thing changed; the good file and a plain rewrite
load.

  qwen35_malformed.py --anvil build/anvil --gen tools/make_test_model.py --dir DIR
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from gguf_rewrite import check_refusals  # noqa: E402
import gguf  # noqa: E402

ARCH = "qwen35"
# (case name, edit, text the one error line must contain)
CASES = [
    ("no-state-size", ("dropkey", ARCH + ".ssm.state_size"), "missing metadata key qwen35.ssm.state_size"),
    ("v-heads-grouped", ("addkey", ARCH + ".ssm.v_head_reordered", False, gguf.GGUFValueType.BOOL),
     "metadata qwen35.ssm.v_head_reordered is not true"),
    ("inner-size", ("setu32", ARCH + ".ssm.inner_size", 100), "inconsistent ssm sizes: qwen35.ssm.inner_size 100"),
    ("group-count", ("setu32", ARCH + ".ssm.group_count", 3), "inconsistent ssm sizes: qwen35.ssm.time_step_rank (value heads) 4"),
    ("conv-kernel-1", ("setu32", ARCH + ".ssm.conv_kernel", 1), "qwen35.ssm.conv_kernel = 1 is invalid"),
    ("nextn-all", ("setu32", ARCH + ".nextn_predict_layers", 6), "nextn_predict_layers = 6 leaves no layers"),
    ("no-sections", ("dropkey", ARCH + ".rope.dimension_sections"), "missing metadata key qwen35.rope.dimension_sections"),
    ("no-ssm-a", ("drop", "blk.0.ssm_a"), "missing tensor 'blk.0.ssm_a'"),
    ("no-attn-q", ("drop", "blk.3.attn_q.weight"), "missing tensor 'blk.3.attn_q.weight'"),
    ("conv-shape", ("shape", "blk.1.ssm_conv1d.weight", (256, 3)), "tensor 'blk.1.ssm_conv1d.weight' has shape [3, 256, 1, 1], expected [4, 256]"),
    ("conv-f16", ("f16", "blk.2.ssm_conv1d.weight"), "tensor 'blk.2.ssm_conv1d.weight' must be F32"),
    ("alpha-shape", ("shape", "blk.4.ssm_alpha.weight", (5, 128)), "tensor 'blk.4.ssm_alpha.weight' has shape [128, 5, 1, 1], expected [128, 4]"),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--anvil", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--dir", required=True)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    bad = 0
    good = os.path.join(a.dir, "qwen35-good.gguf")
    subprocess.run([sys.executable, a.gen, "--family", "qwen35", "--preset", "tiny", "--type", "f32", "--out", good],
                   check=True, capture_output=True)
    bad += check_refusals(a.anvil, good, ARCH, "qwen35", CASES, a.dir)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
