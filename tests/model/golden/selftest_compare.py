#!/usr/bin/env python3
"""selftest_compare: checks tests/model/compare_golden.py itself on real llama.cpp goldens: an exact
copy and a copy with float32-level noise must PASS, and every kind of perturbation (logit noise
beyond the limit, a swapped top-1, a changed greedy token, other tokens, NaN, a short vocabulary,
a missing position) must FAIL. Runs without Anvil. Prints one line per case."""
import argparse
import copy
import json
import math
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
DATA = os.path.join(ROOT, "tests", "data", "golden")
sys.path.insert(0, os.path.join(ROOT, "tests", "model"))
import compare_golden  # noqa: E402

failures = 0


def ns(**kw):
    d = dict(max_kl=1e-8, margin=0.05, n_greedy=None, greedy_margin=0.0, max_dlogprob=1e-3, min_mass=0.0)
    d.update(kw)
    return argparse.Namespace(**d)


def expect(label, golden, anvil, want_ok, **kw):
    global failures
    ok, line, _, fails = compare_golden.compare(golden, anvil, ns(**kw), label)
    good = ok == want_ok
    failures += not good
    print("%s %-48s expected %s, got %s%s" % ("ok  " if good else "BAD ", label, "PASS" if want_ok else "FAIL",
                                              "PASS" if ok else "FAIL", ("  (" + fails[0] + ")") if fails else ""))


def to_anvil(golden):
    """An Anvil-style full dump equal to the golden (top-k goldens: the rest of the mass spread
    evenly over the other ids)."""
    a = {"format": "logprobs-v1", "n_vocab": golden["n_vocab"], "tokens": list(golden["tokens"]),
         "generated": list(golden["generated"]), "positions": []}
    for p in golden["positions"]:
        if golden["format"] == "logprobs-topk-v1":
            n = golden["n_vocab"]
            rest = max(1e-30, 1.0 - sum(math.exp(v) for v in p["top_logprobs"]))
            lp = [math.log(rest / (n - len(p["top_ids"])))] * n
            for j, v in zip(p["top_ids"], p["top_logprobs"]):
                lp[j] = v
        else:
            lp = [-math.inf if v is None else v for v in p["logprobs"]]
        a["positions"].append({"pos": p["pos"], "input_token": p["input_token"], "logprobs": lp})
    return a


def top2(lp):
    order = sorted(range(len(lp)), key=lambda j: -lp[j])
    return order[0], order[1], math.exp(lp[order[0]]) - math.exp(lp[order[1]])


def cases(name, golden):
    rnd = random.Random(5)
    base = to_anvil(golden)
    expect(name + ": identical", golden, base, True)
    a = copy.deepcopy(base)
    for p in a["positions"]:
        p["logprobs"] = [v + rnd.gauss(0, 1e-6) for v in p["logprobs"]]
    expect(name + ": float32-level noise", golden, a, True)
    a = copy.deepcopy(base)
    for p in a["positions"]:
        p["logprobs"] = [v + rnd.gauss(0, 0.05) for v in p["logprobs"]]
    expect(name + ": logit noise 0.05, F32 limits", golden, a, False)
    expect(name + ": logit noise 0.05, KL limit 3e-2", golden, a, True, max_kl=3e-2, max_dlogprob=None)
    # swap the top two at the first position with a clear margin
    a = copy.deepcopy(base)
    for p in a["positions"]:
        i1, i2, m = top2(p["logprobs"])
        if m > 0.1:
            p["logprobs"][i1], p["logprobs"][i2] = p["logprobs"][i2], p["logprobs"][i1]
            break
    expect(name + ": top-1 swapped (margin > 0.1)", golden, a, False, max_kl=10.0, max_dlogprob=None)
    a = copy.deepcopy(base)
    a["generated"][3] = (a["generated"][3] + 1) % golden["n_vocab"]
    expect(name + ": greedy token 3 changed", golden, a, False)
    a = copy.deepcopy(base)
    a["generated"] = a["generated"][:-1]
    expect(name + ": greedy continuation one short", golden, a, False)
    margins = golden.get("greedy_margins") or []
    tie = next((i for i, m in enumerate(margins) if m <= 0.01), None)
    if tie is not None and tie + 1 < len(margins):
        a = copy.deepcopy(base)
        a["generated"][tie] = (a["generated"][tie] + 1) % golden["n_vocab"]
        expect(name + ": greedy differs at near-tie step %d, margin 0.01" % tie, golden, a, True, greedy_margin=0.01)
        expect(name + ": same, strict greedy", golden, a, False)
        clear = next((i for i, m in enumerate(margins) if m > 0.01), None)
        if clear is not None:
            a = copy.deepcopy(base)
            a["generated"][clear] = (a["generated"][clear] + 1) % golden["n_vocab"]
            expect(name + ": greedy differs at clear step %d, margin 0.01" % clear, golden, a, False,
                   greedy_margin=0.01)
    a = copy.deepcopy(base)
    a["tokens"][5] = (a["tokens"][5] + 1) % golden["n_vocab"]
    expect(name + ": different token sequence", golden, a, False)
    a = copy.deepcopy(base)
    a["positions"][2]["logprobs"][7] = float("nan")
    expect(name + ": NaN", golden, a, False, max_kl=10.0, max_dlogprob=None)
    a = copy.deepcopy(base)
    a["positions"][1]["logprobs"] = a["positions"][1]["logprobs"][:-1]
    expect(name + ": vocabulary one short", golden, a, False)
    a = copy.deepcopy(base)
    del a["positions"][-1]
    expect(name + ": last position missing", golden, a, False)
    return base


def cli_check(golden_path, base):
    """The command line: exit 0 on an identical dump, 1 on a perturbed one."""
    global failures
    with tempfile.TemporaryDirectory() as tmp:
        good, bad = os.path.join(tmp, "good.json"), os.path.join(tmp, "bad.json")
        json.dump(base, open(good, "w"))
        b = copy.deepcopy(base)
        b["generated"][0] = (b["generated"][0] + 1) % base["n_vocab"]
        json.dump(b, open(bad, "w"))
        for path, want in ((good, 0), (bad, 1)):
            r = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "model", "compare_golden.py"), golden_path, path,
                                "--max-kl", "1e-8"], capture_output=True, text=True)
            good_rc = r.returncode == want
            failures += not good_rc
            print("%s cli on %s: exit %d (expected %d): %s" % ("ok  " if good_rc else "BAD ", os.path.basename(path),
                                                               r.returncode, want, r.stdout.strip().splitlines()[-1]))


def main():
    names = ["llama-f32", "gemma3-q5_1", "gemma3-270m-en"]
    found = 0
    for n in names:
        path = os.path.join(DATA, n + ".json.gz")
        if not os.path.exists(path):
            print("note: %s not present" % path)
            continue
        found += 1
        golden = compare_golden.load(path)
        if golden.get("format") == "logprobs-topk-v1":  # 262144-wide copies: 4 positions suffice
            golden["positions"] = golden["positions"][:4]
        base = cases(n, golden)
        if n == "llama-f32":
            cli_check(path, base)
    if found == 0:
        print("no golden files found")
        return 1
    print("%d cases wrong" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
