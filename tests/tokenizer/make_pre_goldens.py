#!/usr/bin/env python3
"""make_pre_goldens: llama.cpp's token ids for every tokenizer.ggml.pre name it accepts, on one
vocabulary, for test_tokenizer_pre.

  --models DIR   writes DIR/tok-pre-<name>.gguf for every name in the golden file, each a
                 vocabulary-only GGUF (tokenizer.ggml.model "gpt2") made from the committed
                 byte-level BPE vocabulary ../data/tokenizer-bpe-vocab.json plus a token for
                 every adjacent character pair of the test strings (with_boundary_bigrams),
                 with tokenizer.ggml.pre = <name>, and DIR/tokenizer-golden-pre.json (the golden
                 file, unzipped). Needs gguf + numpy only (the ctest fixture).
  --goldens      regenerates ../data/tokenizer-golden-pre.json.gz: takes every name from
                 llama.cpp's src/llama-vocab.cpp, writes the models into a temporary folder and
                 runs llama-tokenize (--ids --no-bos --no-parse-special --no-escape -f) on every
                 test string; one string is also run with BOS allowed, for the add_bos flag.
                 LLAMACPP (default ~/.cache/llamacpp-current/src/llama.cpp) points at the tree.

The families whose words are raw UTF-8 (byte_encode = false in llama.cpp: gemma4 and its alias,
mmbert, sarvam-moe, whitespace) get the same vocabulary converted to SentencePiece form (bytes
decoded, ' ' written as U+2581, <0xNN> byte tokens), as their converters write it.
Deterministic: same inputs, same files.
"""
import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB_JSON = os.path.join(HERE, "..", "data", "tokenizer-bpe-vocab.json")
GOLDEN = os.path.join(HERE, "..", "data", "tokenizer-golden-pre.json.gz")
LLAMACPP = os.environ.get("LLAMACPP", os.path.expanduser("~/.cache/llamacpp-current/src/llama.cpp"))

RAW_UTF8 = {"gemma4", "granite-embed-multi-311m", "mmbert", "sarvam-moe", "whitespace"}
NORMAL, CONTROL, BYTE = 1, 3, 6
SPECIAL = ["<|endoftext|>", "<s>", "</s>"]


def gpt2_byte_decoder():
    bs = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def with_boundary_bigrams(vocab, strings):
    """The vocabulary plus, for every test string, a token for each of its characters (byte
    merges) and for each pair of adjacent characters (one merge, ranked after the trained ones).
    BPE then joins two characters exactly when the pre-tokenizer put them in one word, so the
    ids show every word boundary (the trained merges alone never cross GPT-2's boundaries and
    would hide most pre-tokenizer differences)."""
    enc = {b: c for c, b in gpt2_byte_decoder().items()}
    text = lambda bs: "".join(enc[x] for x in bs)  # noqa: E731
    tokens, merges = list(vocab["tokens"]), list(vocab["merges"])
    have = set(tokens)

    def add(left, right):
        t = left + right
        if t not in have:
            have.add(t)
            tokens.append(t)
            merges.append(left + " " + right)

    # a newline run that no merge builds: taken whole only where llama.cpp looks newline runs up
    # (gemma4, mmbert) or whole words (ignore_merges)
    if text(b"\n\n\n") not in have:
        have.add(text(b"\n\n\n"))
        tokens.append(text(b"\n\n\n"))
    for s in strings:
        chars = [c.encode("utf-8", "surrogatepass") for c in s]
        for b in chars:
            for i in range(1, len(b)):
                add(text(b[:i]), text(b[i:i + 1]))
        for a, b in zip(chars, chars[1:]):
            add(text(a), text(b))
    return {"tokens": tokens, "merges": merges}


def raw_utf8_vocab(tokens, merges):
    """The byte-level vocabulary as SentencePiece-style BPE: byte tokens, then every token whose
    bytes are valid UTF-8, spaces as U+2581; merges whose halves both survive."""
    dec = gpt2_byte_decoder()

    def conv(t):
        try:
            return bytes(dec[c] for c in t).decode("utf-8").replace(" ", "\u2581")
        except (UnicodeDecodeError, KeyError):
            return None

    out, seen = ["<0x%02X>" % b for b in range(256)], set()
    types = [BYTE] * 256
    for t in tokens:
        c = conv(t)
        if c is not None and c not in seen:
            seen.add(c)
            out.append(c)
            types.append(NORMAL)
    new_merges = []
    for m in merges:
        a, b = m.split(" ", 1)
        ca, cb = conv(a), conv(b)
        if ca is not None and cb is not None and ca + cb in seen:
            new_merges.append(ca + " " + cb)
    return out, types, new_merges


