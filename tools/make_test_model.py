#!/usr/bin/env python3
"""make_test_model: deterministic random-weight GGUF models for Anvil's tests and benchmarks.

Writes a GGUF file with llama.cpp's exact tensor names and metadata keys for the families
llama (Llama 2/3 layout, optional llama3 rope_freqs), mistral3 (Ministral 3: llama body, YaRN,
query temperature; --ollama-keys for Ollama's key names), qwen2 (QKV biases), qwen3 (QK-norm,
head_dim != n_embd/n_head) and gemma3 (sliding window pattern 6, QK-norm, post-attention and
post-ffw norms, GELU GeGLU, tied output, sqrt(n_embd) embedding scaling, key_length =
2*n_embd/n_head), with a small SPM ("llama") or byte-level BPE ("gpt2") vocabulary.
Weights are seeded per tensor name (numpy PCG64), so a file is a pure function of its args.

  make_test_model.py --family llama --preset tiny --type q4_0 --out m.gguf
  make_test_model.py --family gemma3 --preset tinyk --type q4_K --quantizer anvil --anvil build/anvil --out m.gguf
  make_test_model.py --digest m.gguf          # print the weights digest (name/type/shape/bytes)

Weight types: f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 (numpy, gguf.quants) and q2_K q3_K q4_K
q5_K q6_K, made either by ggml's own reference quantizer (ctypes on the oracle's
libggml-base.so, --quantizer ggml) or by `anvil quantize --pure F32.gguf OUT TYPE`
(--quantizer anvil; --pure = llama-quantize --pure: no Q4_K_M-style mix of types). Both must
give byte-identical tensors; the golden tests check that via --digest.
Every 2-D weight takes the type; norms, biases and rope_freqs stay F32 (as llama.cpp does).
"""
import argparse
import ctypes
import hashlib
import math
import os
import re
import subprocess
import sys
import tempfile
import zlib
from collections import Counter

import numpy as np

try:
    import gguf
    from gguf import GGMLQuantizationType as QT
except ImportError:  # pragma: no cover
    sys.exit("make_test_model: the python package 'gguf' (gguf-py) is required")

NUMPY_TYPES = {"f32": QT.F32, "f16": QT.F16, "bf16": QT.BF16, "q4_0": QT.Q4_0, "q4_1": QT.Q4_1,
               "q5_0": QT.Q5_0, "q5_1": QT.Q5_1, "q8_0": QT.Q8_0, "mxfp4": QT.MXFP4}
K_TYPES = {"q2_K": QT.Q2_K, "q3_K": QT.Q3_K, "q4_K": QT.Q4_K, "q5_K": QT.Q5_K, "q6_K": QT.Q6_K}
MIXES = {"q2_K": "Q2_K", "q3_K": "Q3_K_M", "q4_K": "Q4_K_M", "q5_K": "Q5_K_M", "q6_K": "Q6_K"}   # --mix
FILE_TYPES = {"f32": "ALL_F32", "f16": "MOSTLY_F16", "bf16": "MOSTLY_BF16", "q4_0": "MOSTLY_Q4_0",
              "q4_1": "MOSTLY_Q4_1", "q5_0": "MOSTLY_Q5_0", "q5_1": "MOSTLY_Q5_1",
              "q8_0": "MOSTLY_Q8_0", "mxfp4": "MOSTLY_MXFP4_MOE", "q2_K": "MOSTLY_Q2_K", "q3_K": "MOSTLY_Q3_K_M",
              "q4_K": "MOSTLY_Q4_K_M", "q5_K": "MOSTLY_Q5_K_M", "q6_K": "MOSTLY_Q6_K"}
DEFAULT_GGML_LIB = ("/tmp/llamacpp-oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/"
                    "libggml-base.so")

# ---------------------------------------------------------------------------------------------
# shapes
# ---------------------------------------------------------------------------------------------
# Per family: layers, heads, kv heads, head_dim (None = n_embd/n_head), tied output, vocab kind.
FAMILY = {
    "llama":  dict(n_layer=3, n_head=4, n_head_kv=2, head_dim=None, tied=False, vocab="spm",
                   rope_base=500000.0, eps=1e-5, ctx=4096),
    "qwen2":  dict(n_layer=2, n_head=4, n_head_kv=4, head_dim=None, tied=True, vocab="bpe",
                   rope_base=1000000.0, eps=1e-6, ctx=32768),
    "qwen3":  dict(n_layer=3, n_head=8, n_head_kv=2, head_dim=32, tied=False, vocab="bpe",
                   rope_base=1000000.0, eps=1e-6, ctx=40960),
    # qwen-vl text archs (conversion/qwen3vl.py Qwen3VLTextModel, conversion/base.py's mrope sections
    # padded to 4): qwen3vl = the qwen3 body + IMROPE sections (as Qwen3-VL's [24, 20, 20], two pairs
    # fall in the 4th section) + n_deepstack_layers; qwen2vl = the qwen2 body + MROPE sections
    "qwen3vl": dict(n_layer=3, n_head=8, n_head_kv=2, head_dim=32, tied=False, vocab="bpe",
                    rope_base=1000000.0, eps=1e-6, ctx=40960, rope_sections=[8, 4, 4, 0], n_deepstack=2),
    "qwen2vl": dict(n_layer=2, n_head=4, n_head_kv=4, head_dim=None, tied=True, vocab="bpe",
                    rope_base=1000000.0, eps=1e-6, ctx=32768, rope_sections=[2, 3, 3, 0]),
    "gemma3": dict(n_layer=7, n_head=4, n_head_kv=1, head_dim="2x", tied=True, vocab="spm",
                   rope_base=1000000.0, eps=1e-6, ctx=32768, swa=8),
    # Mixture of experts: the base family's attention, experts as 3-D [n_expert][n_ff_exp][n_embd]
    # tensors, an F32 router (llama-quantize keeps ffn_gate_inp in F32). qwen2moe adds a shared
    # expert with a sigmoid gate; llamamoe is mixtral's layout (GGUF arch "llama").
    "qwen3moe": dict(n_layer=3, n_head=8, n_head_kv=2, head_dim=32, tied=False, vocab="bpe",
                     rope_base=1000000.0, eps=1e-6, ctx=40960, n_expert=8, n_expert_used=3),
    "qwen2moe": dict(n_layer=2, n_head=4, n_head_kv=4, head_dim=None, tied=False, vocab="bpe",
                     rope_base=1000000.0, eps=1e-6, ctx=32768, n_expert=6, n_expert_used=2, shexp=True),
    "llamamoe": dict(n_layer=3, n_head=4, n_head_kv=2, head_dim=None, tied=False, vocab="spm",
                     rope_base=500000.0, eps=1e-5, ctx=4096, n_expert=5, n_expert_used=2),
    # gpt-oss (GGUF arch "gpt-oss"): q/k/v/o biases, attention sinks, sliding window on even
    # layers, YaRN (factor 32 over 4096 as the real files), router and expert biases, the
    # harmony special tokens. --type mxfp4 makes the experts MXFP4 (as llama.cpp's gpt-oss
    # files have them) and keeps every other weight F32.
    "gptoss": dict(n_layer=4, n_head=8, n_head_kv=2, head_dim=32, tied=False, vocab="bpe",
                   rope_base=150000.0, eps=1e-5, ctx=131072, n_expert=6, n_expert_used=2, swa=8,
                   yarn_factor=32.0, yarn_orig_ctx=4096),
    # Ministral 3 (GGUF arch "mistral3", llama.cpp's conversion/mistral3.py): the llama body with
    # head_dim != n_embd/n_head, YaRN (factor 16 as the real files, the betas and log_mul keys)
    # and the llama 4-style query temperature attention.temperature_scale, whose floor is the
    # YaRN original context: 16 here (16384 in the real files) so that it changes within a
    # 64-token test. Non-default betas so that reading them matters. Mistral's special tokens.
    "mistral3": dict(n_layer=3, n_head=4, n_head_kv=2, head_dim="2x", tied=False, vocab="bpe",
                     rope_base=1000000.0, eps=1e-5, ctx=256, yarn_factor=16.0, yarn_orig_ctx=16,
                     yarn_beta_fast=4.0, yarn_beta_slow=0.25, yarn_log_mul=1.0, temp_scale=0.1),
    # mistral3 with experts (llama.cpp's mistral3 MoE branch: softmax router, top-k weights
    # renormalised; the expert width is feed_forward_length, as for llama MoE)
    "mistral3moe": dict(n_layer=3, n_head=4, n_head_kv=2, head_dim="2x", tied=False, vocab="bpe",
                        rope_base=1000000.0, eps=1e-5, ctx=256, yarn_factor=16.0, yarn_orig_ctx=16,
                        yarn_beta_fast=4.0, yarn_beta_slow=0.25, yarn_log_mul=1.0, temp_scale=0.1,
                        n_expert=5, n_expert_used=2),
    # Qwen3.5 dense (GGUF arch "qwen35", llama.cpp's conversion/qwen.py Qwen3_5TextModel): gated
    # DeltaNet layers (fused qkv, z gate, conv1d kernel 4 kept F32, dt bias, a = -exp(A_log), beta
    # and alpha projections, gated norm, ssm_out) with a gated full-attention layer every 4th
    # (attn_q twice as wide: query + sigmoid output gate per head, q/k norms, IMROPE sections
    # [3, 3, 2, 0] over the 16 rotated dims = partial_rotary_factor 0.25 of head_dim 64), the FFN
    # after post_attention_norm, and one MTP (nextn) layer at the end that inference skips.
    # 4 value heads over 2 key heads (the head tiling matters).
    "qwen35": dict(n_layer=5, n_head=4, n_head_kv=2, head_dim=64, tied=False, vocab="bpe",
                   rope_base=10000000.0, eps=1e-6, ctx=262144, ssm_d_conv=4, ssm_d_state=32,
                   ssm_n_k_head=2, ssm_n_v_head=4, full_attn_interval=4, rope_sections=[3, 3, 2, 0], n_nextn=1),
    # Qwen3.5 MoE (GGUF arch "qwen35moe", conversion/qwen.py Qwen3_5MoeTextModel): qwen35's layers
    # with experts (F32 router, softmax, top-k renormalised) and a sigmoid-gated shared expert of
    # width expert_shared_feed_forward_length (= n_ff here), the MTP layer likewise
    "qwen35moe": dict(n_layer=5, n_head=4, n_head_kv=2, head_dim=64, tied=False, vocab="bpe",
                      rope_base=10000000.0, eps=1e-6, ctx=262144, ssm_d_conv=4, ssm_d_state=32,
                      ssm_n_k_head=2, ssm_n_v_head=4, full_attn_interval=4, rope_sections=[3, 3, 2, 0], n_nextn=1,
                      n_expert=6, n_expert_used=2, shexp=True),
    # Gemma 4 (GGUF arch "gemma4", llama.cpp's conversion/gemma.py Gemma4Model): sliding layers
    # with their own head size and kv heads (key_length_swa, a head_count_kv array) and rope base,
    # full layers with proportional rope (rope_freqs: 1 on the first quarter of the pairs, 1e30
    # on the rest), QK-norm and a weightless V-norm, attention scale 1, a layer output scale,
    # final logit softcapping, tied output. gemma4 is E2B-style: per-layer token embeddings
    # (per_layer_token_embd, per_layer_model_proj + proj norm; per layer inp_gate, proj,
    # post_norm), the last shared_kv layers reusing an earlier layer's KV cache (no K/V of their
    # own) with a double-wide FFN (a feed_forward_length array). gemma4dense is 31B-style: no
    # per-layer embeddings, no shared KV, and V = K on the full layers (no attn_v: HF's
    # attention_k_eq_v). The vocabulary is gemma3's synthetic SPM one (the real gemma4 BPE
    # vocabulary has 262144 tokens: too big for a committed golden).
    "gemma4": dict(n_layer=6, n_head=4, n_head_kv=2, head_dim=32, tied=True, vocab="spm",
                   rope_base=1000000.0, eps=1e-6, ctx=131072, swa=8, head_dim_full=64, n_head_kv_full=1,
                   rope_base_swa=10000.0, softcap=30.0, n_embd_per_layer=32, shared_kv=2,
                   swa_layers=[True, False, True, False, True, False], partial_rotary_full=0.25),
    "gemma4dense": dict(n_layer=6, n_head=4, n_head_kv=2, head_dim=32, tied=True, vocab="spm",
                        rope_base=1000000.0, eps=1e-6, ctx=262144, swa=8, head_dim_full=64, n_head_kv_full=1,
                        rope_base_swa=10000.0, softcap=30.0, n_embd_per_layer=0, shared_kv=0,
                        swa_layers=[True, True, False, True, True, False], partial_rotary_full=0.25,
                        k_eq_v_full=True),
    # 26B-A4B-style: every layer's FFN is the dense FFN (the "shared expert", norms ffn_norm /
    # post_ffw_norm_1) plus experts (pre_ffw_norm_2 / post_ffw_norm_2) summed before post_ffw_norm;
    # the router reads rms_norm(x) / sqrt(n_embd) * ffn_gate_inp.scale; the experts' gate and up
    # fused in ffn_gate_up_exps (as the converter maps HF's experts.gate_up_proj), a per-expert
    # output scale ffn_down_exps.scale (HF's router.per_expert_scale)
    "gemma4moe": dict(n_layer=4, n_head=4, n_head_kv=2, head_dim=32, tied=True, vocab="spm",
                      rope_base=1000000.0, eps=1e-6, ctx=262144, swa=8, head_dim_full=64, n_head_kv_full=1,
                      rope_base_swa=10000.0, softcap=30.0, n_embd_per_layer=0, shared_kv=0,
                      swa_layers=[True, True, False, True], partial_rotary_full=0.25, k_eq_v_full=True,
                      n_expert=8, n_expert_used=3),
}
# MoE family -> the dense family whose attention and vocabulary it shares; the GGUF arch name.
BASE = {"qwen3moe": "qwen3", "qwen2moe": "qwen2", "llamamoe": "llama", "gptoss": "gptoss", "mistral3moe": "mistral3",
        "qwen35moe": "qwen35"}
