#!/usr/bin/env python3
"""gemma4_malformed: a gemma4 file with a missing, mis-shaped or inconsistent piece is refused with
one line naming the problem (never a crash, a hang or a silent wrong answer): the sliding layers'
head size or pattern missing, invalid rotated dims, shared-KV layers that leave fewer than 2 layers
with a cache or would reuse a layer of the other kind, a per-layer array of the wrong length, the
per-layer token embeddings missing or mis-shaped, a non-F32 layer output scale, a missing K
weight, a router in a file without experts; for the MoE file (--family gemma4moe: 4 layers, 8
experts) a per-layer expert width array of the wrong length, a missing router scale, a mis-shaped
per-expert scale and a mis-shaped fused gate_up. Each case is the good synthetic file
(tools/make_test_model.py --family gemma4: 6 layers, sliding pattern T F T F T F, 2 shared-KV
layers) rewritten with gguf-py, one thing changed.

  gemma4_malformed.py --anvil build/anvil --gen tools/make_test_model.py --dir DIR
"""
import argparse
import os
import subprocess
import sys

import gguf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from gguf_rewrite import check_refusals  # noqa: E402

A = "gemma4"
U32 = gguf.GGUFValueType.UINT32
# (case name, edit, text the one error line must contain)
CASES = [
    ("no-key-length-swa", ("dropkey", A + ".attention.key_length_swa"), "missing metadata key gemma4.attention.key_length_swa"),
    ("key-length-swa-odd", ("setu32", A + ".attention.key_length_swa", 31),
     "gemma4.attention.key_length_swa = 31 is invalid"),
    ("no-swa-pattern", ("dropkey", A + ".attention.sliding_window_pattern"),
     "missing metadata key gemma4.attention.sliding_window_pattern"),
    ("rot-swa-too-big", ("setu32", A + ".rope.dimension_count_swa", 48), "gemma4.rope.dimension_count_swa = 48 is invalid"),
    ("shared-all", ("setu32", A + ".attention.shared_kv_layers", 5),
     "gemma4.attention.shared_kv_layers = 5 is invalid (at least 2 layers must keep their own KV cache)"),
    ("shared-wrong-kind", ("setu32", A + ".attention.shared_kv_layers", 3), "layer 3 shares the KV cache of layer 2, which is of another kind"),
    ("ff-array-short", ("setarr", A + ".feed_forward_length", [352] * 5, U32),
     "gemma4.feed_forward_length has 5 entries, expected one per layer (6)"),
    ("kv-heads-not-divisor", ("setarr", A + ".attention.head_count_kv", [3, 1, 3, 1, 3, 1], U32),
     "gemma4.attention.head_count = 4 is not a multiple of gemma4.attention.head_count_kv = 3"),
    ("no-per-layer-embd", ("drop", "per_layer_token_embd.weight"), "missing tensor 'per_layer_token_embd.weight'"),
    ("per-layer-embd-shape", ("shape", "per_layer_token_embd.weight", (768, 160)),
     "tensor 'per_layer_token_embd.weight' has shape [160, 768, 1, 1], expected [192, 768]"),
    ("out-scale-f16", ("f16", "blk.2.layer_output_scale.weight"), "tensor 'blk.2.layer_output_scale.weight' must be one F32 value"),
    ("no-attn-k", ("drop", "blk.1.attn_k.weight"), "missing tensor 'blk.1.attn_k.weight'"),
    ("moe-router", ("addvec", "blk.0.ffn_gate_inp.weight", 128), "tensor 'blk.0.ffn_gate_inp.weight' is there but gemma4.expert_count is missing or 0"),
]

MOE_CASES = [
    ("moe-ff-exp-array-short", ("setarr", A + ".expert_feed_forward_length", [96] * 3, U32),
     "gemma4.expert_feed_forward_length has 3 entries, expected one per layer (4)"),
    ("moe-no-router-scale", ("drop", "blk.1.ffn_gate_inp.scale"), "missing tensor 'blk.1.ffn_gate_inp.scale'"),
    ("moe-expert-scale-shape", ("shape", "blk.2.ffn_down_exps.scale", (6,)), "tensor 'blk.2.ffn_down_exps.scale' must be F32 [8]"),
    ("moe-gate-up-shape", ("shape", "blk.0.ffn_gate_up_exps.weight", (8, 96, 128)),
     "tensor 'blk.0.ffn_gate_up_exps.weight' has shape [128, 96, 8, 1], expected [128, 192, 8]"),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--anvil", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--dir", required=True)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    bad = 0
    for family, cases in (("gemma4", CASES), ("gemma4moe", MOE_CASES)):
        good = os.path.join(a.dir, "%s-good.gguf" % family)
        subprocess.run([sys.executable, a.gen, "--family", family, "--preset", "tiny", "--type", "f32", "--out", good],
                       check=True, capture_output=True)
        bad += check_refusals(a.anvil, good, A, family, cases, a.dir)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