def write_vocab_gguf(path, name, pre, toks, types, merges, bos, eos, add_bos=None):
    """A vocab-only llama-arch GGUF (a byte-level BPE vocabulary under tokenizer.ggml.pre = pre),
    the form llama.cpp's models/ggml-vocab-*.gguf take; add_bos None: the key is not written."""
    import gguf
    w = gguf.GGUFWriter(path, "llama")
    w.add_name(name)
    w.add_context_length(256)
    w.add_embedding_length(64)
    w.add_block_count(1)
    w.add_feed_forward_length(128)
    w.add_head_count(2)
    w.add_head_count_kv(2)
    w.add_rope_dimension_count(32)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(len(toks))
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(toks)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(bos)
    w.add_eos_token_id(eos)
    if add_bos is not None:
        w.add_add_bos_token(add_bos)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_model(path, pre, vocab):
    if pre in RAW_UTF8:
        toks, types, merges = raw_utf8_vocab(vocab["tokens"], vocab["merges"])
    else:
        toks, types, merges = list(vocab["tokens"]), [NORMAL] * len(vocab["tokens"]), list(vocab["merges"])
    toks += SPECIAL
    types += [CONTROL] * len(SPECIAL)
    write_vocab_gguf(path, "tok-pre-" + pre, pre, toks, types, merges, toks.index("<s>"), toks.index("</s>"))


def model_path(d, pre):
    return os.path.join(d, "tok-pre-%s.gguf" % pre)


def llama_names():
    src = open(os.path.join(LLAMACPP, "src", "llama-vocab.cpp"), encoding="utf-8").read()
    return list(dict.fromkeys(re.findall(r'tokenizer_pre == "([^"]*)"', src)))


def test_strings():
    S = []

    def add(*xs):
        for x in xs:
            if x not in S:
                S.append(x)

    # llama.cpp's own tokenizer test inputs (models/ggml-vocab-*.gguf.inp), in file order
    inp = sorted(f for f in os.listdir(os.path.join(LLAMACPP, "models")) if f.endswith(".gguf.inp"))
    for f in inp:
        with open(os.path.join(LLAMACPP, "models", f), encoding="utf-8") as fh:
            add(*fh.read().split("\n__ggml_vocab_test__\n"))
    add("Héllo wörld, ça va? Ñandú, Ærøskøbing, Łódź, naïve café résumé façade",
        "Съешь же ещё этих мягких французских булок, да выпей чаю. ПриветМир HTTPСервер",
        "Καλημέρα κόσμε! ΑΒΓΔ αβγδ ΣίσυφοςΦ", "你好，世界！我爱自然语言处理。中文English混合123",
        "ひらがな カタカナ 漢字まじり文。ｶﾀｶﾅ", "안녕하세요 세계! 한국어 텍스트입니다.", "مرحبا بالعالم، كيف حالك؟ ١٢٣",
        "नमस्ते दुनिया, यह हिंदी है।", "สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่าง", "שלום עולם", "Tiếng Việt có dấu: Đường phố",
        "def f(x):\n\tif x > 0:\n\t\treturn x ** 2\n    return -x  # comment\n\n\n",
        "int main(void) {\n    printf(\"%d\\n\", 42);\r\n\treturn 0;\n}\n",
        "for (i = 0; i < n; i++) { a[i] += b[i] * c; }  // x+=1; y-=2; z<<=3; p->q; a::b; x => y",
        "<div class=\"a\">&nbsp;</div> <sentinel:12> IMGIMGABCZ IMGIMGAAAAAZ", "   \t\t  \n\n  \t x", "\t\t\t", "\n\n\n\n",
        "1 12 123 1234 12345 123456 1234567 12345678 123456789 1234567890 12345678901234567890",
        "3.14159 1,000,000 2024-01-15 0x1F 1e-10 -42 +7 ½ ¼ Ⅻ ٣ ४ １２３ ²³ ①②", "a1b22c333d4444e55555",
        "👋🏽 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️ 👍🏿 🇩🇪🇯🇵 😀😃😄 🧑🏻‍💻 ✊🏾", "emoji👍in🔥words", "I'm I'M you're YOU'RE we'll WE'LL it'S they'Ve he'D I'd",
        "rock 'n' roll can't won't y'all'd've 'tis", "a  b   c    d     e      f", "x" + " " * 20 + "y",
        "a\u00a0b\u3000c\u2028d\u2029e\u0085f\u180eg\u200bh\u202fi", "\u00e9 e\u0301 \u0915\u094d\u0937 \u0e01\u0e34",
        "CamelCaseWord XMLHttpRequest iPhone McDonald's ÉCOLEétudiant", "\ufeffBOM and \ufffd replacement and \U0001F600",
        "mixed\r\nline\rendings\n\r\n", "Unicode numbers: \U0001D7CE\U0001D7CF \U00011F50 \U0001D2C0", "TAB\tTAB\t\tEND",
        "https://example.com/path?q=1&r=2#frag user@example.org", "$100 €200 £300 ¥400 ₹500 10% 5‰", "((([[[{{{}}}]]])))...!!!???",
        "a'b'c 'quoted' \"double\" `back` ‘curly’ “curly”", "日本語 123 テスト456 한글789 中文0",
        "it'sfoo we'llbe I'mnot x'tisn't DON'TCARE you'REady", "x\n\n\ny\n\n\n\nz \n\n\n",
        "x\u00a0\u00a0y \u3000\u3000z\u2028\n w \u00a0\nq\u2003\u2003\u2003r\u0085\u0085s  \u00a0t", "end\u00a0\u00a0",
        "\u3000\u3000開始 (\u00a0x\u00a0) 1\u00a02\u202f3")
    with open(os.path.join(HERE, "corpus.txt"), encoding="utf-8") as f:
        corpus = f.read()
    add(corpus[:3000], corpus[15000:18000], corpus[-3000:])
    return S


