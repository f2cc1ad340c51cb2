#!/usr/bin/env python3
"""make_embed_model: deterministic random-weight GGUF embedding models for Anvil's tests.

Writes, with llama.cpp's exact tensor names and metadata keys (gguf-py), the encoder families
  bert             absolute positions, token types, post-LayerNorm, GELU FFN, biases,
                   WordPiece vocabulary ("bert"), CLS or mean pooling (--pooling)
  nomic-bert       rotary positions (NEOX), fused attn_qkv, SwiGLU FFN, no biases, WordPiece
  gemma-embedding  the gemma3 body, bidirectional attention with a symmetric sliding window,
                   mean pooling and the sentence-transformers dense_2 / dense_3 projections,
                   SentencePiece vocabulary (make_test_model.py's gemma3 one)
and the small WordPiece vocabulary alone (--vocab-only) for the tokenizer goldens.
Weights are seeded per tensor name (numpy PCG64), so a file is a pure function of its args.

  make_embed_model.py --family bert --out bert.gguf
  make_embed_model.py --family gemma-embedding --out ge.gguf
"""
import argparse
import math
import os
import sys
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_test_model as mtm  # noqa: E402  (reuses its gguf import, SPM vocab and corpus)

gguf = mtm.gguf
QT = mtm.QT
PHANTOM = "\u2581"   # llama.cpp's converter writes word-initial pieces with U+2581, "##x" as "x"

FAMILIES = {
    "bert": dict(n_embd=128, n_ff=352, n_head=4, n_layer=2, ctx=512, eps=1e-12, pooling="cls"),
    "nomic-bert": dict(n_embd=128, n_ff=352, n_head=4, n_layer=2, ctx=2048, eps=1e-12, pooling="mean",
                       rope_base=1000.0),
    "gemma-embedding": dict(n_embd=128, n_ff=352, n_head=4, n_head_kv=1, head_dim=64, n_layer=7, ctx=2048,
                            eps=1e-6, pooling="mean", swa=8, rope_base=1000000.0, rope_base_swa=10000.0,
                            n_vocab=768, dense=256),
}
POOLING = {"none": 0, "mean": 1, "cls": 2, "last": 3}

# Pieces of the WordPiece vocabulary beyond single characters: whole words (U+2581-prefixed)
# and continuations; some words stay out on purpose so that tests hit [UNK] and splits.
WORD_EXTRA = ["the", "quick", "brown", "fox", "jump", "over", "lazy", "dog", "hello", "world", "model",
              "token", "embed", "embedding", "attention", "layer", "network", "un", "believ", "café",
              "naive", "über", "resume", "2024", "100", "zürich", "straße", "ni", "hao"]
CONT_EXTRA = ["s", "ing", "ed", "er", "able", "ly", "ment", "tion", "ness", "ish", "ding", "ings", "bed",
              "dings", "ps", "es", "al", "ic"]


def bge_vocab():
    """BGE's real WordPiece vocabulary (tests/data/vocab/bert-bge.json.gz: the tokens and types
    of llama.cpp's models/ggml-vocab-bert-bge.gguf, as its converter wrote them)."""
    import gzip
    import json
    with gzip.open(os.path.join(HERE, "..", "tests", "data", "vocab", "bert-bge.json.gz"), "rt", encoding="utf-8") as f:
        v = json.load(f)
    return dict(tokens=v["tokens"], types=v["types"], ids=v["ids"], pre=v["pre"])


