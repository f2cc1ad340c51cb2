#!/usr/bin/env python3
"""greedy_vs_llamacpp: multi-token greedy continuations against today's llama.cpp
(`llama-completion`), for the unquantized synthetic models of one golden family folder
(tests/data/golden/<family>/manifest.json, entries ending in -f32): the text Anvil's
`anvil run --raw --temp 0 -n N` writes must equal the text llama-completion wrote for the same
prompt (committed in <family>/greedy.json; compared after UTF-8 decoding with replacement, runs of
U+FFFD as one: llama.cpp prints a lone byte token raw where Anvil prints U+FFFD).

  greedy_vs_llamacpp.py --anvil build/anvil --dir tests/data/golden/qwen35 --models DIR [--vulkan]
  greedy_vs_llamacpp.py --anvil build/anvil --dir ... --models DIR --write [--bin LLAMACPP_BIN]

--write runs llama-completion (`-p PROMPT -n N --temp 0 -no-cnv -t 1`) on each model and stores
its text. The first greedy token of every file is also checked by moe_vs_llamacpp.py; this adds
the next N-1 tokens (the KV cache and, for the hybrid models, the recurrent state carried through
generation).
"""
import argparse
import json
import os
import subprocess
import sys

PROMPT = "The quick brown fox jumps over the lazy dog. A small language model"
N_GEN = 16
DEFAULT_BIN = os.path.expanduser("~/.cache/llamacpp-current/src/llama.cpp/build-cpu/bin")


def norm(b):
    """Text as compared: UTF-8 with replacement, each run of replacement characters as one (a
    lone byte token is printed raw by llama.cpp, as U+FFFD by Anvil, and an invalid sequence of
    several bytes decodes to one or several U+FFFD depending on where the bytes break)."""
    t = b.decode("utf-8", "replace") if isinstance(b, bytes) else b
    out = []
    for ch in t:
        if ch == "\ufffd" and out and out[-1] == "\ufffd":
            continue
        out.append(ch)
    return "".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--anvil", required=True)
    ap.add_argument("--dir", required=True, help="a golden family folder with manifest.json")
    ap.add_argument("--models", required=True, help="where the fixtures wrote the models (<entry>.gguf)")
    ap.add_argument("--vulkan", action="store_true")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--bin", default=os.environ.get("LLAMACPP_BIN", DEFAULT_BIN))
    a = ap.parse_args()
    manifest = json.load(open(os.path.join(a.dir, "manifest.json")))["models"]
    names = [n for n, m in manifest.items() if n.endswith("-f32") and "golden" not in m and not m.get("greedy_skip")]
    path = os.path.join(a.dir, "greedy.json")
    if a.write:
        out = {"comment": "llama-completion -p PROMPT -n %d --temp 0 -no-cnv -t 1 on each unquantized model of "
                          "manifest.json (tests/model/greedy_vs_llamacpp.py --write)" % N_GEN,
               "prompt": PROMPT, "n_gen": N_GEN, "text": {}}
        for n in names:
            # today's llama-completion sometimes exits early with status 0 before its timing lines
            # (about 4 runs in 10 here): a run counts only when it printed them
            for attempt in range(20):
                r = subprocess.run([os.path.join(a.bin, "llama-completion"), "-m", os.path.join(a.models, n + ".gguf"),
                                    "-p", PROMPT, "-n", str(N_GEN), "--temp", "0", "--no-display-prompt", "-no-cnv",
                                    "-t", "1", "-s", "1", "--no-warmup"], stdin=subprocess.DEVNULL, capture_output=True,
                                   timeout=300)
                if r.returncode != 0:
                    sys.exit("greedy_vs_llamacpp: llama-completion failed on %s:\n%s" % (n, r.stderr[-2000:].decode()))
                if b"eval time" in r.stderr:
                    break
            else:
                sys.exit("greedy_vs_llamacpp: llama-completion never finished a run on %s" % n)
            out["text"][n] = norm(r.stdout)
        with open(path, "w") as f:
            json.dump(out, f, indent=1, ensure_ascii=True)
            f.write("\n")
        print("wrote %s (%d models)" % (path, len(names)))
        return 0
    golden = json.load(open(path))
    env = dict(os.environ)
    if a.vulkan:
        env.update(ANVIL_DEVICE="vulkan0", ANVIL_VK_VISIBLE_DEVICES="0", ANVIL_VK_VALIDATE="1")
    else:
        env.update(ANVIL_DEVICE="cpu")
    failed = 0
    for n in names:
        want = golden["text"].get(n)
        if want is None:
            print("FAIL %s: no llama.cpp text in %s (regenerate with --write)" % (n, path))
            failed += 1
            continue
        r = subprocess.run([a.anvil, "run", os.path.join(a.models, n + ".gguf"), golden["prompt"], "--raw", "--temp", "0",
                            "-n", str(golden["n_gen"]), "--local", "-t", "1", "--kv-type", "f32"],
                           stdin=subprocess.DEVNULL, capture_output=True, env=env, timeout=300)
        got = norm(r.stdout).rstrip("\n") if r.returncode == 0 else None
        want_s = norm(want).rstrip("\n")
        if a.vulkan and b"vulkan validation" in r.stderr:
            print("FAIL %s: validation messages" % n)
            failed += 1
        elif got == want_s:
            print("ok   %s: %d greedy tokens, the same text as llama.cpp (%d characters)" % (n, golden["n_gen"], len(got)))
        else:
            k = 0
            while got is not None and k < min(len(got), len(want_s)) and got[k] == want_s[k]:
                k += 1
            print("FAIL %s: differs from character %d\n  anvil:     %r\n  llama.cpp: %r\n%s" % (
                n, k, got, want_s, r.stderr[-500:].decode(errors="replace")))
            failed += 1
    print("%d passed, %d failed" % (len(names) - failed, failed))
    return 1 if failed or not names else 0


if __name__ == "__main__":
    sys.exit(main())
