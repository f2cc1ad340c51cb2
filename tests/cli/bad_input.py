#!/usr/bin/env python3
"""Bad input through the CLI: each hostile or broken GGUF must give exactly one error line
naming the problem and a non-zero exit status, never a crash or a hang. The same for a bad
environment variable the engine reads when it loads a model (ANVIL_CPU_SIMD: the CPU backend
reports it to the CLI, which alone exits, with status 1).

usage: bad_input.py ANVIL_BINARY WORKDIR
"""
import os
import struct
import subprocess
import sys

import numpy as np
import gguf

anvil, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)


def write_model(path, arch="llama", tensor_type=None):
    """A tiny but complete llama-layout model (1 layer, n_embd 32, vocab 300)."""
    w = gguf.GGUFWriter(path, arch)
    n_embd, n_ff, n_vocab = 32, 64, 300
    w.add_context_length(64)
    w.add_embedding_length(n_embd)
    w.add_block_count(1)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(4)
    w.add_head_count_kv(4)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("llama")
    toks = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % i for i in range(256)] + ["\u2581t%d" % i for i in range(n_vocab - 259)]
    w.add_token_list(toks)
    w.add_token_scores([0.0] * 3 + [0.0] * 256 + [-float(i) for i in range(n_vocab - 259)])
    w.add_token_types([2, 3, 3] + [6] * 256 + [1] * (n_vocab - 259))
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    rng = np.random.default_rng(0)

    def t(name, *shape):
        w.add_tensor(name, (rng.standard_normal(shape) * 0.1).astype(np.float32))
    t("token_embd.weight", n_vocab, n_embd)
    t("output_norm.weight", n_embd)
    t("blk.0.attn_norm.weight", n_embd)
    t("blk.0.attn_q.weight", n_embd, n_embd)
    t("blk.0.attn_k.weight", n_embd, n_embd)
    t("blk.0.attn_v.weight", n_embd, n_embd)
    t("blk.0.attn_output.weight", n_embd, n_embd)
    t("blk.0.ffn_norm.weight", n_embd)
    t("blk.0.ffn_gate.weight", n_ff, n_embd)
    t("blk.0.ffn_up.weight", n_ff, n_embd)
    t("blk.0.ffn_down.weight", n_embd, n_ff)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def tensor_infos(data):
    """Offsets of every tensor-info record's type and offset fields in a GGUF v3 image."""
    r = gguf.GGUFReader(data_path)
    return r


good = os.path.join(work, "good.gguf")
write_model(good)
data_path = good
raw = open(good, "rb").read()
reader = gguf.GGUFReader(good)
first = reader.tensors[0]
# The tensor info record of tensor 0: name, n_dims, dims, type (u32), offset (u64).
name_bytes = first.name.encode()
info_at = raw.index(struct.pack("<Q", len(name_bytes)) + name_bytes)
dims_at = info_at + 8 + len(name_bytes) + 4
type_at = dims_at + 8 * len(first.shape)
offset_at = type_at + 4

cases = []


def case(name, blob, expect):
    path = os.path.join(work, name + ".gguf")
    with open(path, "wb") as f:
        f.write(blob)
    cases.append((name, path, expect))


case("truncated-header", raw[:20], "truncated")
case("truncated-data", raw[: len(raw) - 100], "past end")
case("bad-magic", b"GGUX" + raw[4:], "magic")
bad = bytearray(raw)
struct.pack_into("<Q", bad, offset_at, 1 << 40)
case("tensor-past-end", bytes(bad), "past end")
bad = bytearray(raw)
struct.pack_into("<I", bad, type_at, 77)
case("unknown-quant-type", bytes(bad), "type")
bad = bytearray(raw)
# the first key's length field follows magic(4) version(4) n_tensors(8) n_kv(8)
struct.pack_into("<Q", bad, 24, 1 << 63)
case("absurd-string-length", bytes(bad), "length")
arch_path = os.path.join(work, "unknown-arch.gguf")
write_model(arch_path, arch="mamba9")
cases.append(("unknown-architecture", arch_path, "mamba9"))
cases.append(("missing-file", os.path.join(work, "does-not-exist.gguf"), "does-not-exist"))

failed = 0
for name, path, expect in cases:
    for cmd in (["show", path], ["run", path, "hi", "-n", "1"]):
        try:
            p = subprocess.run([anvil] + cmd, capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            print(f"FAIL {name} {cmd[0]}: hung")
            failed += 1
            continue
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        ok = (p.returncode not in (0,) and p.returncode > 0 and len(lines) == 1
              and lines[0].startswith("anvil: ") and expect.lower() in lines[0].lower())
        print(("ok  " if ok else "FAIL") + f" {name:22s} {cmd[0]:4s} exit {p.returncode}: {lines[0] if lines else '(no message)'}")
        if not ok:
            failed += 1
            if len(lines) != 1:
                print("   stderr was:\n   " + "\n   ".join(lines[:20]))
# A bad ANVIL_CPU_SIMD on a good model: the one line names the variable and the allowed values.
env_cases = [(["run", good, "hi", "-n", "1", "--local"], "run"), (["bench", "-m", good, "-p", "4", "-n", "0", "-r", "1"], "bench")]
for cmd, label in env_cases:
    env = dict(os.environ, ANVIL_CPU_SIMD="bogus")
    try:
        p = subprocess.run([anvil] + cmd, capture_output=True, text=True, timeout=60, env=env)
    except subprocess.TimeoutExpired:
        print(f"FAIL ANVIL_CPU_SIMD=bogus {label}: hung")
        failed += 1
        continue
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    ok = (p.returncode == 1 and len(lines) == 1 and lines[0].startswith("anvil: ANVIL_CPU_SIMD=bogus is not one of scalar, avx2, avx512"))
    print(("ok  " if ok else "FAIL") + f" ANVIL_CPU_SIMD=bogus  {label:5s} exit {p.returncode}: {lines[0] if lines else '(no message)'}")
    if not ok:
        failed += 1
        print("   stderr was:\n   " + "\n   ".join(lines[:20]))
passed = 2 * len(cases) + len(env_cases) - failed
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