def wpm_vocab():
    tokens = ["[PAD]"] + ["[unused%d]" % i for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    types = [3] + [1] * 99 + [3, 3, 3, 3]
    chars = [chr(c) for c in range(0x21, 0x7F) if not ("A" <= chr(c) <= "Z")]
    chars += list("éèêàçñöüßøå") + list("中文字你好世界日本語") + ["ñ"]  # CJK, accented (stripped by the normalizer)
    seen = set(tokens)

    def add(t):
        if t not in seen:
            seen.add(t)
            tokens.append(t)
            types.append(1)
    for c in chars:
        add(PHANTOM + c)
    for c in chars:
        add(c)
    words = set()
    for w in mtm.CORPUS.lower().replace("\n", " ").split(" "):
        w = "".join(ch for ch in w if ch.isalnum())
        if w and len(words) < 160:
            words.add(w)
    for w in sorted(words) + WORD_EXTRA:
        add(PHANTOM + w)
    for c in CONT_EXTRA:
        add(c)
    while len(tokens) % 8:   # a round size
        add("[unused%d]" % len(tokens))
    return dict(tokens=tokens, types=types, ids=dict(pad=0, unk=100, cls=101, sep=102, mask=103))


def values(seed, name, shape, kind, scale):
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    x = rng.standard_normal(shape, dtype=np.float32)
    if kind in ("mat", "bias"):
        return x * np.float32(scale)
    if kind.startswith("norm"):
        return np.float32(float(kind[5:] or 1.0)) + np.float32(scale) * x
    raise ValueError(kind)


def plan_bert(fam, hp, V):
    E, F = hp["n_embd"], hp["n_ff"]
    s = 1.0 / math.sqrt(E)
    p = [("token_embd.weight", (V, E), "mat", 1.0)]
    if fam == "bert":
        p += [("token_types.weight", (2, E), "mat", 0.3), ("position_embd.weight", (hp["ctx"], E), "mat", 0.5)]
    else:
        p += [("token_types.weight", (2, E), "mat", 0.3)]
    p += [("token_embd_norm.weight", (E,), "norm", 0.2), ("token_embd_norm.bias", (E,), "bias", 0.1)]
    for i in range(hp["n_layer"]):
        b = "blk.%d." % i
        if fam == "bert":
            for t in ("q", "k", "v"):
                p += [(b + "attn_%s.weight" % t, (E, E), "mat", 1.5 * s if t != "v" else s),
                      (b + "attn_%s.bias" % t, (E,), "bias", 0.2)]
        else:
            p += [(b + "attn_qkv.weight", (3 * E, E), "mat", 1.5 * s)]
        p += [(b + "attn_output.weight", (E, E), "mat", s)]
        if fam == "bert":
            p += [(b + "attn_output.bias", (E,), "bias", 0.2)]
        p += [(b + "attn_output_norm.weight", (E,), "norm", 0.2), (b + "attn_output_norm.bias", (E,), "bias", 0.1)]
        p += [(b + "ffn_up.weight", (F, E), "mat", s)]
        if fam == "bert":
            p += [(b + "ffn_up.bias", (F,), "bias", 0.2)]
        else:
            p += [(b + "ffn_gate.weight", (F, E), "mat", s)]
        p += [(b + "ffn_down.weight", (E, F), "mat", 1.0 / math.sqrt(F))]
        if fam == "bert":
            p += [(b + "ffn_down.bias", (E,), "bias", 0.2)]
        p += [(b + "layer_output_norm.weight", (E,), "norm", 0.2), (b + "layer_output_norm.bias", (E,), "bias", 0.1)]
    return p


def plan_gemma(hp, V):
    E, F, H, HKV, D, Dd = hp["n_embd"], hp["n_ff"], hp["n_head"], hp["n_head_kv"], hp["head_dim"], hp["dense"]
    p = [("token_embd.weight", (V, E), "mat", 0.5 / math.sqrt(E))]
    for i in range(hp["n_layer"]):
        b = "blk.%d." % i
        p += [(b + "attn_norm.weight", (E,), "norm", 0.2),
              (b + "attn_q.weight", (H * D, E), "mat", 1.0 / math.sqrt(E)),
              (b + "attn_k.weight", (HKV * D, E), "mat", 1.0 / math.sqrt(E)),
              (b + "attn_v.weight", (HKV * D, E), "mat", 1.0 / math.sqrt(E)),
              (b + "attn_q_norm.weight", (D,), "norm:1.5", 0.2),
              (b + "attn_k_norm.weight", (D,), "norm:1.5", 0.2),
              (b + "attn_output.weight", (E, H * D), "mat", 1.0 / math.sqrt(H * D)),
              (b + "post_attention_norm.weight", (E,), "norm:2.5", 0.5),
              (b + "ffn_norm.weight", (E,), "norm", 0.2),
              (b + "ffn_gate.weight", (F, E), "mat", 1.0 / math.sqrt(E)),
              (b + "ffn_up.weight", (F, E), "mat", 1.0 / math.sqrt(E)),
              (b + "ffn_down.weight", (E, F), "mat", 1.0 / math.sqrt(F)),
              (b + "post_ffw_norm.weight", (E,), "norm:2.5", 0.5)]
    p += [("output_norm.weight", (E,), "norm", 0.2)]
    if Dd:
        p += [("dense_2.weight", (Dd, E), "mat", 1.0 / math.sqrt(E)), ("dense_3.weight", (E, Dd), "mat", 1.0 / math.sqrt(Dd))]
    return p


def write(args):
    fam = args.family
    hp = dict(FAMILIES[fam])
    if args.pooling:
        hp["pooling"] = args.pooling
    if args.no_dense:
        hp["dense"] = 0
    w = gguf.GGUFWriter(args.out, fam)
    w.add_type("model")
    w.add_name("anvil-test-%s" % fam)
    if fam == "gemma-embedding":
        vocab = mtm.spm_vocab("gemma3", hp["n_vocab"])
        V = len(vocab["tokens"])
    else:
        vocab = bge_vocab() if args.vocab == "bge" else wpm_vocab()
        V = len(vocab["tokens"])
    if not args.vocab_only:
        w.add_context_length(hp["ctx"])
        w.add_embedding_length(hp["n_embd"])
        w.add_block_count(hp["n_layer"])
        w.add_feed_forward_length(hp["n_ff"])
        w.add_head_count(hp["n_head"])
        w.add_pooling_type(gguf.PoolingType(POOLING[hp["pooling"]]))
        w.add_file_type(gguf.LlamaFileType.ALL_F32 if args.type == "f32" else gguf.LlamaFileType.MOSTLY_F16)
        if fam == "gemma-embedding":
            w.add_head_count_kv(hp["n_head_kv"])
            w.add_key_length(hp["head_dim"])
            w.add_value_length(hp["head_dim"])
            w.add_rope_freq_base(hp["rope_base"])
            w.add_rope_freq_base_swa(hp["rope_base_swa"])
            w.add_layer_norm_rms_eps(hp["eps"])
            w.add_sliding_window(hp["swa"])
            if hp["dense"]:
                w.add_dense_features_dims("dense_2", hp["n_embd"], hp["dense"])
                w.add_dense_features_dims("dense_3", hp["dense"], hp["n_embd"])
        else:
            w.add_head_count_kv(hp["n_head"])
            w.add_layer_norm_eps(hp["eps"])
            w.add_causal_attention(False)
            w.add_token_type_count(2)
            if fam == "nomic-bert":
                w.add_rope_freq_base(hp["rope_base"])
    w.add_tokenizer_model(vocab.get("model", "bert"))
    if fam == "gemma-embedding":
        w.add_tokenizer_pre(vocab["pre"])
        w.add_token_list(vocab["tokens"])
        w.add_token_scores(vocab["scores"])
        w.add_token_types(vocab["types"])
        ids = vocab["ids"]
        w.add_bos_token_id(ids["bos"])
        w.add_eos_token_id(ids["eos"])
        w.add_unk_token_id(ids["unk"])
        if "pad" in ids:
            w.add_pad_token_id(ids["pad"])
        w.add_add_bos_token(True)
        w.add_add_eos_token(True)   # EmbeddingGemma's tokenizer ends every input with <eos>
        w.add_add_space_prefix(False)
    else:
        w.add_tokenizer_pre(vocab.get("pre", "default"))
        w.add_token_list(vocab["tokens"])
        w.add_token_types(vocab["types"])
        ids = vocab["ids"]
        w.add_bos_token_id(ids["cls"])
        w.add_unk_token_id(ids["unk"])
        w.add_sep_token_id(ids["sep"])
        w.add_pad_token_id(ids["pad"])
        w.add_mask_token_id(ids["mask"])
        w.add_add_bos_token(True)
        w.add_add_sep_token(True)
        # llama.cpp's converter never writes the normalizer keys (real files lowercase by
        # default); only the cased variant, a file that opts out, carries the key.
        if args.cased:
            w.add_bool("tokenizer.ggml.normalizer.lowercase", False)
    plan = [] if args.vocab_only else (plan_gemma(hp, V) if fam == "gemma-embedding" else plan_bert(fam, hp, V))
    wqt = QT.F32 if args.type == "f32" else QT.F16
    for name, shape, kind, scale in plan:
        qt = wqt if len(shape) == 2 and name not in ("token_types.weight",) else QT.F32
        n = int(np.prod(shape))
        w.add_tensor_info(name, shape, np.dtype(np.float32), n * (4 if qt == QT.F32 else 2), raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for name, shape, kind, scale in plan:
        x = values(args.seed, name, shape, kind, scale)
        qt = wqt if len(shape) == 2 and name not in ("token_types.weight",) else QT.F32
        data = x.astype(np.float32) if qt == QT.F32 else x.astype(np.float16)
        w.write_tensor_data(np.ascontiguousarray(data).view(np.uint8).reshape(-1))
    w.close()
    print("%s: %s%s n_vocab=%d pooling=%s" % (args.out, fam, " (vocab only)" if args.vocab_only else "", V, hp["pooling"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", choices=sorted(FAMILIES), default="bert")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--type", choices=["f32", "f16"], default="f32")
    ap.add_argument("--pooling", choices=sorted(POOLING), help="override the family's pooling type")
    ap.add_argument("--no-dense", action="store_true", help="gemma-embedding: no dense_2/dense_3 projections")
    ap.add_argument("--vocab-only", action="store_true", help="only the tokenizer metadata (WordPiece goldens)")
    ap.add_argument("--cased", action="store_true", help="WordPiece: no lowercasing / accent stripping")
    ap.add_argument("--vocab", choices=["synthetic", "bge"], default="synthetic",
                    help="bert / nomic-bert: the small synthetic WordPiece vocabulary, or BGE's real one (30522 pieces)")
    args = ap.parse_args()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    write(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
