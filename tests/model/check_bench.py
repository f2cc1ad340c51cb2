#!/usr/bin/env python3
"""check_bench: runs `anvil bench` on a small GGUF model and checks its output, not its speed.

  check_bench.py --anvil build/anvil --model m.gguf

- `-o json`: parses (json module), one record per test with llama-bench's field names and
  types (n_prompt, n_gen, n_threads, n_gpu_layers, backends, avg_ts, stddev_ts, samples_ts ...)
  and Anvil's (device, model_bytes, kv_bytes, gbps, peak_gbps, pct_of_peak);
- the bandwidth accounting against an independent count made here with gguf-py: weight
  bytes per token = every blk.* tensor + output_norm + the output head (the embedding table
  when tied) + rope_freqs + ONE embedding row; KV bytes = mean over the generated tokens of
  the K and V rows each layer reads (sliding-window layers: the last `window` rows);
- avg_ts/stddev_ts are the mean/sample stddev of samples_ts, samples_ts = 1e9*n/samples_ns,
  gbps = (model_bytes + kv_bytes) * avg_ts / 1e9 and pct_of_peak = 100 * gbps / peak_gbps;
- `-o csv`, `-o jsonl` and the Markdown table parse and have one row per test;
- bad input (missing file, unknown option, bad list value) exits non-zero with one line.
"""
import argparse
import csv
import io
import json
import os
import statistics
import subprocess
import sys

import numpy as np
from gguf import GGUFReader, GGMLQuantizationType as QT

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)
    return cond


def close(a, b, rel=1e-5):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-12)


def field(reader, key):
    f = reader.fields.get(key)
    if f is None:
        return None
    v = f.parts[f.data[0]]
    return bytes(v).decode() if f.types[0].name == "STRING" else v.tolist()[0]


