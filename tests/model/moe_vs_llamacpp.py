#!/usr/bin/env python3
"""moe_vs_llamacpp: Anvil against today's llama.cpp on one GGUF file (made for the MoE
families; works for any model both load): KL divergence per position and greedy tokens.

  moe_vs_llamacpp.py --anvil build/anvil --model M.gguf [--bin DIR] [--ctx 64] [--vulkan]
                     [--max-kl 1e-4] [--out SUMMARY.json] [--base B.bin.gz | --write-base B.bin.gz]

--base compares against a committed llama.cpp dump (tests/data/golden/moe/*.kld.gz; no llama.cpp
needed); --write-base runs llama.cpp and stores its dump there (the regeneration command is
tests/data/golden/regen-llamacpp.sh moe BUILD).

llama.cpp side: `llama-perplexity -m M -f TEXT -c CTX --chunks 1 -t 1 --kl-divergence-base B`
(TEXT: a fixed English paragraph, repeated) writes the chunk's tokens and, for positions
CTX/2 .. CTX-2, the log-softmax of the logits as 16-bit codes over a 16-nat range
(perplexity.cpp log_softmax: lp = min_log_prob + scale * code; error <= scale/2 = 1.2e-4).
Anvil side: `anvil eval --tokens` of the same tokens (the first replaced by BOS when the
vocabulary adds one, as llama-perplexity does) with --n-gen, f32 KV like the goldens.
Greedy: Anvil's first greedy tokens after the chunk against the argmax of llama.cpp's last
stored position, and Anvil's per-position argmax against llama.cpp's wherever llama.cpp's
top-1 leads by > 0.05 in probability. Exit 1 if the mean KL exceeds --max-kl (x10 for the
max) or a confident top-1 differs.
With --truth (quantized MoE files, issue 34): the verdict is instead Anvil's mean KL to the
unquantized model's logits (llama.cpp's dump of the F32 file) against llama.cpp's own KL to them
(from --base): within --truth-ratio (1.1x).
"""
import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

TEXT = ("The quick brown fox jumps over the lazy dog. A small language model reads a sequence of "
        "tokens and predicts the next one. Every layer has attention and a feed forward network; "
        "the experts of a mixture each see only the tokens the router sends them. ") * 8
DEFAULT_BIN = os.path.expanduser("~/.cache/llamacpp-current/src/llama.cpp/build-cpu/bin")


