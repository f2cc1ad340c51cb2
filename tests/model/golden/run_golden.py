#!/usr/bin/env python3
"""run_golden: one model-agreement test: runs `anvil eval` on a golden's model and token
sequence and checks the dump with compare_golden against the llama.cpp golden.

  run_golden.py --anvil BUILD/anvil --name llama-q4_0 --models-dir BUILD/test-models [-t 2]
  run_golden.py --anvil BUILD/anvil --name gemma3-270m-en [--use-prompt]

The name selects an entry of tests/data/golden/manifest.json (thresholds, model, KV type) and the
golden tests/data/golden/NAME.json.gz (tokens, greedy continuation, weights digest, context).
Before evaluating it checks that the model's weights are byte-identical to the ones the golden
was made from (for K-quants this checks `anvil quantize` against ggml's quantizer).
--use-prompt gives `anvil eval` the golden's prompt text instead of its token ids (the token
sequences must then agree too: an end-to-end tokenizer check).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
DATA = os.path.join(ROOT, "tests", "data", "golden")
sys.path.insert(0, os.path.join(ROOT, "tests", "model"))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import compare_golden  # noqa: E402
import make_test_model  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--anvil", required=True, help="the anvil binary (or a stand-in with the same CLI)")
    ap.add_argument("--name", required=True, help="golden name in manifest.json")
    ap.add_argument("--models-dir", help="folder of the generated synthetic models")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--use-prompt", action="store_true", help="pass the golden's prompt text, not its ids")
    ap.add_argument("--keep-dump", help="also write Anvil's dump here")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()

    with open(os.path.join(DATA, "manifest.json")) as f:
        man = json.load(f)
    entry = next((g for g in man["goldens"] + man["real"] if g["name"] == a.name), None)
    if entry is None:
        print("run_golden: no golden named %s in manifest.json" % a.name)
        return 2
    golden_path = os.path.join(DATA, a.name + ".json.gz")
    golden = compare_golden.load(golden_path)
    meta = golden["anvil_golden"]
    if "package" in entry:
        try:
            model = str(__import__(entry["package"]).assemble())
        except ImportError:
            print("run_golden: python package %s is not installed" % entry["package"])
            return 2
    else:
        if not a.models_dir:
            print("run_golden: --models-dir is required for synthetic goldens")
            return 2
        model = os.path.join(a.models_dir, entry["model"] + ".gguf")
    if not os.path.exists(model):
        print("run_golden: model %s does not exist" % model)
        return 2
    digest = make_test_model.weights_digest(model)
    if digest != meta["weights_sha256"]:
        print("run_golden: %s: FAIL: the weights of %s differ from the golden's (digest %s, golden %s)%s"
              % (a.name, model, digest[:16], meta["weights_sha256"][:16],
                 "; K-quant models come from `anvil quantize`: it is not byte-exact with ggml's quantizer"
                 if any(k in model for k in make_test_model.K_TYPES) else ""))
        return 1

    with tempfile.TemporaryDirectory() as tmp:
        dump = a.keep_dump or os.path.join(tmp, "anvil.json")
        cmd = [a.anvil, "eval", model]
        if a.use_prompt:
            cmd += ["--prompt", golden["prompt"]]
        else:
            cmd += ["--tokens", ",".join(map(str, golden["tokens"]))]
        cmd += ["--n-gen", str(meta["n_gen"]), "--ctx", str(meta["ctx"]), "--kv-type", meta["kv_type"],
                "-t", str(a.threads), "--dump", dump]
        print("$ " + " ".join(cmd if not a.use_prompt else [c if c != golden["prompt"] else repr(c) for c in cmd]),
              flush=True)
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print((r.stdout + r.stderr)[-3000:])
            print("run_golden: %s: FAIL: anvil eval exited with %d" % (a.name, r.returncode))
            return 1
        anvil = compare_golden.load(dump)

    d = man["defaults"]
    ns = argparse.Namespace(max_kl=entry["max_kl"], margin=entry.get("margin", d["margin"]),
                            n_greedy=entry.get("n_greedy"), greedy_margin=entry.get("greedy_margin", 0.0),
                            max_dlogprob=entry.get("max_dlogprob"), min_mass=0.0, verbose=a.verbose)
    ok, line, details, fails = compare_golden.compare(golden, anvil, ns, a.name)
    if a.verbose:
        print("\n".join(details))
    for f in fails[:10]:
        print("  FAIL: " + f)
    print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
