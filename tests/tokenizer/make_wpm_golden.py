#!/usr/bin/env python3
"""make_wpm_golden: regenerates tests/data/tokenizer-golden-wpm*.json, the WordPiece (BERT)
tokenizer goldens, with today's llama.cpp (llama-tokenize) on the synthetic vocabulary that
tools/make_embed_model.py --vocab-only writes (lowercasing + accent stripping, and --cased), and on
BGE's real 30522-piece vocabulary (--vocab bge, no normalizer key: as every converted file).

  PYTHONPATH=~/.cache/llamacpp-current/src/llama.cpp/gguf-py python3 tests/tokenizer/make_wpm_golden.py \
      --llama-tokenize ~/.cache/llamacpp-current/src/llama.cpp/build-cpu/bin/llama-tokenize

Per case: "plain" (no special tokens added, special texts not parsed), "special" (parsed) and
"added" (parsed, [CLS] ... [SEP] added: what an embedding request sends).
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

CASES = [
    "hello world", "Hello, World!", "HELLO", "  leading and trailing  ", "", " ", "\t\n\r",
    "The quick brown fox jumps over the lazy dog.", "unbelievable embeddings", "embeddings",
    "Café naïve résumé Zürich straße", "ÉCOLE élève ÀÇÑ", "Crème brûlée à la carte",
    "e\u0301 combining acute", "A\u0308\u0304 stacked marks", "\u212b angstrom sign",
    "中文字 你好世界", "日本語のテキスト", "mixed中文english", "한국어 텍스트", "Привет мир",
    "مرحبا بالعالم", "emoji 😀👍🏽 and ❤️", "math ∑∫√ ≤ ≥ ± × ÷", "$100 & 50% off #1 @home ~tilde `tick`",
    "a-b_c.d,e;f:g!h?i'j\"k(l)m[n]o{p}q<r>s/t\\u|v^w=x+y*z", "...!!!???---", "«quotes» „low“ ‘single’",
    "dont don't won't y'all", "supercalifragilisticexpialidocious", "x" * 120,
    "pneumonoultramicroscopicsilicovolcanoconiosis is long", "2024-12-04 10:30:59 +0100",
    "3.14159 1,000,000 0x1F 1e-9", "[CLS] [SEP] [MASK] [UNK] [PAD]", "text[SEP]more[CLS]", "[cls] lower",
    "[UNK]token", "zero\u200bwidth\u200djoiner\ufeffbom", "control\x01\x02\x7fchars",
    "tab\tnew\nline\rcr\x0bvt\x0cff", "non\u00a0breaking\u3000ideographic\u2003em", "\ufffd replacement",
    "soft\u00adhyphen", "ﬁ ligature ﬀ", "Ω ohm ω omega", "İstanbul ǅungla", "ß ẞ", "ǈ titlecase",
    "𝐀𝐁𝐂 math bold", "𠀀𠀁 extension B", "\U0002b820 boundary \U0002b920", "Ꭰ cherokee",
    "model tokens attention layers networks", "un believ able", "resumed resumes", "hellos worlds",
]


def tokenize(exe, model, text, add, parse):
    cmd = [exe, "-m", model, "--stdin", "--ids", "--no-escape", "--log-disable"]
    if not add:
        cmd.append("--no-bos")
    if not parse:
        cmd.append("--no-parse-special")
    r = subprocess.run(cmd, input=text.encode("utf-8", "surrogatepass"), capture_output=True)
    if r.returncode != 0:
        raise SystemExit("llama-tokenize failed on %r: %s" % (text, r.stderr.decode(errors="replace")[-400:]))
    line = [l for l in r.stdout.decode().splitlines() if l.startswith("[")][-1]
    return json.loads(line)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-tokenize", required=True)
    ap.add_argument("--models", default="/tmp/anvil-wpm-golden")
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "tests", "data"))
    args = ap.parse_args()
    os.makedirs(args.models, exist_ok=True)
    for variant, extra in (("wpm", []), ("wpm-cased", ["--cased"]), ("wpm-bge", ["--vocab", "bge"])):
        model = os.path.join(args.models, "tok-%s.gguf" % variant)
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_embed_model.py"), "--family", "bert",
                        "--vocab-only", "--out", model] + extra, check=True, stdout=subprocess.DEVNULL)
        cases = []
        for text in CASES:
            cases.append(dict(text=text, plain=tokenize(args.llama_tokenize, model, text, False, False),
                              special=tokenize(args.llama_tokenize, model, text, False, True),
                              added=tokenize(args.llama_tokenize, model, text, True, True)))
        out = dict(format="tokenizer-golden-wpm-v1", generator="tests/tokenizer/make_wpm_golden.py (llama-tokenize)",
                   model="tools/make_embed_model.py --family bert --vocab-only %s" % " ".join(extra), cases=cases)
        path = os.path.join(args.out_dir, "tokenizer-golden-%s.json" % variant)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(out, f, ensure_ascii=False, indent=0)
            f.write("\n")
        print("%s: %d cases" % (path, len(cases)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
