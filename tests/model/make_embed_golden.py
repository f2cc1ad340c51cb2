#!/usr/bin/env python3
"""make_embed_golden: regenerates tests/data/embed/<family>.json, the embedding goldens of the
synthetic embedding models (tools/make_embed_model.py) computed by today's llama.cpp
(llama-embedding, unnormalised, the model's pooling; llama-tokenize for the token ids).

  PYTHONPATH=~/.cache/llamacpp-current/src/llama.cpp/gguf-py python3 tests/model/make_embed_golden.py \
      --bin ~/.cache/llamacpp-current/src/llama.cpp/build-cpu/bin
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROMPTS = ["hello world", "The quick brown fox jumps over the lazy dog.",
           "Café naïve résumé, Zürich straße! 中文 unbelievable embeddings",
           "attention layers: the network mixes the channels; a cache keeps the keys and values so that each "
           "new token costs one pass over the weights. Quantized weights store a scale per block.",
           "x",
           # capitals, accents, other scripts, CJK and emoji: the WordPiece normalizer's work
           "MiXeD CaSe iPhone McDONALD'S O'Neill: ÀÉÎÕÜ façade, São Paulo, ŁÓDŹ, Ελληνικά ΚΕΦΑΛΑΙΑ, ПРИВЕТ Мир",
           "東京タワーと中文字符，한국어 텍스트, ภาษาไทย, हिन्दी, العربية — ﬁ ligature, Ａ fullwidth, ① circled",
           "Emoji 🚀🔥 mixed 👩‍👩‍👧 with skin tones 👍🏽 and flags 🇩🇪🇯🇵! Tabs\tand\tmore; ½ ² ™ ©"]
# (family, extra make_embed_model args, golden name)
MODELS = [("bert", [], "bert"), ("bert", ["--pooling", "mean"], "bert-mean"), ("nomic-bert", [], "nomic-bert"),
          ("gemma-embedding", [], "gemma-embedding"), ("gemma-embedding", ["--no-dense"], "gemma-embedding-nodense"),
          # BGE's real WordPiece vocabulary (30522 pieces, no normalizer key: as every real file)
          ("bert", ["--vocab", "bge"], "bert-bge"), ("nomic-bert", ["--vocab", "bge"], "nomic-bert-bge")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="llama.cpp's bin folder (llama-embedding, llama-tokenize)")
    ap.add_argument("--models", default="/tmp/anvil-embed-golden")
    args = ap.parse_args()
    os.makedirs(args.models, exist_ok=True)
    for fam, extra, name in MODELS:
        path = os.path.join(args.models, name + ".gguf")
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_embed_model.py"), "--family", fam, "--out", path]
                       + extra, check=True, stdout=subprocess.DEVNULL)
        cases = []
        for p in PROMPTS:
            # one thread: today's llama-embedding sometimes exits silently with two on this machine
            # (and, rarely, with one: retried)
            for _ in range(8):
                r = subprocess.run([os.path.join(args.bin, "llama-embedding"), "-m", path, "-p", p, "-t", "1",
                                    "--embd-normalize", "-1", "--embd-output-format", "json"], capture_output=True, text=True)
                try:
                    emb = json.loads(r.stdout)["data"][0]["embedding"] if r.returncode == 0 else None
                except ValueError:   # cut short
                    emb = None
                if emb:
                    break
            if not emb:
                raise SystemExit("llama-embedding failed on %s %r: %s" % (name, p, r.stderr[-500:]))
            t = subprocess.run([os.path.join(args.bin, "llama-tokenize"), "-m", path, "-p", p, "--ids", "--log-disable",
                                "--no-escape"], capture_output=True, text=True, check=True)
            ids = json.loads([l for l in t.stdout.splitlines() if l.startswith("[")][-1])
            cases.append(dict(text=p, tokens=ids, embedding=emb))
        out = os.path.join(ROOT, "tests", "data", "embed", name + ".json")
        with open(out, "w") as f:
            json.dump(dict(format="embed-golden-v1", generator="tests/model/make_embed_golden.py (llama-embedding)",
                           model="tools/make_embed_model.py --family %s %s" % (fam, " ".join(extra)), cases=cases), f)
            f.write("\n")
        print("%s: %d cases, dim %d" % (out, len(cases), len(cases[0]["embedding"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