GGUF_ARCH = {"llamamoe": "llama", "gptoss": "gpt-oss", "mistral3moe": "mistral3", "gemma4dense": "gemma4",
             "gemma4moe": "gemma4"}
GEMMA4 = ("gemma4", "gemma4dense", "gemma4moe")
# qwen-vl text family -> the dense family whose body and vocabulary it shares (its own GGUF arch)
VL_BASE = {"qwen3vl": "qwen3", "qwen2vl": "qwen2"}
# Mistral's control tokens (tekken / v7+ tokenizers; as user-visible strings in the chat templates)
MISTRAL_SPECIALS = ["<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
                    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
                    "[THINK]", "[/THINK]", "[ARGS]", "[CALL_ID]"]
# harmony (o200k_harmony) special tokens of the gpt-oss vocabulary, in id order
HARMONY_SPECIALS = ["<|startoftext|>", "<|endoftext|>", "<|return|>", "<|constrain|>", "<|channel|>",
                    "<|start|>", "<|end|>", "<|message|>", "<|call|>"]
# tiny: the small test shape; tinyk: the same with every row length a multiple of 256
# (K-quant blocks are 256 wide); 500m, bench91m and 7b: llama-only speed shapes.
PRESETS = {
    "tiny":     dict(n_embd=128, n_ff=352, n_vocab=768),
    "tinyk":    dict(n_embd=256, n_ff=768, n_vocab=768),
    "bench91m": dict(n_embd=1024, n_ff=2816, n_vocab=512, n_layer=8, n_head=16, n_head_kv=4,
                     llama_only=True),
    "500m":     dict(n_embd=2048, n_ff=5632, n_vocab=32000, n_layer=10, n_head=32, n_head_kv=8,
                     llama_only=True),
    # Llama 2 7B's shape (the published GPU decode anchor); --n-layer cuts it for a GPU check.
    # a ~0.5B qwen3moe-style speed shape (16 experts, 4 used, ~0.15B active)
    "moe500m":  dict(n_embd=1024, n_ff=3072, n_vocab=4096, n_layer=12, n_head=16, n_head_kv=4,
                     n_expert=16, n_expert_used=4, n_ff_exp=768, moe_only=True),
    # qwen35 speed shape: Qwen3.5-0.8B's widths (1024 wide, 8 heads of 256, 16 + 16 linear heads of
    # 128, FFN 3584) with 8 layers (6 DeltaNet + 2 attention) and a small vocabulary
    "bench35":  dict(n_embd=1024, n_ff=3584, n_vocab=4096, n_layer=8, n_head=8, n_head_kv=2, head_dim=256,
                     ssm_d_state=128, ssm_n_k_head=16, ssm_n_v_head=16, rope_sections=[11, 11, 10, 0],
                     qwen35_only=True),
    # a ~120M E2B-style gemma4 speed shape: 10 layers (4 sliding + 1 full, twice), the last 5
    # sharing the KV caches of layers 3 and 4, head sizes 128 / 256, per-layer inputs of 128
    "bench4e":  dict(n_embd=1024, n_ff=2816, n_vocab=8192, n_layer=10, n_head=8, n_head_kv=2, head_dim=128,
                     head_dim_full=256, n_head_kv_full=1, shared_kv=5, n_embd_per_layer=128, swa=512,
                     swa_layers=[True, True, True, True, False], gemma4_only=True),
    "7b":       dict(n_embd=4096, n_ff=11008, n_vocab=32000, n_layer=32, n_head=32, n_head_kv=32,
                     llama_only=True),
}


