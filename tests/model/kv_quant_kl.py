#!/usr/bin/env python3
"""kv_quant_kl: what a quantized KV cache costs a whole model, against llama.cpp's own cost.

  kv_quant_kl.py --anvil build/anvil --model M.gguf --base B.kld.gz [--vulkan] [--out S.json]
                 [--max-kl-q4 X --max-kl-q8 Y]
  kv_quant_kl.py --anvil build/anvil --model M.gguf --write-base B.kld.gz [--ctx 128]

Anvil side: `anvil eval --tokens` of the base's tokens with --kv-type f16, q8_0 and q4_0 (the
same weights and backend; only the cache type differs). Per type: KL(Anvil f16 || Anvil T)
per scored position (the cost of the cache type alone), KL(llama.cpp f16 || Anvil T), and the
greedy tokens. --base is a committed llama-perplexity --kl-divergence-base dump made with an F16
KV cache (tests/data/golden/kvq/*.kld.gz); --write-base makes it with today's llama.cpp and
prints llama.cpp's own KL for -ctk/-ctv q4_0 with -fa on against it, with and without its K/V
rotation (LLAMA_ATTN_ROT_DISABLE; Anvil rotates where llama.cpp does, so the bound is on the
default number) (the numbers
of tests/data/golden/kvq/manifest.json; regen.sh there). Exit 1 when the mean KL(Anvil f16 ||
Anvil T) exceeds --max-kl-T (x10 for a single position), or when Anvil's f16 run differs from
llama.cpp's f16 by more than 1e-3 mean KL (then the comparison means nothing).
"""
import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from moe_vs_llamacpp import DEFAULT_BIN, TEXT, read_kld_base  # noqa: E402  (the same dump format and text)

TYPES = ("f16", "q8_0", "q4_0")


def llama_kld(bin_dir, model, txt, ctx, base, kv, rot=True):
    """llama.cpp's mean KL of -ctk/-ctv kv (flash attention on) against base, None if it printed none.
    rot=False sets LLAMA_ATTN_ROT_DISABLE=1: today's llama.cpp rotates K and V (Walsh-Hadamard, when
    head_dim % 64 == 0) before quantizing them, as Anvil does (engine/model/kv_rot.h; ANVIL_KV_ROTATION=0
    is Anvil's switch); without it both store plain Q4_0."""
    log = base + "." + kv + ".log"  # a file: through a pipe the table at the end goes missing
    env = dict(os.environ, LLAMA_ATTN_ROT_DISABLE="0" if rot else "1")
    with open(log, "w") as lf:
        r = subprocess.run([os.path.join(bin_dir, "llama-perplexity"), "-m", model, "-f", txt, "-c", str(ctx), "--chunks", "1",
                            "-t", "1", "-b", str(ctx), "-fa", "on", "-ctk", kv, "-ctv", kv, "--kl-divergence",
                            "--kl-divergence-base", base], stdout=lf, stderr=subprocess.STDOUT, env=env)
    out = open(log, encoding="utf-8", errors="replace").read()
    if r.returncode != 0:
        sys.exit("kv_quant_kl: llama-perplexity -ctk %s failed:\n%s" % (kv, out[-3000:]))
    # one chunk: no summary block, the chunk's row of the table ("chunk PPL ln(PPL(Q)/PPL(base))
    # KL Divergence ..."): 1, PPL, +-, err, ln ratio, +-, err, KL, +-, err, ...
    m = re.search(r"KL Divergence.*\n\s*1\s+(.*)", out)
    if not m:  # seen for some models and types: the header without the row
        print("kv_quant_kl: no KL row in llama-perplexity's output for -ctk %s" % kv, file=sys.stderr)
        return None
    return float(m.group(1).split()[6])


def anvil_eval(a, toks, kv, td):
    dump = os.path.join(td, "anvil-%s.json" % kv)
    env = dict(os.environ)
    if a.vulkan:  # the Khronos layer on: it must be inserted and report nothing
        env.update(ANVIL_DEVICE="vulkan0", ANVIL_VK_VISIBLE_DEVICES="0", ANVIL_VK_VALIDATE="1", VK_LOADER_DEBUG="layer")
    else:
        env.update(ANVIL_DEVICE="cpu")
    cmd = [a.anvil, "eval", a.model, "--tokens", ",".join(map(str, toks)), "--no-bos", "--n-gen", str(a.n_gen),
           "--ctx", str(len(toks) + a.n_gen + 1), "--kv-type", kv, "-t", "1", "--dump", dump]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit("kv_quant_kl: anvil eval --kv-type %s failed:\n%s" % (kv, r.stderr[-3000:]))
    if a.vulkan:
        if 'Insert instance layer "VK_LAYER_KHRONOS_validation"' not in r.stderr:
            sys.exit("kv_quant_kl: the Khronos validation layer was not inserted")
        msgs = [ln for ln in r.stderr.splitlines() if "vulkan validation" in ln or "not installed" in ln]
        if msgs:
            sys.exit("kv_quant_kl: validation messages:\n" + "\n".join(msgs[:20]))
    d = json.load(open(dump))
    return np.array([p["logprobs"] for p in d["positions"]], dtype=np.float64), d["generated"]