def read_kld_base(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"_logits_":
        sys.exit("moe_vs_llamacpp: %s is not a llama-perplexity logits file" % path)
    n_ctx, n_vocab, n_chunk = np.frombuffer(data, np.int32, 3, 8)
    off = 20
    tokens = np.frombuffer(data, np.int32, n_chunk * n_ctx, off)
    off += 4 * n_chunk * n_ctx
    nv = 2 * ((n_vocab + 1) // 2) + 4
    first = n_ctx // 2
    n_pos = n_ctx - 1 - first
    codes = np.frombuffer(data, np.uint16, n_pos * nv, off).reshape(n_pos, nv)
    hdr = codes[:, :4].copy().view(np.float32)  # scale, min_log_prob
    lp = hdr[:, 1:2].astype(np.float64) + hdr[:, 0:1].astype(np.float64) * codes[:, 4:4 + n_vocab]
    return int(n_ctx), int(n_vocab), tokens[:n_ctx].tolist(), first, lp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--anvil", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--bin", default=os.environ.get("LLAMACPP_BIN", DEFAULT_BIN))
    ap.add_argument("--ctx", type=int, default=64)
    ap.add_argument("--n-gen", type=int, default=8)
    ap.add_argument("--vulkan", action="store_true", help="run Anvil on vulkan0 (lavapipe in the tests)")
    ap.add_argument("--max-kl", type=float, default=None)
    ap.add_argument("--greedy-margin", type=float, default=0.0,
                    help="check the first greedy token only where llama.cpp's top-1 leads by more (near ties may flip)")
    ap.add_argument("--out")
    ap.add_argument("--base", help="llama-perplexity --kl-divergence-base dump (gzipped) to compare against")
    ap.add_argument("--write-base", help="run llama.cpp and write its dump here (gzipped)")
    ap.add_argument("--expect-digest", help="refuse a model whose weights digest differs (the one --base was made from)")
    ap.add_argument("--truth", help="llama.cpp's dump of the unquantized model (gzipped): judge this quantized model by "
                                    "its KL to that truth, against llama.cpp's own KL to it (--base)")
    ap.add_argument("--truth-ratio", type=float, default=1.1,
                    help="with --truth: pass iff Anvil's mean KL to the truth <= this x llama.cpp's")
    a = ap.parse_args()
    if a.truth and not a.base:
        ap.error("--truth needs --base (llama.cpp's dump of this quantized model)")
    if a.expect_digest:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
        import make_test_model
        got = make_test_model.weights_digest(a.model)
        if got != a.expect_digest:
            sys.exit("moe_vs_llamacpp: %s has weights digest %s, the golden was made from %s" % (a.model, got, a.expect_digest))
    with tempfile.TemporaryDirectory() as td:
        txt, base = os.path.join(td, "t.txt"), os.path.join(td, "base.bin")
        with open(txt, "w") as f:
            f.write(TEXT)
        if a.base:
            with gzip.open(a.base, "rb") as fi, open(base, "wb") as fo:
                fo.write(fi.read())
        r = None if a.base else subprocess.run([os.path.join(a.bin, "llama-perplexity"), "-m", a.model, "-f", txt, "-c", str(a.ctx),
                            "--chunks", "1", "-t", "1", "-b", str(a.ctx), "--kl-divergence-base", base],
                           capture_output=True, text=True)
        if r is not None and r.returncode != 0:
            sys.exit("moe_vs_llamacpp: llama-perplexity failed:\n" + r.stderr[-3000:])
        if a.write_base:
            with open(base, "rb") as fi, gzip.GzipFile(a.write_base, "wb", mtime=0) as fo:
                fo.write(fi.read())
        n_ctx, n_vocab, toks, first, ref = read_kld_base(base)
        import gguf
        rd = gguf.GGUFReader(a.model)
        fld = rd.fields.get("tokenizer.ggml.add_bos_token")
        add_bos = bool(fld.parts[fld.data[0]][0]) if fld else False
        if add_bos:
            bos = rd.fields["tokenizer.ggml.bos_token_id"]
            toks[0] = int(bos.parts[bos.data[0]][0])
        dump = os.path.join(td, "anvil.json")
        env = dict(os.environ)
        if a.vulkan:  # the Khronos layer on: it must be inserted and report nothing
            env.update(ANVIL_DEVICE="vulkan0", ANVIL_VK_VISIBLE_DEVICES="0", ANVIL_VK_VALIDATE="1",
                       VK_LOADER_DEBUG="layer")
        else:
            env.update(ANVIL_DEVICE="cpu")
        cmd = [a.anvil, "eval", a.model, "--tokens", ",".join(map(str, toks[:n_ctx - 1])), "--no-bos",
               "--n-gen", str(a.n_gen), "--ctx", str(2 * n_ctx), "--kv-type", "f32", "-t", "1", "--dump", dump]
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            sys.exit("moe_vs_llamacpp: anvil eval failed:\n" + r.stderr[-3000:])
        if a.vulkan:
            if 'Insert instance layer "VK_LAYER_KHRONOS_validation"' not in r.stderr:
                sys.exit("moe_vs_llamacpp: the Khronos validation layer was not inserted")
            msgs = [ln for ln in r.stderr.splitlines() if "vulkan validation" in ln or "not installed" in ln]
            if msgs:
                sys.exit("moe_vs_llamacpp: validation messages:\n" + "\n".join(msgs[:20]))
        d = json.load(open(dump))
    an = np.array([p["logprobs"] for p in d["positions"]], dtype=np.float64)[first:n_ctx - 1]
    pr = np.exp(ref)
    pr /= pr.sum(axis=1, keepdims=True)
    lref = np.log(pr)
    kl = (pr * (lref - an)).sum(axis=1)
    top = np.argsort(-pr, axis=1)
    conf = pr[np.arange(len(pr)), top[:, 0]] - pr[np.arange(len(pr)), top[:, 1]] > 0.05
    mism = int(((an.argmax(axis=1) != top[:, 0]) & conf).sum())
    greedy_first = int(d["generated"][0]) if d["generated"] else -1
    # llama.cpp's last stored position predicts the token after position n_ctx-2, i.e. what
    # Anvil generates first (it evaluated n_ctx-1 tokens)
    res = {"kl_per_position": [float("%.3g" % v) for v in kl], "model": os.path.basename(a.model), "backend": "vulkan" if a.vulkan else "cpu", "positions": len(kl),
           "kl_mean": float(kl.mean()), "kl_max": float(kl.max()), "top1_mismatch_confident": mism,
           "greedy_first_anvil": greedy_first, "greedy_first_llamacpp": int(top[-1, 0]),
           "greedy_first_match": greedy_first == int(top[-1, 0]), "anvil_greedy": d["generated"],
           "greedy_first_margin": float(pr[-1, top[-1, 0]] - pr[-1, top[-1, 1]])}
    if a.truth:
        # Two valid roundings of a quantized MoE diverge through router flips, so agreement with
        # llama.cpp's run is not the measure; distance from the unquantized model's logits is.
        with tempfile.TemporaryDirectory() as td:
            tp = os.path.join(td, "truth.bin")
            with gzip.open(a.truth, "rb") as fi, open(tp, "wb") as fo:
                fo.write(fi.read())
            t_ctx, t_vocab, t_toks, t_first, t_lp = read_kld_base(tp)
        if (t_ctx, t_vocab, t_first) != (n_ctx, n_vocab, first) or t_toks[1:] != toks[1:n_ctx]:
            sys.exit("moe_vs_llamacpp: %s is not a dump of the same tokens as %s" % (a.truth, a.base))
        pt = np.exp(t_lp)
        pt /= pt.sum(axis=1, keepdims=True)
        lt = np.log(pt)
        kl_anvil = (pt * (lt - an)).sum(axis=1)
        kl_llama = (pt * (lt - lref)).sum(axis=1)
        res.update(truth=os.path.basename(a.truth), kl_to_truth_anvil=float(kl_anvil.mean()),
                   kl_to_truth_llamacpp=float(kl_llama.mean()), kl_to_truth_ratio=float(kl_anvil.mean() / kl_llama.mean()))
    print(json.dumps(res))
    if a.out:
        json.dump(res, open(a.out, "w"))
    if a.truth:
        print("KL to the unquantized model's logits: Anvil %.4g, llama.cpp %.4g (ratio %.3f, limit %.2f)" % (
            res["kl_to_truth_anvil"], res["kl_to_truth_llamacpp"], res["kl_to_truth_ratio"], a.truth_ratio))
        return 0 if res["kl_to_truth_anvil"] <= a.truth_ratio * res["kl_to_truth_llamacpp"] else 1
    ok = mism == 0 and (res["greedy_first_match"] or res["greedy_first_margin"] <= a.greedy_margin)
    if a.max_kl is not None:
        ok = ok and res["kl_mean"] <= a.max_kl and res["kl_max"] <= 10 * a.max_kl
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