def hparams_for(args):
    fam = dict(FAMILY[args.family])
    pre = dict(PRESETS[args.preset])
    if pre.pop("llama_only", False) and args.family not in ("llama", "mistral3"):   # mistral3: the llama body
        raise SystemExit("make_test_model: preset %s is defined for --family llama (and mistral3) only" % args.preset)
    if pre.pop("qwen35_only", False) and args.family not in ("qwen35", "qwen35moe"):
        raise SystemExit("make_test_model: preset %s is defined for --family qwen35 only" % args.preset)
    if pre.pop("gemma4_only", False) and args.family != "gemma4":
        raise SystemExit("make_test_model: preset %s is defined for --family gemma4 only" % args.preset)
    if pre.pop("moe_only", False) and args.family not in BASE:
        raise SystemExit("make_test_model: preset %s is defined for the MoE families only" % args.preset)
    fam.update(pre)
    if args.vocab:
        fam["vocab"] = args.vocab
    if args.n_vocab:
        fam["n_vocab"] = args.n_vocab
    if args.n_layer:
        fam["n_layer"] = args.n_layer
    if args.swa:
        fam["swa"] = args.swa
    n_embd, n_head = fam["n_embd"], fam["n_head"]
    if fam["head_dim"] is None:
        fam["head_dim"] = n_embd // n_head
    elif fam["head_dim"] == "2x":  # gemma3-270m: head_dim 256 with n_embd 640 / 4 heads
        fam["head_dim"] = 2 * n_embd // n_head
    if args.family in ("qwen3", "qwen3moe") and args.preset == "tinyk":
        fam["head_dim"] = 32
    if "n_expert" in fam:  # expert width: a block multiple below n_ff (256 for tinyk)
        fam.setdefault("n_ff_exp", {"tiny": 96, "tinyk": 256}.get(args.preset, fam["n_ff"] // 4))
        if args.family in ("llamamoe", "gptoss", "mistral3moe"):
            fam["n_ff"] = fam["n_ff_exp"]  # llama MoE, gpt-oss, mistral3: feed_forward_length is the expert width
        if args.n_expert:
            fam["n_expert"] = args.n_expert
        if args.n_expert_used:
            fam["n_expert_used"] = args.n_expert_used
    return fam


# ---------------------------------------------------------------------------------------------
# vocabularies
# ---------------------------------------------------------------------------------------------
CORPUS = """
The quick brown fox jumps over the lazy dog. A small language model reads a sequence of tokens
and predicts the next one. Every layer has attention and a feed forward network; the attention
looks back at the keys and values of earlier positions, and the network mixes the channels.
In the beginning the weights are random, so the predictions are noise, but the arithmetic is the
same as for a trained model. We test the arithmetic: matrix products, normalization, rotary
position embeddings, the softmax over the vocabulary, and the sampling of the next token.
Hello world! How are you today? I am fine, thank you. The weather is nice and the sun is shining.
int main(void) { printf("hello, world\\n"); return 0; }
for (int i = 0; i < n; i++) { sum += a[i] * b[i]; }
def forward(self, x): return self.norm(x + self.attn(x))
import numpy as np; x = np.zeros((4, 4), dtype=np.float32)
Numbers: 0 1 2 3 4 5 6 7 8 9 10 42 100 1000 3.14159 2024
The engine loads a file, maps the tensors into memory and runs the layers one after another.
A cache keeps the keys and values so that each new token costs one pass over the weights.
Quantized weights store a scale per block and small integers for each value in the block.
"""

SPM_SPACE = "\u2581"  # sentencepiece's visible space


def bpe_train(words, n_merges):
    """Greedy BPE over a Counter of tuple-of-symbol words; returns the merge list (a, b)."""
    words = Counter({tuple(w): c for w, c in words.items()})
    merges = []
    while len(merges) < n_merges:
        pairs = Counter()
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        best = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))[0]
        merges.append(best)
        merged = Counter()
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            merged[tuple(out)] += c
        words = merged
    return merges


def extend_merges(tokens, merges, target, rng):
    """Adds random (consistent) merges of existing tokens until `tokens` has `target` entries."""
    known = set(tokens)
    pool = [t for t in tokens if len(t) > 1] or list(tokens)
    while len(tokens) < target:
        a = pool[rng.integers(len(pool))]
        b = pool[rng.integers(len(pool))]
        if a + b in known or len(a + b) > 16:
            continue
        merges.append((a, b))
        tokens.append(a + b)
        known.add(a + b)
        pool.append(a + b)


def spm_vocab(family, n_vocab):
    """SPM vocab: specials, 256 <0xXX> byte tokens, chars and merged word pieces (score = -rank)."""
    if family == "gemma3":
        specials = [("<pad>", 3), ("<eos>", 3), ("<bos>", 3), ("<unk>", 2), ("<mask>", 3),
                    ("<start_of_turn>", 3), ("<end_of_turn>", 3)]
        ids = dict(pad=0, eos=1, bos=2, unk=3)
    else:
        specials = [("<unk>", 2), ("<s>", 3), ("</s>", 3)]
        ids = dict(unk=0, bos=1, eos=2)
    tokens = [s for s, _ in specials]
    types = [t for _, t in specials]
    scores = [-1000.0 if t == 3 else 0.0 for _, t in specials]
    for b in range(256):
        tokens.append("<0x%02X>" % b)
        types.append(6)
        scores.append(0.0)
    words = Counter(SPM_SPACE + w for w in CORPUS.split())
    chars = sorted({ch for w in words for ch in w})
    n_pieces = n_vocab - len(tokens)
    merges = bpe_train(Counter({tuple(w): c for w, c in words.items()}), max(0, n_pieces - len(chars)))
    pieces = [a + b for a, b in merges]
    rng = np.random.default_rng(1234)
    base = chars + pieces
    extend_merges(base, [], n_pieces, rng)
    base = base[:n_pieces]
    # merged pieces get higher scores the earlier they were made; single chars score lowest
    for rank, p in enumerate(base):
        tokens.append(p)
        types.append(1)
        scores.append(-float(rank - len(chars)) if rank >= len(chars) else -float(n_pieces + rank))
    return dict(model="llama", pre="default", tokens=tokens, types=types, scores=scores,
                merges=None, ids=ids)


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable unicode map."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def bpe_vocab(family, n_vocab, agent=False, harmony=False):
    """Byte-level BPE vocab (tokenizer.ggml.model "gpt2") with the family's special tokens.
    agent: as a real Qwen 3 vocab, <think>, </think>, <tool_call>, </tool_call> are
    user-defined tokens (printed in the reply text, where the reply parser sees them)."""
    if family == "llama":
        specials, pre = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"], "llama-bpe"
    elif family == "gptoss":  # the real files say pre "gpt-4o" (o200k), which Anvil does not split yet
        specials, pre = list(HARMONY_SPECIALS), "qwen2"
    elif family == "mistral3":  # the real files say pre "tekken" (being added to Anvil separately)
        specials, pre = list(MISTRAL_SPECIALS), "llama-bpe"
    else:
        specials, pre = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], "qwen35" if family == "qwen35" else "qwen2"
        if family in ("qwen3", "qwen35"):
            specials += ["<think>", "</think>"] + (["<tool_call>", "</tool_call>"] if agent else [])
            if harmony:  # --chat-template gpt-oss: the harmony markers, control tokens as in gpt-oss's vocab
                specials += ["<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>", "<|return|>",
                             "<|call|>"]
    b2u = bytes_to_unicode()
    tokens = [b2u[b] for b in sorted(b2u, key=lambda b: ord(b2u[b]))]
    words = Counter()
    for w in re.findall(r" ?[A-Za-z]+| ?[0-9]| ?[^\sA-Za-z0-9]+|\s+", CORPUS):
        words[tuple(b2u[b] for b in w.encode("utf-8"))] += 1
    n_regular = n_vocab - len(specials)
    merges = bpe_train(words, n_regular - len(tokens))
    tokens += [a + b for a, b in merges]
    extend_merges(tokens, merges, n_regular, np.random.default_rng(1234))
    types = [1] * len(tokens) + [4 if agent and s.startswith(("<think", "</think", "<tool_call", "</tool_call"))
                                 else 3 for s in specials]
    tokens += specials
    first = n_regular
    if family == "llama":
        ids = dict(bos=first, eos=first + 1, eot=first + 2)
    elif family == "gptoss":  # bos <|startoftext|>, eos <|return|>, pad <|endoftext|>
        ids = dict(bos=first, eos=first + 2, pad=first + 1)
    elif family == "mistral3":
        ids = dict(unk=first, bos=first + 1, eos=first + 2)
    else:
        ids = dict(bos=first, eos=first + 2, pad=first)
    return dict(model="gpt2", pre=pre, tokens=tokens, types=types, scores=None,
                merges=["%s %s" % m for m in merges], ids=ids)