def run_llama_tokenize(binary, model, text, no_bos=True):
    with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as f:
        f.write(text.encode("utf-8"))
        path = f.name
    try:
        cmd = [binary, "-m", model, "-f", path, "--ids", "--no-parse-special", "--no-escape", "--log-disable"]
        if no_bos:
            cmd.append("--no-bos")
        r = subprocess.run(cmd, capture_output=True, timeout=120)
    finally:
        os.unlink(path)
    if r.returncode != 0:
        err = r.stderr.decode(errors="replace")
        if "GGML_ASSERT" in err:  # llama.cpp aborts on this input: recorded as null, skipped by the test
            print("  llama-tokenize aborts on %r: %s" % (text[:40], err[err.index("GGML_ASSERT"):].splitlines()[0]))
            return None
        raise RuntimeError("llama-tokenize failed on %s: %s" % (model, err[-500:]))
    line = [l for l in r.stdout.decode().splitlines() if l.startswith("[")][-1]
    return json.loads(line)


def goldens():
    binary = os.path.join(LLAMACPP, "build-cpu", "bin", "llama-tokenize")
    with open(VOCAB_JSON, encoding="utf-8") as f:
        vocab = json.load(f)
    names = llama_names()
    strings = test_strings()
    vocab = with_boundary_bigrams(vocab, strings)
    out = {"source": "tests/tokenizer/make_pre_goldens.py --goldens (llama-tokenize, %s)" % LLAMACPP,
           "llama_cpp_version": subprocess.run([binary, "--version"], capture_output=True,
                                               text=True).stderr.strip().split("\n")[0],
           "strings": strings, "names": {}}
    first_of = {}
    with tempfile.TemporaryDirectory() as d:
        for name in names:
            path = model_path(d, name)
            write_model(path, name, vocab)
            ids = [run_llama_tokenize(binary, path, s) for s in strings]
            bos = run_llama_tokenize(binary, path, "Hello world", no_bos=False)
            key = json.dumps(ids)
            entry = {"bos_hello": bos}
            if key in first_of:
                entry["same_ids_as"] = first_of[key]
            else:
                first_of[key] = name
                entry["ids"] = ids
            out["names"][name] = entry
            print("%-26s %s" % (name, entry.get("same_ids_as", "%d ids" % sum(len(x) for x in ids if x))), flush=True)
    data = json.dumps(out, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    with gzip.GzipFile(GOLDEN, "wb", mtime=0) as f:
        f.write(data)
    print("%s: %d names, %d strings, %d bytes" % (GOLDEN, len(names), len(strings), os.path.getsize(GOLDEN)))


def models(d):
    os.makedirs(d, exist_ok=True)
    with gzip.open(GOLDEN, "rb") as f:
        data = f.read()
    golden = json.loads(data)
    with open(VOCAB_JSON, encoding="utf-8") as f:
        vocab = with_boundary_bigrams(json.load(f), golden["strings"])
    for name in golden["names"]:
        path = model_path(d, name)
        write_model(path + ".tmp", name, vocab)
        os.replace(path + ".tmp", path)
    with open(os.path.join(d, "tokenizer-golden-pre.json"), "wb") as f:
        f.write(data)
    print("%s: %d vocabularies" % (d, len(golden["names"])))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", metavar="DIR")
    ap.add_argument("--goldens", action="store_true")
    a = ap.parse_args()
    if a.goldens:
        goldens()
    if a.models:
        models(a.models)
    if not a.goldens and not a.models:
        ap.error("give --goldens and/or --models DIR")
    return 0


if __name__ == "__main__":
    sys.exit(main())
