#!/usr/bin/env python3
"""ref_forward: an exact (float64 numpy) forward pass of the four test families, for checking
the synthetic models and measuring how far llama.cpp is from exact arithmetic.

  ref_forward.py MODEL.gguf --tokens 1,2,3 [--n-gen 16] --dump out.json [--gelu-fp16]
  ref_forward.py eval MODEL.gguf --tokens ... --dump out.json   (accepts `anvil eval`'s options, so
      that tests/model/golden/run_golden.py --anvil tests/model/golden/ref_forward.py checks the harness)

Weights are dequantized with gguf.quants; activations are never rounded (unlike llama.cpp,
which rounds them to 8 bits / f16 / bf16 for quantized / f16 / bf16 weights, and looks GELU up
in an f16 table on the CPU: --gelu-fp16 emulates the latter). Writes a logprobs-v1 dump.
It implements llama.cpp's semantics as read from src/models/{llama,qwen2,qwen3,gemma3}.cpp:
rope NORM (adjacent pairs) for llama, NEOX (halves) for the others, llama3 rope_freqs as
frequency divisors, gemma3 sliding window (layer il is local iff il % 6 < 5; key j is visible
from query i iff i - j < window) with rope base 10000 on local layers.
"""
import argparse
import json
import math
import sys

import numpy as np
import gguf


def load(path):
    r = gguf.GGUFReader(path)
    arch = bytes(r.fields["general.architecture"].parts[-1]).decode()

    def kv(key, default=None):
        f = r.fields.get(key)
        if f is None:
            return default
        return f.contents()

    hp = dict(arch=arch, n_embd=kv(arch + ".embedding_length"), n_layer=kv(arch + ".block_count"),
              n_head=kv(arch + ".attention.head_count"), n_head_kv=kv(arch + ".attention.head_count_kv"),
              eps=kv(arch + ".attention.layer_norm_rms_epsilon"), rope_base=kv(arch + ".rope.freq_base", 10000.0),
              swa=kv(arch + ".attention.sliding_window", 0),
              swa_pattern=kv(arch + ".attention.sliding_window_pattern", 6),
              rope_base_swa=kv(arch + ".rope.freq_base_swa", 10000.0))
    hp["head_dim"] = kv(arch + ".attention.key_length", hp["n_embd"] // hp["n_head"])
    w = {}
    for t in r.tensors:
        w[t.name] = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type).astype(np.float64)
    return hp, w


def rms_norm(x, wt, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * wt


def rope(x, pos, base, neox, factors=None):
    """x: (T, H, D). Rotates all D dims."""
    d = x.shape[-1]
    inv = base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    if factors is not None:
        inv = inv / factors
    ang = pos[:, None] * inv[None, :]  # (T, D/2)
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    if neox:
        a, b = x[..., : d // 2], x[..., d // 2:]
        return np.concatenate([a * c - b * s, a * s + b * c], axis=-1)
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = a * c - b * s
    out[..., 1::2] = a * s + b * c
    return out


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * x * (1.0 + 0.044715 * x * x)))


def gelu_fp16_table(x):
    """ggml CPU: gelu of the fp16-rounded input, result rounded to fp16; identity/0 beyond +-10."""
    h = x.astype(np.float16).astype(np.float64)
    y = gelu_tanh(h).astype(np.float16).astype(np.float64)
    return np.where(x <= -10, 0.0, np.where(x >= 10, x, y))


