#!/usr/bin/env python3
"""make_bpe_models: the small byte-level BPE vocabularies the tokenizer tests run on.

  --train        trains a byte-level BPE (HF `tokenizers`, pip install tokenizers) on
                 tests/tokenizer/corpus.txt and writes tests/data/tokenizer-bpe-vocab.json
                 (tokens in id order + merges). Only needed to change the vocabulary.
  --out DIR      writes DIR/tok-bpe-llama3.gguf (tokenizer.ggml.pre = "llama-bpe", Llama 3
                 special tokens), DIR/tok-bpe-qwen2.gguf ("qwen2", Qwen special tokens and
                 user-defined tokens), DIR/tok-bpe-gpt2.gguf ("gpt-2") and
                 DIR/tok-bpe-default.gguf ("default") from that JSON, each with a minimal random
                 1-layer llama (n_embd 64) so that llama.cpp loads it. Needs gguf + numpy only.
Deterministic: same JSON in, same files out.
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB_JSON = os.path.join(HERE, "..", "data", "tokenizer-bpe-vocab.json")

# GGUF token types (llama.cpp's llama_token_type)
NORMAL, CONTROL, USER_DEFINED = 1, 3, 4

FAMILIES = {
    "llama3": {
        "pre": "llama-bpe",
        "special": [("<|begin_of_text|>", CONTROL), ("<|end_of_text|>", CONTROL), ("<|start_header_id|>", CONTROL),
                    ("<|end_header_id|>", CONTROL), ("<|eot_id|>", CONTROL), ("<|im_start|>", CONTROL),
                    ("<|im_end|>", CONTROL), ("<|endoftext|>", CONTROL)],
        "bos": "<|begin_of_text|>", "eos": "<|end_of_text|>", "add_bos": True,
    },
    "qwen2": {
        "pre": "qwen2",
        "special": [("<|endoftext|>", CONTROL), ("<|im_start|>", CONTROL), ("<|im_end|>", CONTROL),
                    ("<|begin_of_text|>", CONTROL), ("<|eot_id|>", CONTROL), ("<|fim_prefix|>", CONTROL),
                    ("<think>", USER_DEFINED), ("</think>", USER_DEFINED)],
        "bos": "<|endoftext|>", "eos": "<|im_end|>", "add_bos": False,
    },
    "gpt2": {
        "pre": "gpt-2",
        "special": [("<|endoftext|>", CONTROL), ("<|im_start|>", CONTROL), ("<|im_end|>", CONTROL),
                    ("<|begin_of_text|>", CONTROL), ("<|eot_id|>", CONTROL)],
        "bos": "<|endoftext|>", "eos": "<|endoftext|>", "add_bos": False,
    },
    "default": {
        "pre": "default",
        "special": [("<|endoftext|>", CONTROL), ("<|im_start|>", CONTROL), ("<|im_end|>", CONTROL),
                    ("<|begin_of_text|>", CONTROL), ("<|eot_id|>", CONTROL)],
        "bos": "<|begin_of_text|>", "eos": "<|endoftext|>", "add_bos": True,
    },
}


def train(vocab_size):
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tok.train([os.path.join(HERE, "corpus.txt")], trainer)
    model = json.loads(tok.to_str())["model"]
    vocab = sorted(model["vocab"].items(), key=lambda kv: kv[1])
    assert [i for _, i in vocab] == list(range(len(vocab)))
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    with open(VOCAB_JSON, "w", encoding="utf-8") as f:
        json.dump({"source": "tests/tokenizer/make_bpe_models.py --train (HF tokenizers, byte-level BPE on corpus.txt)",
                   "tokens": [t for t, _ in vocab], "merges": merges}, f, ensure_ascii=False, indent=0)
        f.write("\n")
    print(f"{VOCAB_JSON}: {len(vocab)} tokens, {len(merges)} merges")


def write_model(path, family, tokens, merges):
    import gguf
    fam = FAMILIES[family]
    toks = list(tokens) + [t for t, _ in fam["special"]]
    types = [NORMAL] * len(tokens) + [ty for _, ty in fam["special"]]
    n_vocab, n_embd, n_ff, n_head = len(toks), 64, 128, 2
    w = gguf.GGUFWriter(path, "llama")
    w.add_name(f"tok-bpe-{family}")
    w.add_context_length(256)
    w.add_embedding_length(n_embd)
    w.add_block_count(1)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head)
    w.add_rope_dimension_count(n_embd // n_head)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(n_vocab)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(fam["pre"])
    w.add_token_list(toks)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(toks.index(fam["bos"]))
    w.add_eos_token_id(toks.index(fam["eos"]))
    w.add_add_bos_token(fam["add_bos"])
    rng = np.random.default_rng(1234)

    def rand(*shape):
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    w.add_tensor("token_embd.weight", rand(n_vocab, n_embd))
    w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    w.add_tensor("blk.0.attn_norm.weight", np.ones(n_embd, dtype=np.float32))
    for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
        w.add_tensor(f"blk.0.{name}.weight", rand(n_embd, n_embd))
    w.add_tensor("blk.0.ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
    w.add_tensor("blk.0.ffn_gate.weight", rand(n_ff, n_embd))
    w.add_tensor("blk.0.ffn_up.weight", rand(n_ff, n_embd))
    w.add_tensor("blk.0.ffn_down.weight", rand(n_embd, n_ff))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", action="store_true", help="retrain the vocabulary JSON from corpus.txt")
    ap.add_argument("--vocab-size", type=int, default=3000)
    ap.add_argument("--out", help="directory for the GGUF models")
    a = ap.parse_args()
    if a.train:
        train(a.vocab_size)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(VOCAB_JSON, encoding="utf-8") as f:
            v = json.load(f)
        for family in FAMILIES:
            path = os.path.join(a.out, f"tok-bpe-{family}.gguf")
            write_model(path + ".tmp", family, v["tokens"], v["merges"])
            os.replace(path + ".tmp", path)
            print(f"{path}: {len(v['tokens']) + len(FAMILIES[family]['special'])} tokens, {len(v['merges'])} merges")
    if not a.train and not a.out:
        ap.error("nothing to do: give --train and/or --out DIR")
    return 0


if __name__ == "__main__":
    sys.exit(main())
