#!/usr/bin/env python3
"""check_pre_table: Anvil's pre-tokenizer table (engine/tokenizer/tokenizer_pre.c) against
llama.cpp's source: for every name in llama_vocab::impl::load's tokenizer_pre chain, the regex
list and byte_encode of its llama_vocab_pre_type (llm_tokenizer_bpe's constructor) and the flags
the chain sets (clean_spaces, ignore_merges, add_bos, escape_whitespaces, special_bos_id,
add_sep) must be Anvil's. Compiles a small dumper with cc; needs the llama.cpp tree
(LLAMACPP, default ~/.cache/llamacpp-current/src/llama.cpp). Exit 0 when all agree.
"""
import ast
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
LLAMACPP = os.environ.get("LLAMACPP", os.path.expanduser("~/.cache/llamacpp-current/src/llama.cpp"))
DUMP = r'''
#include <stdio.h>
#include "tokenizer_impl.h"
static void js(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c == '\n') printf("\\n");
        else if (c == '\r') printf("\\r");
        else putchar(c);
    }
    putchar('"');
}
int main(void) {
    size_t n;
    const tok_pre_name *a = tok_pre_names(&n);
    printf("{");
    for (size_t i = 0; i < n; i++) {
        const tok_pre_family *f = tok_pre_family_of(a[i].pre);
        printf("%s", i ? "," : "");
        js(a[i].name);
        printf(":{\"flags\":%u,\"byte_encode\":%d,\"regex\":[", a[i].flags, f->byte_encode);
        for (int k = 0; k < TOK_MAX_REGEX && f->regex[k]; k++) {
            printf("%s", k ? "," : "");
            js(f->regex[k]);
        }
        printf("]}");
    }
    printf("}\n");
    return 0;
}
'''
FLAGS = {"clean_spaces = false": 1, "ignore_merges = true": 2, "add_bos = true": 4, "escape_whitespaces = true": 8,
         "special_bos_id = LLAMA_TOKEN_NULL": 16, "add_sep = true": 32}
FORCE_BOS = 64  # Anvil's flag for llama.cpp's separate Gemma 4 add_bos override


def anvil_table():
    with tempfile.TemporaryDirectory() as d:
        c, exe = os.path.join(d, "dump.c"), os.path.join(d, "dump")
        open(c, "w").write(DUMP)
        inc = ["-I" + os.path.join(ROOT, "engine", x) for x in ("tokenizer", "gguf", "base")]
        subprocess.run(["cc", "-std=c11", *inc, c, os.path.join(ROOT, "engine", "tokenizer", "tokenizer_pre.c"), "-o", exe],
                       check=True)
        return json.loads(subprocess.run([exe], check=True, capture_output=True, text=True).stdout)


def llama_table():
    src = open(os.path.join(LLAMACPP, "src", "llama-vocab.cpp"), encoding="utf-8").read()
    ctor = src[src.index("llm_tokenizer_bpe(const llama_vocab & vocab)"):]
    ctor = ctor[:ctor.index("std::vector<std::string> regex_exprs;")]
    regex, byte_encode, pending, last = {}, {}, [], []
    for m in re.finditer(r"case (LLAMA_VOCAB_PRE_TYPE_\w+):|default:|regex_exprs = \{(.*?)\};|byte_encode = false", ctor, re.S):
        t = m.group(0)
        if t.startswith("case"):
            pending.append(m.group(1))
        elif t == "default:":
            pending.append("default")
        elif t.startswith("regex_exprs"):
            body = "\n".join(l for l in m.group(2).split("\n") if not l.strip().startswith("//"))
            lst = [ast.literal_eval('"' + l + '"') for l in re.findall(r'"((?:[^"\\]|\\.)*)"', body)]
            for p in pending:
                regex[p] = lst
            last, pending = pending, []
        else:
            for p in last:
                byte_encode[p] = False
    load = src[src.index('} else if (tokenizer_pre == "default") {') - 200:]
    load = load[:load.index("unknown pre-tokenizer type")]
    names = {}
    for m in re.finditer(r'((?:tokenizer_pre == "[^"]*"\s*(?:\|\|)?\s*)+)\)\s*\{(.*?)\}', load, re.S):
        t = re.search(r"pre_type = (LLAMA_VOCAB_PRE_TYPE_\w+);", m.group(2)).group(1)
        flags = sum(v for k, v in FLAGS.items() if k in m.group(2))
        for name in re.findall(r'"([^"]*)"', m.group(1)):
            names[name] = {"regex": regex.get(t, regex["default"]), "byte_encode": byte_encode.get(t, True), "flags": flags}
    return names


def main():
    anvil, llama = anvil_table(), llama_table()
    bad = 0
    for name, want in llama.items():
        got = anvil.get(name)
        if got is None:
            print("missing in Anvil: %s" % name)
            bad += 1
            continue
        if got["regex"] != want["regex"] or bool(got["byte_encode"]) != want["byte_encode"] or \
                got["flags"] & ~FORCE_BOS != want["flags"]:
            print("differs: %s" % name)
            bad += 1
    extra = sorted(set(anvil) - set(llama) - {"gpt2"})
    for name in extra:
        print("not a llama.cpp name: %s" % name)
    print("%d llama.cpp names: %d differ, %d extra in Anvil (besides the 'gpt2' alias)" % (len(llama), bad, len(extra)))
    return 1 if bad or extra else 0


if __name__ == "__main__":
    sys.exit(main())