CHAT_TEMPLATES = {
    "gemma3": "{{ bos_token }}{% for message in messages %}<start_of_turn>{{ 'model' if message['role'] == "
              "'assistant' else message['role'] }}\n{{ message['content'] | trim }}<end_of_turn>\n"
              "{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}",
    "chatml": "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content']"
              " + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n'"
              " }}{% endif %}",
    # Qwen 3's tool and thinking markers (abridged: what capability detection reads)
    "qwen3": "{%- if tools %}{{- '<|im_start|>system\\n# Tools\\n<tools>' }}{%- for tool in tools %}{{- tool | tojson }}"
             "{%- endfor %}{{- '</tools><|im_end|>\\n' }}{%- endif %}{%- for message in messages %}"
             "{%- if message.tool_calls %}{{- '<tool_call>' }}{%- endif %}{{- '<|im_start|>' + message.role + '\\n'"
             " + message.content.split('</think>')[-1] + '<|im_end|>\\n' }}{%- endfor %}"
             "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- if enable_thinking is defined and"
             " enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}{%- endif %}",
    # gpt-oss's harmony markers (abridged; Anvil detects the format by <|start|> + <|channel|>): a
    # replay model for harmony parsing (tests/server/agents.py) on the qwen3 shape
    # Llama 3.1's and Mistral Nemo's markers (abridged; Anvil detects the formats by them and renders
    # their tool prompts itself): replay models for those tool parsers (tests/server/agents.py)
    "llama3": "{%- if tools %}{{- 'Environment: ipython' }}{%- endif %}{%- for message in messages %}"
              "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim +"
              " '<|eot_id|>' }}{%- endfor %}{%- if add_generation_prompt %}"
              "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}",
    "mistral-nemo": "{%- for message in messages %}{%- if message['role'] == 'user' %}{%- if tools is not none %}"
                    "{{- \"[AVAILABLE_TOOLS][\" }}{{- \"][/AVAILABLE_TOOLS]\" }}{%- endif %}"
                    "{{- \"[INST]\" + message['content'] + \"[/INST]\" }}{%- elif message.tool_calls is defined %}"
                    "{{- \"[TOOL_CALLS][\" }}{{- \"]\" + eos_token }}{%- else %}{{- message['content'] + eos_token }}"
                    "{%- endif %}{%- endfor %}",
    # Ministral 3 Reasoning's markers (abridged: a default system prompt asking for [THINK], tools
    # as [AVAILABLE_TOOLS], calls as [TOOL_CALLS]name[ARGS]args; Anvil renders the real one itself)
    "ministral3": "{%- set default_system_message = 'Draft your thinking first: [THINK]your thoughts[/THINK] then answer.' %}"
                  "{%- if messages[0]['role'] == 'system' %}{{- '[SYSTEM_PROMPT]' + messages[0]['content'] + "
                  "'[/SYSTEM_PROMPT]' }}{%- else %}{{- '[SYSTEM_PROMPT]' + default_system_message + '[/SYSTEM_PROMPT]' }}"
                  "{%- endif %}{%- if tools %}{{- '[AVAILABLE_TOOLS]' + (tools | tojson) + '[/AVAILABLE_TOOLS]' }}{%- endif %}"
                  "{%- for message in messages %}{%- if message['role'] == 'user' %}{{- '[INST]' + message['content'] + "
                  "'[/INST]' }}{%- elif message['role'] == 'assistant' %}{{- message['content'] }}{%- for tool in "
                  "message.tool_calls or [] %}{{- '[TOOL_CALLS]' + tool['function']['name'] + '[ARGS]' + "
                  "(tool['function']['arguments'] | tojson) }}{%- endfor %}{{- eos_token }}{%- elif message['role'] == 'tool' %}"
                  "{{- '[TOOL_RESULTS]' + message['content'] + '[/TOOL_RESULTS]' }}{%- endif %}{%- endfor %}",
    "gpt-oss": "{%- for message in messages %}{{- '<|start|>' + message.role + '<|channel|>final<|message|>' +"
               " message.content + '<|end|>' }}{%- endfor %}{%- if add_generation_prompt %}<|start|>assistant{%- endif %}",
}