def forward(hp, w, tokens, gelu_fp16=False):
    arch = hp["arch"]
    E, H, HKV, D = hp["n_embd"], hp["n_head"], hp["n_head_kv"], hp["head_dim"]
    T = len(tokens)
    pos = np.arange(T, dtype=np.float64)
    x = w["token_embd.weight"][tokens]
    if arch == "gemma3":
        x = x * math.sqrt(E)
    neox = arch != "llama"
    factors = w.get("rope_freqs.weight")
    causal = np.tril(np.ones((T, T), dtype=bool))
    for il in range(hp["n_layer"]):
        p = "blk.%d." % il
        base, mask = hp["rope_base"], causal
        if arch == "gemma3" and hp["swa"] > 0 and il % hp["swa_pattern"] < hp["swa_pattern"] - 1:
            base = hp["rope_base_swa"]
            mask = causal & ((pos[:, None] - pos[None, :]) < hp["swa"])
        h = rms_norm(x, w[p + "attn_norm.weight"], hp["eps"])
        q = h @ w[p + "attn_q.weight"].T
        k = h @ w[p + "attn_k.weight"].T
        v = h @ w[p + "attn_v.weight"].T
        if p + "attn_q.bias" in w:
            q, k, v = q + w[p + "attn_q.bias"], k + w[p + "attn_k.bias"], v + w[p + "attn_v.bias"]
        q, k, v = q.reshape(T, H, D), k.reshape(T, HKV, D), v.reshape(T, HKV, D)
        if p + "attn_q_norm.weight" in w:
            q = rms_norm(q, w[p + "attn_q_norm.weight"], hp["eps"])
            k = rms_norm(k, w[p + "attn_k_norm.weight"], hp["eps"])
        q = rope(q, pos, base, neox, factors)
        k = rope(k, pos, base, neox, factors)
        out = np.empty((T, H, D))
        for hh in range(H):
            kh = hh // (H // HKV)
            s = (q[:, hh, :] @ k[:, kh, :].T) / math.sqrt(D)
            s = np.where(mask, s, -np.inf)
            s = np.exp(s - s.max(axis=1, keepdims=True))
            s /= s.sum(axis=1, keepdims=True)
            out[:, hh, :] = s @ v[:, kh, :]
        a = out.reshape(T, H * D) @ w[p + "attn_output.weight"].T
        if arch == "gemma3":
            a = rms_norm(a, w[p + "post_attention_norm.weight"], hp["eps"])
        x = x + a
        h = rms_norm(x, w[p + "ffn_norm.weight"], hp["eps"])
        g = h @ w[p + "ffn_gate.weight"].T
        u = h @ w[p + "ffn_up.weight"].T
        if arch == "gemma3":
            act = gelu_fp16_table(g) if gelu_fp16 else gelu_tanh(g)
        else:
            act = g / (1.0 + np.exp(-g))
        f = (act * u) @ w[p + "ffn_down.weight"].T
        if arch == "gemma3":
            f = rms_norm(f, w[p + "post_ffw_norm.weight"], hp["eps"])
        x = x + f
    x = rms_norm(x, w["output_norm.weight"], hp["eps"])
    out_w = w.get("output.weight", w["token_embd.weight"])
    logits = x @ out_w.T
    m = logits.max(axis=1, keepdims=True)
    return logits - m - np.log(np.exp(logits - m).sum(axis=1, keepdims=True))


def main():
    argv = sys.argv[1:]
    if argv[:1] == ["eval"]:  # stand-in for `anvil eval` (run_golden.py --anvil ref_forward.py)
        argv = argv[1:]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ctx", type=int, help="ignored (anvil eval compatibility)")
    ap.add_argument("--kv-type", help="ignored: the KV cache is exact")
    ap.add_argument("-t", "--threads", type=int, help="ignored")
    ap.add_argument("model")
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--n-gen", type=int, default=16)
    ap.add_argument("--gelu-fp16", action="store_true", help="emulate ggml-cpu's f16 GELU table")
    ap.add_argument("--dump", required=True)
    a = ap.parse_args(argv)
    hp, w = load(a.model)
    toks = [int(t) for t in a.tokens.split(",") if t.strip()]
    lp = forward(hp, w, toks, a.gelu_fp16)
    seq = list(toks)
    gen = []
    nxt = int(np.argmax(lp[-1]))
    for _ in range(a.n_gen):
        gen.append(nxt)
        seq.append(nxt)
        nxt = int(np.argmax(forward(hp, w, seq, a.gelu_fp16)[-1]))
    dump = {"format": "logprobs-v1", "engine": "ref_forward.py (float64 numpy)", "backend": "numpy",
            "model": a.model.rsplit("/", 1)[-1], "n_vocab": lp.shape[1], "tokens": toks, "generated": gen,
            "positions": [{"pos": i, "input_token": toks[i], "logprobs": lp[i].tolist()} for i in range(len(toks))]}
    with open(a.dump, "w") as f:
        json.dump(dump, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