def independent_counts(path, kv_type, n_gen, depth):
    r = GGUFReader(path)
    tensors = {t.name: t for t in r.tensors}
    weights = sum(int(t.n_bytes) for n, t in tensors.items() if n.startswith("blk."))
    weights += int(tensors["output_norm.weight"].n_bytes)
    embd = tensors["token_embd.weight"]
    weights += int(tensors["output.weight"].n_bytes) if "output.weight" in tensors else int(embd.n_bytes)
    if "rope_freqs.weight" in tensors:
        weights += int(tensors["rope_freqs.weight"].n_bytes)
    n_rows = int(embd.shape[1]) if len(embd.shape) > 1 else 1
    weights += int(embd.n_bytes) // n_rows

    arch = field(r, "general.architecture")
    n_layer = field(r, arch + ".block_count")
    n_head = field(r, arch + ".attention.head_count")
    n_head_kv = field(r, arch + ".attention.head_count_kv") or n_head
    n_embd = field(r, arch + ".embedding_length")
    head_dim = field(r, arch + ".attention.key_length") or n_embd // n_head
    window = field(r, arch + ".attention.sliding_window") if arch == "gemma3" else 0
    kvd = n_head_kv * head_dim
    row = {"f16": 2 * kvd, "f32": 4 * kvd, "q8_0": kvd // 32 * 34}[kv_type]
    kv_total = 0
    for i in range(n_gen):
        pos = depth + i
        for il in range(n_layer):
            rows = pos + 1
            if arch == "gemma3" and il % 6 < 5:  # llama.cpp's gemma3 pattern: 5 local, 1 global
                rows = min(rows, window)
            kv_total += 2 * rows * row
    return weights, kv_total / n_gen, sum(int(t.n_bytes) for t in tensors.values())


def run(anvil, args, expect_ok=True):
    env = dict(os.environ)
    if "cpu" not in args:
        # -dev auto probes the Vulkan driver, and Mesa/LLVM keep allocations until exit
        # (sanitizer builds); with -dev cpu no driver is loaded and leaks are ours.
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    p = subprocess.run([anvil, "bench"] + args, capture_output=True, text=True, timeout=600, env=env)
    if expect_ok and p.returncode != 0:
        print(p.stdout, p.stderr)
        sys.exit("FAIL: anvil bench %s exited %d" % (" ".join(args), p.returncode))
    return p


LLAMA_BENCH_FIELDS = {  # name -> type in llama-bench's JSON
    "build_commit": str, "cpu_info": str, "gpu_info": str, "backends": str, "model_filename": str,
    "model_type": str, "model_size": int, "model_n_params": int, "n_batch": int, "n_ubatch": int,
    "n_threads": int, "type_k": str, "type_v": str, "n_gpu_layers": int, "devices": str,
    "n_prompt": int, "n_gen": int, "n_depth": int, "test_time": str, "avg_ns": int, "stddev_ns": int,
    "avg_ts": float, "stddev_ts": float, "samples_ns": list, "samples_ts": list,
}
ANVIL_FIELDS = {"device": str, "model_bytes": int, "kv_bytes": (float, type(None)),
                "bytes_per_token": (float, type(None)), "gbps": (float, type(None)),
                "peak_gbps": (float, type(None)), "peak_source": str, "pct_of_peak": (float, type(None))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--anvil", required=True)
    ap.add_argument("--model", required=True)
    a = ap.parse_args()
    common = ["-dev", "cpu", "-r", "2", "-p", "8", "-n", "4", "-t", "1,2", "-ctk", "f16,q8_0", "--membw-mib", "16"]

    p = run(a.anvil, [a.model] + common + ["-o", "json"])
    try:
        recs = json.loads(p.stdout)
    except json.JSONDecodeError as e:
        print(p.stdout)
        sys.exit("FAIL: -o json is not JSON: %s" % e)
    check(isinstance(recs, list) and len(recs) == 8, "8 records (2 threads x 2 kv types x pp/tg), got %d" % len(recs))
    seen = set()
    for rec in recs:
        for k, t in list(LLAMA_BENCH_FIELDS.items()) + list(ANVIL_FIELDS.items()):
            check(k in rec and isinstance(rec[k], t), "field %s present with type %s (got %r)" % (k, t, rec.get(k)))
        if failures:
            break
        seen.add((rec["n_threads"], rec["type_k"], rec["n_prompt"], rec["n_gen"]))
        check(rec["backends"] == "CPU" and rec["device"] == "cpu" and rec["n_gpu_layers"] == 0,
              "-dev cpu rows say CPU")
        check(rec["devices"] == "cpu", "devices = the -dev value")
        check(rec["model_filename"] == a.model, "model_filename")
        check(rec["type_v"] == rec["type_k"], "type_v = type_k")
        n_tok = rec["n_prompt"] + rec["n_gen"]
        ts = [1e9 * n_tok / ns for ns in rec["samples_ns"]]
        check(len(rec["samples_ns"]) == 2 and all(ns > 0 for ns in rec["samples_ns"]), "2 positive samples_ns")
        check(all(close(x, y) for x, y in zip(ts, rec["samples_ts"])), "samples_ts = 1e9*n/samples_ns")
        check(close(rec["avg_ts"], statistics.mean(rec["samples_ts"])), "avg_ts is the mean")
        check(close(rec["stddev_ts"], statistics.stdev(rec["samples_ts"]), 1e-4) or rec["stddev_ts"] < 1e-3,
              "stddev_ts is the sample stddev")
        weights, kv_mean, size = independent_counts(a.model, rec["type_k"], max(rec["n_gen"], 1), rec["n_depth"])
        check(rec["model_size"] == size, "model_size %d = sum of tensors %d" % (rec["model_size"], size))
        check(rec["model_bytes"] == weights,
              "model_bytes (weights read per token) %d = independent count %d" % (rec["model_bytes"], weights))
        if rec["n_gen"] > 0:
            check(close(rec["kv_bytes"], kv_mean), "kv_bytes %r = independent %r" % (rec["kv_bytes"], kv_mean))
            check(close(rec["bytes_per_token"], weights + kv_mean), "bytes_per_token")
            check(close(rec["gbps"], (weights + kv_mean) * rec["avg_ts"] / 1e9, 1e-4), "gbps = bytes * avg_ts")
            check(rec["peak_gbps"] is not None and rec["peak_gbps"] > 0, "CPU peak bandwidth measured")
            if rec["peak_gbps"]:
                check(close(rec["pct_of_peak"], 100 * rec["gbps"] / rec["peak_gbps"], 1e-4), "pct_of_peak")
        else:
            check(rec["gbps"] is None and rec["pct_of_peak"] is None, "pp rows carry no bandwidth")
    check(seen == {(t, k, p, g) for t in (1, 2) for k in ("f16", "q8_0") for (p, g) in ((8, 0), (0, 4))},
          "every combination ran once: %s" % sorted(seen))

    # depth: a tg test at depth 6 reads positions 6..9
    p = run(a.anvil, [a.model, "-dev", "cpu", "-r", "1", "-p", "0", "-n", "4", "-d", "6", "-t", "1", "--no-membw", "-o", "jsonl"])
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    check(len(lines) == 1 and lines[0]["n_depth"] == 6, "jsonl: one record at depth 6")
    if lines:
        _, kv_mean, _ = independent_counts(a.model, "f16", 4, 6)
        check(close(lines[0]["kv_bytes"], kv_mean), "kv_bytes at depth 6 %r = %r" % (lines[0]["kv_bytes"], kv_mean))
        check(lines[0]["pct_of_peak"] is None and lines[0]["gbps"] > 0, "--no-membw: no peak, gbps still given")

    p = run(a.anvil, [a.model, "-dev", "cpu", "-r", "1", "-p", "8", "-n", "4", "-t", "1", "--no-membw", "-o", "csv"])
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    check(len(rows) == 2 and all(k in rows[0] for k in ("n_prompt", "n_gen", "avg_ts", "gbps", "model_bytes")),
          "csv: 2 rows with the fields")

    p = run(a.anvil, [a.model, "-r", "1", "-p", "8", "-n", "4", "-t", "1", "--no-membw"])  # -dev auto
    md = [l for l in p.stdout.splitlines() if l.startswith("|")]
    check(len(md) == 4 and "t/s" in md[0] and "GB/s" in md[0] and "pp8" in md[2] and "tg4" in md[3],
          "markdown: header, rule, pp8 and tg4 rows")

    for args, what in (([a.model + ".missing"], "missing model"), ([a.model, "-o", "xml"], "bad format"),
                       ([a.model, "-t", "two"], "bad thread count"), ([a.model, "--frobnicate"], "unknown option"),
                       ([a.model, "-ctk", "q3_K"], "bad KV type"), ([a.model, "-p", "0", "-n", "0"], "no test")):
        p = run(a.anvil, args + ["-dev", "cpu", "-r", "1"], expect_ok=False)
        err = p.stderr.strip().splitlines()
        check(p.returncode not in (0, -6, -11) and p.returncode > 0 and len(err) == 1 and err[0].startswith("anvil:"),
              "%s: one-line error and a non-zero exit (rc %d, stderr %r)" % (what, p.returncode, p.stderr))

    print("check_bench: %d failures" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