# ---------------------------------------------------------------------------------------------
# weights
# ---------------------------------------------------------------------------------------------
def llama3_rope_factors(head_dim, base, orig_ctx, factor=8.0, low=1.0, high=4.0):
    """Llama 3.1 frequency divisors (the rope_freqs.weight tensor), for `orig_ctx` context."""
    out = []
    for i in range(0, head_dim, 2):
        freq = 1.0 / base ** (i / head_dim)
        wavelen = 2 * math.pi / freq
        if wavelen < orig_ctx / high:
            out.append(1.0)
        elif wavelen > orig_ctx / low:
            out.append(factor)
        else:
            smooth = (orig_ctx / wavelen - low) / (high - low)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def tensor_plan(args, hp):
    """[(name, numpy shape (rows, cols) or (n,), kind, scale)] in llama.cpp's file order."""
    if args.family in GEMMA4:
        return gemma4_plan(hp, getattr(args, "ollama_keys", False))
    moe = args.family in BASE
    fam = VL_BASE.get(args.family, BASE.get(args.family, args.family))
    E, F, V, H, HKV, D = hp["n_embd"], hp["n_ff"], hp["n_vocab"], hp["n_head"], hp["n_head_kv"], hp["head_dim"]
    logit_scale = 3.0 / math.sqrt(E)  # logits ~ N(0, 3^2): clear top-1 margins
    qk = 1.0 if fam in ("qwen3", "gemma3") else 1.5  # sharper attention where q, k are not normed
    # gemma3 (tied, input scaled by sqrt(n_embd)): a small embedding and large post-norms keep the
    # input token from dominating the residual (else every position predicts its own token), and
    # a large output norm restores the logit scale.
    embd_scale = {"gemma3": 0.5 / math.sqrt(E)}.get(fam, logit_scale if hp["tied"] else 1.0)
    post_norm = ("norm:2.5", 0.5)
    out_norm = ("norm:6", 1.0) if fam == "gemma3" else ("norm", 0.2)
    plan = [("token_embd.weight", (V, E), "mat", embd_scale)]
    if fam == "llama" and hp.get("rope_freqs"):
        plan.append(("rope_freqs.weight", (D // 2,), "rope_freqs", 0.0))
    if fam == "qwen35":
        plan = qwen35_tensor_plan(hp, plan, logit_scale)
        if getattr(args, "ollama_keys", False):   # Ollama's files carry the vision tower (v.*, mm.*): a token of it
            plan.append(("v.patch_embed.weight", (32, 48), "mat", 0.1))
            plan.append(("v.blk.0.attn_qkv.weight", (96, 32), "mat", 0.1))
            plan.append(("mm.0.weight", (E, 32), "mat", 0.1))
        return plan
    for i in range(hp["n_layer"]):
        p = "blk.%d." % i
        plan.append((p + "attn_norm.weight", (E,), "norm", 0.2))
        plan.append((p + "attn_q.weight", (H * D, E), "mat", qk / math.sqrt(E)))
        plan.append((p + "attn_k.weight", (HKV * D, E), "mat", qk / math.sqrt(E)))
        plan.append((p + "attn_v.weight", (HKV * D, E), "mat", 1.0 / math.sqrt(E)))
        if fam in ("qwen2", "gptoss"):
            plan.append((p + "attn_q.bias", (H * D,), "bias", 0.5))
            plan.append((p + "attn_k.bias", (HKV * D,), "bias", 0.5))
            plan.append((p + "attn_v.bias", (HKV * D,), "bias", 0.5))
        if fam in ("qwen3", "gemma3"):
            plan.append((p + "attn_q_norm.weight", (D,), "qknorm", 0.2))
            plan.append((p + "attn_k_norm.weight", (D,), "qknorm", 0.2))
        plan.append((p + "attn_output.weight", (E, H * D), "mat", 1.0 / math.sqrt(H * D)))
        if fam == "gptoss":
            X, FE = hp["n_expert"], hp["n_ff_exp"]
            plan.append((p + "attn_output.bias", (E,), "bias", 0.2))
            plan.append((p + "attn_sinks.weight", (H,), "bias", 1.5))
            plan.append((p + "post_attention_norm.weight", (E,), "norm", 0.2))
            plan.append((p + "ffn_gate_inp.weight", (X, E), "router", 2.0 / math.sqrt(E)))
            plan.append((p + "ffn_gate_inp.bias", (X,), "bias", 0.5))
            # gate/up pre-activations of std ~1.5 (the SWIGLU_OAI clamp at 7 is tested by test_gptoss_ops)
            plan.append((p + "ffn_gate_exps.weight", (X, FE, E), "mat", 1.5 / math.sqrt(E)))
            plan.append((p + "ffn_gate_exps.bias", (X, FE), "bias2d", 0.5))
            plan.append((p + "ffn_down_exps.weight", (X, E, FE), "mat", 0.3 / math.sqrt(FE)))
            plan.append((p + "ffn_down_exps.bias", (X, E), "bias2d", 0.2))
            plan.append((p + "ffn_up_exps.weight", (X, FE, E), "mat", 1.5 / math.sqrt(E)))
            plan.append((p + "ffn_up_exps.bias", (X, FE), "bias2d", 0.5))
            continue
        if fam == "gemma3":
            plan.append((p + "post_attention_norm.weight", (E,)) + post_norm)
        plan.append((p + "ffn_norm.weight", (E,), "norm", 0.2))
        if moe:
            X, FE = hp["n_expert"], hp["n_ff_exp"]
            plan.append((p + "ffn_gate_inp.weight", (X, E), "router", 2.0 / math.sqrt(E)))
            plan.append((p + "ffn_gate_exps.weight", (X, FE, E), "mat", 1.0 / math.sqrt(E)))
            plan.append((p + "ffn_down_exps.weight", (X, E, FE), "mat", 1.0 / math.sqrt(FE)))
            plan.append((p + "ffn_up_exps.weight", (X, FE, E), "mat", 1.0 / math.sqrt(E)))
            if hp.get("shexp"):
                plan.append((p + "ffn_gate_inp_shexp.weight", (E,), "bias", 1.0 / math.sqrt(E)))
                plan.append((p + "ffn_gate_shexp.weight", (F, E), "mat", 1.0 / math.sqrt(E)))
                plan.append((p + "ffn_down_shexp.weight", (E, F), "mat", 1.0 / math.sqrt(F)))
                plan.append((p + "ffn_up_shexp.weight", (F, E), "mat", 1.0 / math.sqrt(E)))
            continue
        plan.append((p + "ffn_gate.weight", (F, E), "mat", 1.0 / math.sqrt(E)))
        plan.append((p + "ffn_up.weight", (F, E), "mat", 1.0 / math.sqrt(E)))
        plan.append((p + "ffn_down.weight", (E, F), "mat", 1.0 / math.sqrt(F)))
        if fam == "gemma3":
            plan.append((p + "post_ffw_norm.weight", (E,)) + post_norm)
    plan.append(("output_norm.weight", (E,)) + out_norm)
    if not hp["tied"]:
        plan.append(("output.weight", (V, E), "mat", logit_scale))
    if fam == "mistral3" and getattr(args, "ollama_keys", False):
        # Ollama's library files carry the Pixtral vision tower and projector in the same GGUF
        # (v.*, mm.*): a token of each, which a text-only loader must leave alone
        plan.append(("v.patch_conv.weight", (32, 48), "mat", 0.1))
        plan.append(("mm.linear_1.weight", (E, 32), "mat", 0.1))
    return plan


def qwen35_is_recurrent(hp, il):
    return (il + 1) % hp["full_attn_interval"] != 0


def qwen35_tensor_plan(hp, plan, logit_scale):
    """qwen35's tensors after token_embd: per layer attn_norm, the DeltaNet or the gated
    attention, post_attention_norm, the FFN; then the MTP layer (nextn) and the output."""
    E, F, V, H, HKV, D = hp["n_embd"], hp["n_ff"], hp["n_vocab"], hp["n_head"], hp["n_head_kv"], hp["head_dim"]
    S, HK, HV = hp["ssm_d_state"], hp["ssm_n_k_head"], hp["ssm_n_v_head"]
    conv_ch = 2 * HK * S + HV * S

    def attention(p):
        plan.append((p + "attn_q.weight", (2 * H * D, E), "mat", 1.0 / math.sqrt(E)))
        plan.append((p + "attn_k.weight", (HKV * D, E), "mat", 1.0 / math.sqrt(E)))
        plan.append((p + "attn_v.weight", (HKV * D, E), "mat", 1.0 / math.sqrt(E)))
        plan.append((p + "attn_output.weight", (E, H * D), "mat", 1.0 / math.sqrt(H * D)))
        plan.append((p + "attn_q_norm.weight", (D,), "qknorm", 0.2))
        plan.append((p + "attn_k_norm.weight", (D,), "qknorm", 0.2))

    def ffn(p):
        plan.append((p + "post_attention_norm.weight", (E,), "norm", 0.2))
        if "n_expert" in hp:   # qwen35moe: experts + the gated shared expert (n_ff wide)
            X, FE = hp["n_expert"], hp["n_ff_exp"]
            plan.append((p + "ffn_gate_inp.weight", (X, E), "router", 2.0 / math.sqrt(E)))
            plan.append((p + "ffn_gate_exps.weight", (X, FE, E), "mat", 1.0 / math.sqrt(E)))
            plan.append((p + "ffn_down_exps.weight", (X, E, FE), "mat", 1.0 / math.sqrt(FE)))
            plan.append((p + "ffn_up_exps.weight", (X, FE, E), "mat", 1.0 / math.sqrt(E)))
            plan.append((p + "ffn_gate_inp_shexp.weight", (E,), "bias", 1.0 / math.sqrt(E)))
            plan.append((p + "ffn_gate_shexp.weight", (F, E), "mat", 1.0 / math.sqrt(E)))
            plan.append((p + "ffn_down_shexp.weight", (E, F), "mat", 1.0 / math.sqrt(F)))
            plan.append((p + "ffn_up_shexp.weight", (F, E), "mat", 1.0 / math.sqrt(E)))
            return
        plan.append((p + "ffn_gate.weight", (F, E), "mat", 1.0 / math.sqrt(E)))
        plan.append((p + "ffn_up.weight", (F, E), "mat", 1.0 / math.sqrt(E)))
        plan.append((p + "ffn_down.weight", (E, F), "mat", 1.0 / math.sqrt(F)))

    for i in range(hp["n_layer"]):
        p = "blk.%d." % i
        plan.append((p + "attn_norm.weight", (E,), "norm", 0.2))
        if qwen35_is_recurrent(hp, i):
            plan.append((p + "attn_qkv.weight", (conv_ch, E), "mat", 1.5 / math.sqrt(E)))
            plan.append((p + "attn_gate.weight", (HV * S, E), "mat", 1.0 / math.sqrt(E)))
            plan.append((p + "ssm_conv1d.weight", (conv_ch, hp["ssm_d_conv"]), "conv", 0.6))
            plan.append((p + "ssm_dt.bias", (HV,), "bias", 0.5))
            plan.append((p + "ssm_a", (HV,), "ssm_a", 0.0))
            plan.append((p + "ssm_beta.weight", (HV, E), "mat", 1.0 / math.sqrt(E)))
            plan.append((p + "ssm_alpha.weight", (HV, E), "mat", 1.0 / math.sqrt(E)))
            plan.append((p + "ssm_norm.weight", (S,), "norm", 0.2))
            plan.append((p + "ssm_out.weight", (E, HV * S), "mat", 1.0 / math.sqrt(HV * S)))
        else:
            attention(p)
        ffn(p)
    for i in range(hp["n_layer"], hp["n_layer"] + hp["n_nextn"]):   # MTP: a full-attention block + nextn
        p = "blk.%d." % i
        plan.append((p + "attn_norm.weight", (E,), "norm", 0.2))
        attention(p)
        ffn(p)
        plan.append((p + "nextn.eh_proj.weight", (E, 2 * E), "mat", 1.0 / math.sqrt(2 * E)))
        plan.append((p + "nextn.enorm.weight", (E,), "norm", 0.2))
        plan.append((p + "nextn.hnorm.weight", (E,), "norm", 0.2))
        plan.append((p + "nextn.shared_head_norm.weight", (E,), "norm", 0.2))
    plan.append(("output_norm.weight", (E,), "norm", 0.2))
    if not hp["tied"]:
        plan.append(("output.weight", (V, E), "mat", logit_scale))
    return plan


def gemma4_layer_shapes(hp):
    """Per layer: (swa, head_dim, n_head_kv, n_ff, has_kv) as llama.cpp's hparams derive them."""
    n = hp["n_layer"]
    swa = (hp["swa_layers"] * n)[:n]
    first_shared = n - hp["shared_kv"]
    out = []
    for i in range(n):
        hd = hp["head_dim"] if swa[i] else hp["head_dim_full"]
        kv = hp["n_head_kv"] if swa[i] else hp["n_head_kv_full"]
        ff = hp["n_ff"] * (2 if hp["shared_kv"] and i >= first_shared else 1)   # use_double_wide_mlp
        out.append((swa[i], hd, kv, ff, i < first_shared))
    return out


def gemma4_plan(hp, ollama=False):
    """gemma4 tensors in the converter's order (norms F32; norm weights are the multiplier: Gemma 4
    has no +1 shift)."""
    E, V, H, P, n = hp["n_embd"], hp["n_vocab"], hp["n_head"], hp["n_embd_per_layer"], hp["n_layer"]
    plan = [("token_embd.weight", (V, E), "mat", 0.5 / math.sqrt(E))]
    if P:
        plan.append(("per_layer_token_embd.weight", (V, n * P), "mat", 0.5))
        plan.append(("per_layer_model_proj.weight", (n * P, E), "mat_f32", 1.0))   # llama-quantize keeps it
        plan.append(("per_layer_proj_norm.weight", (P,), "norm", 0.2))
    plan.append(("rope_freqs.weight", (hp["head_dim_full"] // 2,), "rope_freqs_prop", 0.0))
    for i, (swa, D, HKV, F, has_kv) in enumerate(gemma4_layer_shapes(hp)):
        p = "blk.%d." % i
        plan.append((p + "attn_norm.weight", (E,), "norm", 0.2))
        plan.append((p + "attn_q.weight", (H * D, E), "mat", 1.0 / math.sqrt(E)))
        if has_kv:
            plan.append((p + "attn_k.weight", (HKV * D, E), "mat", 1.0 / math.sqrt(E)))
            if swa or not hp.get("k_eq_v_full"):
                plan.append((p + "attn_v.weight", (HKV * D, E), "mat", 1.0 / math.sqrt(E)))
        plan.append((p + "attn_q_norm.weight", (D,), "norm:0.5", 0.2))
        if has_kv:
            plan.append((p + "attn_k_norm.weight", (D,), "norm:0.5", 0.2))
        plan.append((p + "attn_output.weight", (E, H * D), "mat", 1.0 / math.sqrt(H * D)))
        plan.append((p + "post_attention_norm.weight", (E,), "norm:2.5", 0.5))
        plan.append((p + "layer_output_scale.weight", (1,), "norm:0.8", 0.1))
        plan.append((p + "ffn_norm.weight", (E,), "norm", 0.2))
        plan.append((p + "ffn_gate.weight", (F, E), "mat", 1.0 / math.sqrt(E)))
        plan.append((p + "ffn_up.weight", (F, E), "mat", 1.0 / math.sqrt(E)))
        plan.append((p + "ffn_down.weight", (E, F), "mat", 1.0 / math.sqrt(F)))
        if "n_expert" in hp:
            X, FE = hp["n_expert"], hp["n_ff_exp"]
            plan.append((p + "ffn_gate_inp.weight", (X, E), "router", 2.0))
            plan.append((p + "ffn_gate_inp.scale", (E,), "norm", 0.2))
            plan.append((p + "pre_ffw_norm_2.weight", (E,), "norm", 0.2))
            plan.append((p + "post_ffw_norm_1.weight", (E,), "norm", 0.2))
            plan.append((p + "post_ffw_norm_2.weight", (E,), "norm", 0.2))
            plan.append((p + "ffn_gate_up_exps.weight", (X, 2 * FE, E), "mat", 1.0 / math.sqrt(E)))
            plan.append((p + "ffn_down_exps.weight", (X, E, FE), "mat", 1.0 / math.sqrt(FE)))
            plan.append((p + "ffn_down_exps.scale", (X,), "norm", 0.3))
        plan.append((p + "post_ffw_norm.weight", (E,), "norm:2.5", 0.5))
        if P:
            plan.append((p + "inp_gate.weight", (P, E), "mat", 1.0 / math.sqrt(E)))
            plan.append((p + "proj.weight", (E, P), "mat", 1.0 / math.sqrt(P)))
            plan.append((p + "post_norm.weight", (E,), "norm:2.5", 0.5))
    plan.append(("output_norm.weight", (E,), "norm:6", 1.0))
    if ollama:   # Ollama's library files carry the vision and audio towers in the same GGUF: a token of each
        plan.append(("v.patch_embd.weight", (32, 48), "mat", 0.1))
        plan.append(("v.clamp_data", (32,), "bias", 0.1))
        plan.append(("mm.input_projection.weight", (E, 32), "mat", 0.1))
        plan.append(("a.conv1d.0.weight", (32, 32), "mat", 0.1))
    return plan


def write_gemma4_keys(w, hp, ollama=False):
    """gemma4 metadata as Gemma4Model.set_gguf_parameters leaves it (its overrides of Gemma3Model's
    and TextModel's keys: key_length = the full layers' head size, head_count_kv and
    feed_forward_length as per-layer arrays where they differ)."""
    layers = gemma4_layer_shapes(hp)
    w.add_final_logit_softcapping(hp["softcap"])
    w.add_sliding_window(hp["swa"])
    w.add_shared_kv_layers(hp["shared_kv"])
    w.add_embedding_length_per_layer_input(hp["n_embd_per_layer"])
    w.add_sliding_window_pattern([s for s, _, _, _, _ in layers])
    w.add_key_length(hp["head_dim_full"])
    w.add_value_length(hp["head_dim_full"])
    w.add_key_length_swa(hp["head_dim"])
    w.add_value_length_swa(hp["head_dim"])
    ffs = [f for _, _, _, f, _ in layers]
    w.add_feed_forward_length(ffs if len(set(ffs)) > 1 else ffs[0])
    w.add_head_count_kv([kv for _, _, kv, _, _ in layers])
    w.add_rope_dimension_count(hp["head_dim_full"])
    w.add_rope_dimension_count_swa(hp["head_dim"])
    w.add_rope_freq_base_swa(hp["rope_base_swa"])
    if ollama:   # convert_gemma4.go: the towers' keys (the text keys are llama.cpp's names)
        w.add_uint32("gemma4.vision.block_count", 1)
        w.add_uint32("gemma4.vision.embedding_length", 32)
        w.add_uint32("gemma4.audio.block_count", 1)
        w.add_uint32("gemma4.audio.embedding_length", 32)


def make_values(seed, name, shape, kind, scale, hp):
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    if kind == "rope_freqs_prop":   # gemma4's proportional rope (Gemma4Model.generate_extra_tensors)
        n_rot = int(hp["head_dim_full"] * hp["partial_rotary_full"] / 2)
        return np.array([1.0] * n_rot + [1e30] * (hp["head_dim_full"] // 2 - n_rot), dtype=np.float32)
    if kind == "rope_freqs":
        return llama3_rope_factors(hp["head_dim"], hp["rope_base"], hp["rope_orig_ctx"])
    if kind == "ssm_a":   # the converter's -exp(A_log): per-token decays exp(softplus(.) * a) in ~0.5 .. 0.98
        return -rng.uniform(0.03, 1.0, shape).astype(np.float32)
    x = rng.standard_normal(shape, dtype=np.float32)
    if kind in ("mat", "mat_f32", "bias", "bias2d", "router", "conv"):
        return x * np.float32(scale)
    if kind.startswith("norm"):  # GGUF norm weights are the multiplier itself (gemma's +1 is
        mean = float(kind[5:] or 1.0)  # pre-applied by llama.cpp's converter): mean 1 or "norm:MEAN"
        return np.float32(mean) + np.float32(scale) * x
    if kind == "qknorm":  # ~1.5: sharper attention after QK-norm, as in the real models
        return np.float32(1.5) + np.float32(scale) * x
    raise ValueError(kind)


class GgmlQuantizer:
    """ggml's own quantizer (ggml_quantize_chunk without imatrix = quantize_row_*_ref)."""

    def __init__(self, path):
        if not os.path.exists(path):
            raise SystemExit("make_test_model: %s not found (give --ggml-lib, or --quantizer anvil)" % path)
        self.lib = ctypes.CDLL(path)
        f = self.lib.ggml_quantize_chunk
        f.restype = ctypes.c_size_t
        f.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                      ctypes.c_int64, ctypes.c_void_p]

    def __call__(self, x, qt):
        x = np.ascontiguousarray(x, dtype=np.float32)
        rows, cols = x.shape
        bs, ts = gguf.GGML_QUANT_SIZES[qt]
        out = np.zeros(rows * (cols // bs) * ts, dtype=np.uint8)
        n = self.lib.ggml_quantize_chunk(int(qt), x.ctypes.data, out.ctypes.data, 0, rows, cols, None)
        assert n == out.nbytes, (n, out.nbytes)
        return out


def encode(x, qt, quantizer):
    if qt == QT.F32:
        return np.ascontiguousarray(x, dtype=np.float32).view(np.uint8).reshape(-1)
    if x.ndim == 3:  # experts: quantized row by row like a 2-D weight
        x = x.reshape(-1, x.shape[-1])
    if qt in K_TYPES.values():
        return quantizer(x, qt)
    return np.ascontiguousarray(gguf.quants.quantize(x, qt)).view(np.uint8).reshape(-1)


def tensor_qtype(shape, kind, qt_main):
    """Matrices take the file's type; vectors, 2-D biases and routers stay F32; MXFP4 (gpt-oss)
    is for the 3-D expert tensors only, the rest F32."""
    if len(shape) < 2 or kind in ("router", "bias2d", "conv", "mat_f32"):   # conv: ssm_conv1d, F32 as llama.cpp keeps it
        return QT.F32
    if qt_main == QT.MXFP4 and len(shape) != 3:
        return QT.F32
    return qt_main


def write_model(args, hp, path, wtype, quantizer):
    fam = VL_BASE.get(args.family, BASE.get(args.family, args.family))
    if args.family in GEMMA4:
        fam = "gemma4"
    vocab = spm_vocab("gemma3" if fam == "gemma4" else fam, hp["n_vocab"]) if hp["vocab"] == "spm" else bpe_vocab(fam, hp["n_vocab"], agent=args.chat_template == "qwen3" or bool(args.chat_template_file),
                                                                                            harmony=args.chat_template == "gpt-oss")
    assert len(vocab["tokens"]) == hp["n_vocab"], (len(vocab["tokens"]), hp["n_vocab"])
    w = gguf.GGUFWriter(path, GGUF_ARCH.get(args.family, args.family))
    w.add_type("model")
    w.add_name("anvil-test-%s-%s-%s" % (args.family, args.preset, args.type))
    w.add_context_length(hp["ctx"])
    w.add_embedding_length(hp["n_embd"])
    w.add_block_count(hp["n_layer"] + hp.get("n_nextn", 0))
    if fam != "gemma4":   # gemma4: per-layer arrays (write_gemma4_keys)
        w.add_feed_forward_length(hp["n_ff"])
    w.add_head_count(hp["n_head"])
    if fam != "gemma4":
        w.add_head_count_kv(hp["n_head_kv"])
    w.add_rope_freq_base(hp["rope_base"])
    w.add_layer_norm_rms_eps(hp["eps"])
    if "n_expert" in hp and fam == "gemma4":   # TextModel's expert keys, Gemma4Model's expert width
        w.add_expert_count(hp["n_expert"])
        w.add_expert_used_count(hp["n_expert_used"])
        w.add_expert_feed_forward_length(hp["n_ff_exp"])
    elif "n_expert" in hp:
        bad = args.bad_expert_meta or (hp["n_expert"], hp["n_expert_used"])
        w.add_expert_count(bad[0])
        w.add_expert_used_count(bad[1])
        if args.family not in ("llamamoe", "mistral3moe"):
            w.add_expert_feed_forward_length(hp["n_ff_exp"])
        if hp.get("shexp"):
            w.add_expert_shared_feed_forward_length(hp["n_ff"])
    if fam == "gptoss":  # as convert_hf_to_gguf.py writes gpt-oss (no pattern key: llama.cpp's default 2)
        w.add_key_length(hp["head_dim"])
        w.add_value_length(hp["head_dim"])
        w.add_sliding_window(hp["swa"])
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(hp["yarn_factor"])
        w.add_rope_scaling_orig_ctx_len(hp["yarn_orig_ctx"])
    if fam in ("llama", "mistral3"):
        w.add_vocab_size(hp["n_vocab"])
        w.add_rope_dimension_count(hp["head_dim"])
    if fam == "mistral3":
        write_mistral3_keys(w, hp, args.ollama_keys)
    if fam == "gemma4":
        write_gemma4_keys(w, hp, args.ollama_keys)
    if fam in ("qwen3", "gemma3"):
        w.add_key_length(hp["head_dim"])
        w.add_value_length(hp["head_dim"])
    if fam == "gemma3":  # like gemma-3-270m: no pattern / swa-base keys (llama.cpp defaults 6, 10000)
        if args.gemma3_swa != "off":   # off: an all-global model, as the converter writes one (no key)
            w.add_sliding_window(hp["swa"])
        if args.gemma3_swa == "pattern":
            w.add_sliding_window_pattern(3)
            w.add_rope_freq_base_swa(25000.0)
        elif args.gemma3_swa == "array":   # one bool per layer (gguf-py's Sequence[bool] form)
            w.add_sliding_window_pattern([True, False, True, True, False, True, False][:hp["n_layer"]])
            w.add_rope_freq_base_swa(5000.0)
    if fam == "qwen35":
        write_qwen35_keys(w, hp, args.ollama_keys)
    if args.family in VL_BASE:
        w.add_rope_dimension_sections(hp["rope_sections"])
        if args.family == "qwen3vl":
            w.add_num_deepstack_layers(hp["n_deepstack"])
    w.add_file_type(getattr(gguf.LlamaFileType, FILE_TYPES[wtype]))
    if wtype not in ("f32", "f16", "bf16"):
        w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    w.add_tokenizer_model(vocab["model"])
    # Ollama's gemma4 files: tokenizer model "llama" with pre "gemma4" (convert_gemma4.go)
    w.add_tokenizer_pre("gemma4" if fam == "gemma4" and args.ollama_keys else vocab["pre"])
    w.add_token_list(vocab["tokens"])
    if vocab["scores"] is not None:
        w.add_token_scores(vocab["scores"])
    w.add_token_types(vocab["types"])
    if vocab["merges"] is not None:
        w.add_token_merges(vocab["merges"])
    ids = vocab["ids"]
    w.add_bos_token_id(ids["bos"])
    w.add_eos_token_id(ids["eos"])
    if "unk" in ids:
        w.add_unk_token_id(ids["unk"])
    if "pad" in ids:
        w.add_pad_token_id(ids["pad"])
    if "eot" in ids:
        w.add_eot_token_id(ids["eot"])
    w.add_add_bos_token(vocab["model"] == "llama" or fam in ("llama", "mistral3"))
    w.add_add_eos_token(False)
    template = None
    if fam in ("gemma3", "gemma4"):
        w.add_add_space_prefix(False)
        template = CHAT_TEMPLATES["gemma3"]
    elif fam in ("qwen2", "qwen3", "qwen35"):
        template = CHAT_TEMPLATES[args.chat_template or "chatml"]
    elif fam == "mistral3":
        template = CHAT_TEMPLATES[args.chat_template or "ministral3"]
    elif fam == "gptoss" and args.chat_template:   # --chat-template gpt-oss: a harmony chat model
        template = CHAT_TEMPLATES[args.chat_template]
    if args.chat_template_file:   # a whole official template (tests/server/agents.py: Gemma 4, Qwen 3.5)
        with open(args.chat_template_file, encoding="utf-8") as f:
            template = f.read()
    if template:
        w.add_chat_template(template)

    qt_main = NUMPY_TYPES[wtype] if wtype in NUMPY_TYPES else K_TYPES[wtype]
    plan = tensor_plan(args, hp)
    for name, shape, kind, _ in plan:
        qt = tensor_qtype(shape, kind, qt_main)
        bs, ts = gguf.GGML_QUANT_SIZES[qt]
        n = int(np.prod(shape))
        if n % bs or shape[-1] % bs:
            raise SystemExit("make_test_model: %s row length %d is not a multiple of %s's block %d "
                             "(use --preset tinyk for K-quants)" % (name, shape[-1], wtype, bs))
        w.add_tensor_info(name, shape, np.dtype(np.float32), n // bs * ts, raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for name, shape, kind, scale in plan:
        qt = tensor_qtype(shape, kind, qt_main)
        w.write_tensor_data(encode(make_values(args.seed, name, shape, kind, scale, hp), qt, quantizer))
    w.close()
    return plan


def write_qwen35_keys(w, hp, ollama=False):
    """qwen35's keys as conversion/qwen.py writes them (TextModel: key/value_length, mrope
    sections padded to 4; Qwen3NextModel: ssm.*, attention.recurrent_layers from layer_types,
    full_attention_interval, rope.dimension_count = head_dim * partial_rotary_factor 0.25;
    _QwenMtpMixin: nextn_predict_layers), or (ollama) as Ollama's convert_qwen3next.go writes
    them: no attention.recurrent_layers (the interval says it), mrope_sections and
    rope.mrope_section beside rope.dimension_sections, rope.mrope_interleaved,
    ssm.v_head_reordered (its V heads tiled as llama.cpp's), and the vision tower's keys (its
    tensors: qwen35_tensor_plan)."""
    S, HV = hp["ssm_d_state"], hp["ssm_n_v_head"]
    w.add_key_length(hp["head_dim"])
    w.add_value_length(hp["head_dim"])
    w.add_rope_dimension_sections(hp["rope_sections"])
    w.add_ssm_conv_kernel(hp["ssm_d_conv"])
    w.add_ssm_state_size(S)
    w.add_ssm_group_count(hp["ssm_n_k_head"])
    w.add_ssm_time_step_rank(HV)
    w.add_ssm_inner_size(S * HV)
    if not ollama:
        # add_recurrent_layers (newer gguf-py than some installs have): the same array by its key
        w.add_array("%s.attention.recurrent_layers" % w.arch,
                    [qwen35_is_recurrent(hp, i) for i in range(hp["n_layer"])] + [False] * hp["n_nextn"])
    w.add_full_attention_interval(hp["full_attn_interval"])
    w.add_rope_dimension_count(hp["head_dim"] // 4)
    w.add_nextn_predict_layers(hp["n_nextn"])
    if ollama:
        sections = [s for s in hp["rope_sections"] if s][:3]
        w.add_array("%s.mrope_sections" % w.arch, sections)
        w.add_array("%s.rope.mrope_section" % w.arch, sections)
        w.add_bool("%s.rope.mrope_interleaved" % w.arch, True)
        w.add_bool("%s.ssm.v_head_reordered" % w.arch, True)
        w.add_uint32("%s.vision.block_count" % w.arch, 1)
        w.add_uint32("%s.vision.embedding_length" % w.arch, 32)


def write_mistral3_keys(w, hp, ollama):
    """mistral3's attention and rope keys as llama.cpp's converter writes them (base TextModel:
    key/value_length, yarn type/factor/orig ctx/betas; Ministral3Model: yarn_log_mul =
    mscale_all_dim, attention.temperature_scale = llama_4_scaling_beta), or (ollama) as Ollama's
    convert_mistral*.go do: rope.scaling.beta_fast/slow, rope.scaling.mscale and
    mscale_all_dim, rope.scaling_beta for the temperature, and the vision tower's keys (its
    tensors: tensor_plan)."""
    a = w.arch
    w.add_key_length(hp["head_dim"])
    w.add_value_length(hp["head_dim"])
    w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
    w.add_rope_scaling_factor(hp["yarn_factor"])
    w.add_rope_scaling_orig_ctx_len(hp["yarn_orig_ctx"])
    if ollama:
        w.add_float32("%s.rope.scaling.beta_fast" % a, hp["yarn_beta_fast"])
        w.add_float32("%s.rope.scaling.beta_slow" % a, hp["yarn_beta_slow"])
        w.add_float32("%s.rope.scaling.mscale" % a, 1.0)
        w.add_float32("%s.rope.scaling.mscale_all_dim" % a, hp["yarn_log_mul"])
        w.add_float32("%s.rope.scaling_beta" % a, hp["temp_scale"])
        w.add_uint32("%s.vision.block_count" % a, 1)
        w.add_uint32("%s.vision.embedding_length" % a, 32)
        w.add_uint32("%s.image_token_index" % a, 10)
        w.add_uint32("%s.spatial_merge_size" % a, 2)
    else:
        w.add_rope_scaling_yarn_beta_fast(hp["yarn_beta_fast"])
        w.add_rope_scaling_yarn_beta_slow(hp["yarn_beta_slow"])
        w.add_rope_scaling_yarn_log_mul(hp["yarn_log_mul"])
        w.add_attn_temperature_scale(hp["temp_scale"])


def weights_digest(path):
    """sha256 over (name, type, shape, bytes) of all tensors, sorted by name: equal for files
    whose weights are byte-identical whatever their metadata and tensor order."""
    r = gguf.GGUFReader(path)
    h = hashlib.sha256()
    for t in sorted(r.tensors, key=lambda t: t.name):
        h.update(("%s|%d|%s|" % (t.name, int(t.tensor_type), list(map(int, t.shape)))).encode())
        h.update(np.ascontiguousarray(t.data).view(np.uint8).tobytes())
    return h.hexdigest()


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def stamp_of(args):
    """What --if-changed compares: this script, the arguments and the quantizing binary."""
    d = {k: v for k, v in sorted(vars(args).items()) if k not in ("out", "if_changed", "digest")}
    d["script"] = file_sha256(os.path.abspath(__file__))
    if args.chat_template_file:
        d["chat_template_sha256"] = file_sha256(args.chat_template_file)
    if args.type in K_TYPES and args.anvil and (args.quantizer or "anvil") == "anvil":
        d["anvil"] = file_sha256(args.anvil)
    return repr(d) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--family", choices=sorted(FAMILY), default="llama")
    ap.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    ap.add_argument("--type", default="f32", choices=list(NUMPY_TYPES) + list(K_TYPES))
    ap.add_argument("--out", help="output .gguf")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--chat-template-file", help="write this file's text as tokenizer.chat_template (instead of "
                    "--chat-template's; qwen3 family: <think> and <tool_call> as user-defined tokens)")
    ap.add_argument("--chat-template", choices=sorted(CHAT_TEMPLATES), help="the tokenizer.chat_template to write "
                    "(default: the family's)")
    ap.add_argument("--vocab", choices=["spm", "bpe"], help="override the family's vocabulary kind")
    ap.add_argument("--n-vocab", type=int, help="override the preset's vocabulary size")
    ap.add_argument("--n-layer", type=int, help="override the number of layers")
    ap.add_argument("--swa", type=int, help="override the sliding window (e.g. a window that holds a test image's rows)")
    ap.add_argument("--n-expert", type=int, help="MoE families: override the number of experts")
    ap.add_argument("--n-expert-used", type=int, help="MoE families: override the experts used per token")
    ap.add_argument("--bad-expert-meta", nargs=2, metavar=("COUNT", "USED"), type=int,
                    help="tests: write these expert_count / expert_used_count instead of the tensors' (a malformed file)")
    ap.add_argument("--gemma3-swa", choices=["default", "pattern", "array", "off"], default="default",
                    help="gemma3 sliding-window metadata: default (window only: llama.cpp's pattern 6, base 10000), "
                         "pattern (period 3, rope.freq_base_swa 25000), array (a bool per layer, base 5000), "
                         "off (no sliding_window key: every layer global)")
    ap.add_argument("--ollama-keys", action="store_true",
                    help="mistral3: Ollama's metadata keys for YaRN and the query temperature (same weights); "
                         "gemma4: Ollama's library-file extras (pre gemma4, vision/audio tower tensors and keys)")
    ap.add_argument("--no-rope-freqs", action="store_true",
                    help="llama: no rope_freqs tensor and base 10000 (Llama 2 style rope)")
    ap.add_argument("--rope-orig-ctx", type=float, default=None,
                    help="llama3 rope scaling: original context of the frequency-factor formula "
                         "(default 32 for tiny/tinyk so the factors matter in short tests, 8192 else)")
    ap.add_argument("--mix", action="store_true",
                    help="K-quants with --quantizer anvil: llama-quantize's mix (q4_K -> Q4_K_M, ...), not --pure")
    ap.add_argument("--quantizer", choices=["ggml", "anvil"], default=None,
                    help="K-quants: ggml's quantizer via ctypes (default if --anvil is not given) or "
                         "`anvil quantize`")
    ap.add_argument("--ggml-lib", default=os.environ.get("ANVIL_GGML_LIB", DEFAULT_GGML_LIB))
    ap.add_argument("--anvil", help="path of the anvil binary (for --quantizer anvil)")
    ap.add_argument("--digest", metavar="GGUF", help="print the weights digest of a GGUF file and exit")
    ap.add_argument("--if-changed", action="store_true",
                    help="do nothing if --out exists and was made by this script (same version) with the same "
                         "arguments and the same anvil binary (recorded in OUT.stamp)")
    args = ap.parse_args()

    if args.digest:
        print(weights_digest(args.digest))
        return 0
    if not args.out:
        ap.error("--out is required")
    hp = hparams_for(args)
    hp["rope_freqs"] = args.family == "llama" and not args.no_rope_freqs
    if args.family == "llama" and args.no_rope_freqs:
        hp["rope_base"] = 10000.0
    hp["rope_orig_ctx"] = args.rope_orig_ctx or (32.0 if args.preset in ("tiny", "tinyk") else 8192.0)

    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    stamp = stamp_of(args)
    if args.if_changed and os.path.exists(args.out) and os.path.exists(args.out + ".stamp"):
        with open(args.out + ".stamp") as f:
            if f.read() == stamp:
                print("%s: up to date" % args.out)
                return 0
    if os.path.exists(args.out + ".stamp"):
        os.unlink(args.out + ".stamp")
    if args.mix and (args.type not in K_TYPES or not args.anvil):
        ap.error("--mix needs a K type and --anvil PATH")
    if args.type in K_TYPES:
        quantizer = args.quantizer or ("anvil" if args.anvil else "ggml")
        if quantizer == "anvil":
            if not args.anvil:
                ap.error("--quantizer anvil needs --anvil PATH")
            fd, tmp = tempfile.mkstemp(suffix=".f32.gguf", dir=out_dir)
            os.close(fd)
            try:
                write_model(args, hp, tmp, "f32", None)
                # --pure: every 2-D weight gets the type (no Q4_K_M-style mix), as ggml_quantize_chunk;
                # --mix: llama-quantize's mix of that name (Q4_K_M ...), as users' files are made
                qargs = [MIXES[args.type]] if args.mix else ["--pure", args.type]
                r = subprocess.run([args.anvil, "quantize", tmp, args.out] + qargs if args.mix else
                                   [args.anvil, "quantize", "--pure", tmp, args.out, args.type])
                if r.returncode != 0:
                    raise SystemExit("make_test_model: `anvil quantize %s` failed (exit %d)" % (" ".join(qargs), r.returncode))
            finally:
                os.unlink(tmp)
        else:
            write_model(args, hp, args.out, args.type, GgmlQuantizer(args.ggml_lib))
    else:
        write_model(args, hp, args.out, args.type, None)
    with open(args.out + ".stamp", "w") as f:
        f.write(stamp)
    n_params = sum(int(np.prod(s)) for _, s, _, _ in tensor_plan(args, hp))
    print("%s: %s %s %s n_embd=%d n_layer=%d n_ff=%d n_head=%d n_head_kv=%d head_dim=%d n_vocab=%d "
          "params=%d" % (args.out, args.family, args.preset, args.type, hp["n_embd"], hp["n_layer"],
                         hp["n_ff"], hp["n_head"], hp["n_head_kv"], hp["head_dim"], hp["n_vocab"], n_params))
    return 0


if __name__ == "__main__":
    sys.exit(main())