def kl_rows(lp_ref, lp):
    p = np.exp(lp_ref)
    p /= p.sum(axis=1, keepdims=True)
    return (p * (np.log(p) - lp)).sum(axis=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--anvil", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--bin", default=os.environ.get("LLAMACPP_BIN", DEFAULT_BIN))
    ap.add_argument("--ctx", type=int, default=128)
    ap.add_argument("--n-gen", type=int, default=8)
    ap.add_argument("--vulkan", action="store_true")
    ap.add_argument("--base")
    ap.add_argument("--write-base")
    ap.add_argument("--max-kl-q4", type=float)
    ap.add_argument("--max-kl-q8", type=float)
    ap.add_argument("--out")
    ap.add_argument("--expect-digest", help="refuse a model whose weights digest differs (the one --base was made from)")
    a = ap.parse_args()
    if a.expect_digest:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
        import make_test_model
        got = make_test_model.weights_digest(a.model)
        if got != a.expect_digest:
            sys.exit("kv_quant_kl: %s has weights digest %s, the base was made from %s" % (a.model, got, a.expect_digest))
    if not a.base and not a.write_base:
        sys.exit("kv_quant_kl: give --base or --write-base")
    res = {"model": os.path.basename(a.model), "backend": "vulkan" if a.vulkan else "cpu"}
    with tempfile.TemporaryDirectory() as td:
        txt, base = os.path.join(td, "t.txt"), os.path.join(td, "base.bin")
        with open(txt, "w") as f:
            f.write(TEXT)
        if a.base:
            with gzip.open(a.base, "rb") as fi, open(base, "wb") as fo:
                fo.write(fi.read())
        else:
            r = subprocess.run([os.path.join(a.bin, "llama-perplexity"), "-m", a.model, "-f", txt, "-c", str(a.ctx), "--chunks", "1",
                                "-t", "1", "-b", str(a.ctx), "-fa", "on", "-ctk", "f16", "-ctv", "f16", "--kl-divergence-base", base],
                               capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit("kv_quant_kl: llama-perplexity failed:\n" + r.stderr[-3000:])
            with open(base, "rb") as fi, gzip.GzipFile(a.write_base, "wb", mtime=0) as fo:
                fo.write(fi.read())
            # (q4_0 only: today's llama-perplexity prints no chunk row for -ctk q8_0 here)
            res["llamacpp_kl_mean"] = {"q4_0": llama_kld(a.bin, a.model, txt, a.ctx, base, "q4_0"),
                                       "q4_0_no_rotation": llama_kld(a.bin, a.model, txt, a.ctx, base, "q4_0", rot=False)}
        n_ctx, n_vocab, toks, first, ref = read_kld_base(base)
        import gguf
        rd = gguf.GGUFReader(a.model)
        fld = rd.fields.get("tokenizer.ggml.add_bos_token")
        if fld and bool(fld.parts[fld.data[0]][0]):  # llama-perplexity puts BOS first
            bos = rd.fields["tokenizer.ggml.bos_token_id"]
            toks[0] = int(bos.parts[bos.data[0]][0])
        runs = {kv: anvil_eval(a, toks[:n_ctx - 1], kv, td) for kv in TYPES}
    lp = {kv: runs[kv][0][first:n_ctx - 1] for kv in TYPES}
    res["positions"] = int(lp["f16"].shape[0])
    vs_llama = {kv: kl_rows(ref, lp[kv]) for kv in TYPES}
    vs_f16 = {kv: kl_rows(lp["f16"], lp[kv]) for kv in ("q8_0", "q4_0")}
    res["kl_vs_llamacpp_f16"] = {kv: float(vs_llama[kv].mean()) for kv in TYPES}
    res["kl_vs_anvil_f16_mean"] = {kv: float(vs_f16[kv].mean()) for kv in vs_f16}
    res["kl_vs_anvil_f16_max"] = {kv: float(vs_f16[kv].max()) for kv in vs_f16}
    top_f16 = lp["f16"].argmax(axis=1)
    res["top1_agree_with_f16"] = {kv: float((lp[kv].argmax(axis=1) == top_f16).mean()) for kv in vs_f16}
    res["greedy"] = {kv: runs[kv][1] for kv in TYPES}
    print(json.dumps(res))
    if a.out:
        json.dump(res, open(a.out, "w"), indent=1)
    ok = True
    if res["kl_vs_llamacpp_f16"]["f16"] > 1e-3:
        print("kv_quant_kl: Anvil's f16 run is %.3g from llama.cpp's" % res["kl_vs_llamacpp_f16"]["f16"])
        ok = False
    for kv, lim in (("q4_0", a.max_kl_q4), ("q8_0", a.max_kl_q8)):
        if lim is not None and (res["kl_vs_anvil_f16_mean"][kv] > lim or res["kl_vs_anvil_f16_max"][kv] > 10 * lim):
            print("kv_quant_kl: %s KV: mean KL %.3g (max %.3g) over the limit %.3g" % (kv, res["kl_vs_anvil_f16_mean"][kv],
                                                                                   res["kl_vs_anvil_f16_max"][kv], lim))
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
