#!/usr/bin/env python3
"""vision_vs_llamacpp: Anvil's vision encoder and image-in-prompt evaluation against llama.cpp's
libmtmd (tests/vision/vision.cmake).

--make: writes BASE.gguf (tools/make_test_model.py), BASE-mmproj.gguf (tools/make_test_mmproj.py)
and BASE.ppm (the test image); the argument lists come ';'-separated from the manifest.
Else: runs vision_dump on those files and compares its JSON with the golden (llama.cpp's
mtmd_oracle on the same files): the text chunks' tokens must be equal, every image token's
embedding must have cosine >= --min-cos with llama.cpp's, and the softmax of every logits row
(the text before and after the image) must be within --max-kl (KL(llama.cpp || Anvil), max
over positions). Prints one table row: case, backend, cosine min, KL mean/max after the image.
"""
import argparse
import gzip
import json
import math
import subprocess
import sys


def log_softmax(row):
    m = max(row)
    s = math.log(sum(math.exp(x - m) for x in row))
    return [x - m - s for x in row]


def kl(p_logits, q_logits):
    lp, lq = log_softmax(p_logits), log_softmax(q_logits)
    return sum(math.exp(a) * (a - b) for a, b in zip(lp, lq))


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na > 0 and nb > 0 else 0.0


def make(args):
    py = sys.executable
    steps = [
        [py, args.tools + "/make_test_model.py"] + args.make_model.split(";") + ["--out", args.base + ".gguf", "--if-changed"],
        [py, args.tools + "/make_test_mmproj.py"] + args.make_mmproj.split(";") + ["--out", args.base + "-mmproj.gguf"],
        [py, args.tools + "/make_test_mmproj.py"] + args.make_image.split(";") + ["--out", args.base + ".ppm"],
    ]
    for s in steps:
        subprocess.run([a for a in s if a], check=True)
    return 0


def compare(args):
    cmd = [args.dump, args.base + ".gguf", args.base + "-mmproj.gguf", args.base + ".ppm", args.prompt]
    if args.vulkan:
        cmd.append("--vulkan")
    if args.prompt_api:
        cmd.append("--plan" if args.plan else "--prompt-api")
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        print("FAIL: vision_dump exited %d: %s" % (r.returncode, r.stderr.strip()[-2000:]))
        return 1
    ours = json.loads(r.stdout)
    with gzip.open(args.golden, "rt") as f:
        gold = json.load(f)
    if args.prompt_api:   # vision_eval_prompt: the whole prompt's tokens and the last position's logits
        want = []
        for c in gold["chunks"]:
            want += c["tokens"] if c["type"] == "text" else [-1] * c["n_tokens"]
        if ours["tokens"] != want:
            print("FAIL: vision_eval_prompt tokens\n  anvil     %s\n  llama.cpp %s" % (ours["tokens"], want))
            return 1
        d = kl(gold["chunks"][-1]["logits"][-1], ours["last_logits"])
        print("vision_eval_prompt: %d tokens, KL of the last position %.3g" % (len(want), d))
        print("PASS" if d <= args.max_kl else "FAIL")
        return 0 if d <= args.max_kl else 1
    ok = True
    if [c["type"] for c in ours["chunks"]] != [c["type"] for c in gold["chunks"]]:
        print("FAIL: chunk types differ: %s vs %s" % ([c["type"] for c in ours["chunks"]], [c["type"] for c in gold["chunks"]]))
        return 1
    cos_min, kls_after, kls_all, after_image = 1.0, [], [], False
    for i, (a, g) in enumerate(zip(ours["chunks"], gold["chunks"])):
        if a["type"] == "image":
            after_image = True
            n, e = g["n_tokens"], gold["n_embd"]
            if a["n_tokens"] != n:
                print("FAIL: image tokens %d, llama.cpp %d" % (a["n_tokens"], n))
                return 1
            for t in range(n):
                c = cosine(a["embd"][t * e:(t + 1) * e], g["embd"][t * e:(t + 1) * e])
                cos_min = min(cos_min, c)
            continue
        if a["tokens"] != g["tokens"]:
            print("FAIL: chunk %d tokens differ:\n  anvil     %s\n  llama.cpp %s" % (i, a["tokens"], g["tokens"]))
            ok = False
            continue
        for ra, rg in zip(a["logits"], g["logits"]):
            d = kl(rg, ra)
            kls_all.append(d)
            if after_image:
                kls_after.append(d)
    if cos_min < args.min_cos:
        print("FAIL: image embedding cosine min %.6f < %.4f" % (cos_min, args.min_cos))
        ok = False
    if not kls_after:
        print("FAIL: no logits after the image")
        return 1
    kmax_all = max(kls_all)
    if kmax_all > args.max_kl:
        print("FAIL: KL max %.3g > %.3g" % (kmax_all, args.max_kl))
        ok = False
    print("| %s | %s | %.6f | %.2e / %.2e | %d image tokens |" % (
        args.golden.split("/")[-1].split(".")[0], "lavapipe" if args.vulkan else "CPU", cos_min,
        sum(kls_after) / len(kls_after), max(kls_after), gold["chunks"][[c["type"] for c in gold["chunks"]].index("image")]["n_tokens"]))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def run_greedy(args):
    """`anvil run --image` end to end: its greedy text against llama-mtmd-cli's (the chat template,
    the marker before the prompt, the image chunks, generation)."""
    cmd = [args.anvil, "run", args.base + ".gguf", "--local", "--mmproj", args.base + "-mmproj.gguf", "--image",
           args.base + ".ppm", "Describe it.", "-n", "12", "--temp", "0"]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)   # bytes: a random model's text
    with open(args.greedy, "rb") as f:
        want = f.read().strip(b"\n")
    got = r.stdout.strip(b"\n")
    print("anvil run:        %r\nllama-mtmd-cli:   %r" % (got, want))
    # Anvil prints an invalid UTF-8 byte as U+FFFD, llama.cpp as it is: compare the texts so decoded
    ok = r.returncode == 0 and got.decode(errors="replace") == want.decode(errors="replace")
    print("PASS" if ok else "FAIL" + (" (exit %d: %s)" % (r.returncode, r.stderr.decode(errors="replace").strip()[-500:]) if r.returncode else ""))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="path prefix of the case's files")
    ap.add_argument("--make", action="store_true")
    ap.add_argument("--make-model", default="")
    ap.add_argument("--make-mmproj", default="")
    ap.add_argument("--make-image", default="")
    ap.add_argument("--tools")
    ap.add_argument("--dump", help="the vision_dump binary")
    ap.add_argument("--golden")
    ap.add_argument("--prompt")
    ap.add_argument("--max-kl", type=float, default=1e-3)
    ap.add_argument("--min-cos", type=float, default=0.999)
    ap.add_argument("--vulkan", action="store_true")
    ap.add_argument("--anvil", help="with --greedy: the anvil binary")
    ap.add_argument("--greedy", help="llama-mtmd-cli's 12-token greedy reply to 'Describe it.' with the image")
    ap.add_argument("--prompt-api", action="store_true", help="check vision_eval_prompt's tokens and last logits instead")
    ap.add_argument("--plan", action="store_true", help="with --prompt-api: through vision_plan, resent twice (cache, prefix)")
    args = ap.parse_args()
    if args.make:
        return make(args)
    return run_greedy(args) if args.greedy else compare(args)


if __name__ == "__main__":
    sys.exit(main())
