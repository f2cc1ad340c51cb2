#!/usr/bin/env python3
"""Bad input through the CLI: each hostile or broken GGUF must give exactly one error line
naming the problem and a non-zero exit status, never a crash or a hang. `anvil quantize` must
never damage its input or a file it did not write. The same for a bad
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


def write_model(path, arch="llama", tensor_type=None, hp=None, n_embd=32, alignment=None):
    """A tiny but complete llama-layout model (1 layer, n_embd 32, vocab 300). hp overrides
    (or, with None, drops) hyperparameter keys: {"rope.freq_base": ("f32", nan)}. tensor_type:
    {"output.weight": GGMLQuantizationType.Q8_1} stores that tensor as raw zero blocks."""
    w = gguf.GGUFWriter(path, arch)
    n_ff, n_vocab = 64, 300
    kv = {
        "context_length": ("u32", 64), "embedding_length": ("u32", n_embd), "block_count": ("u32", 1),
        "feed_forward_length": ("u32", n_ff), "attention.head_count": ("u32", 4),
        "attention.head_count_kv": ("u32", 4), "attention.layer_norm_rms_epsilon": ("f32", 1e-5),
    }
    kv.update(hp or {})
    for k, v in kv.items():
        if v is None:
            continue
        (w.add_uint32 if v[0] == "u32" else w.add_float32 if v[0] == "f32" else w.add_string)(f"{arch}.{k}", v[1])
    if alignment is not None:
        w.add_custom_alignment(alignment)
    w.add_tokenizer_model("llama")
    toks = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % i for i in range(256)] + ["\u2581t%d" % i for i in range(n_vocab - 259)]
    w.add_token_list(toks)
    w.add_token_scores([0.0] * 3 + [0.0] * 256 + [-float(i) for i in range(n_vocab - 259)])
    w.add_token_types([2, 3, 3] + [6] * 256 + [1] * (n_vocab - 259))
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    rng = np.random.default_rng(0)

    def t(name, *shape):
        qt = (tensor_type or {}).get(name)
        if qt is not None:
            bs, ts = gguf.GGML_QUANT_SIZES[qt]
            w.add_tensor(name, np.zeros((shape[0], shape[1] // bs * ts), dtype=np.uint8), raw_dtype=qt)
            return
        w.add_tensor(name, (rng.standard_normal(shape) * 0.1).astype(np.float32))
    t("token_embd.weight", n_vocab, n_embd)
    t("output_norm.weight", n_embd)
    if "output.weight" in (tensor_type or {}):
        t("output.weight", n_vocab, n_embd)
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

# general.alignment 1: tensor data would start at odd addresses (misaligned loads).
align_path = os.path.join(work, "alignment-1.gguf")
write_model(align_path, alignment=1)
cases.append(("alignment-1", align_path, "general.alignment 1 is not a power of two >= 8"))

# Degenerate hyperparameters and weight types: the GGUF itself is valid (anvil show prints
# it), loading the model must refuse it with one line naming the key (or tensor) and value.
nan, inf = float("nan"), float("inf")
Q = gguf.GGMLQuantizationType
model_cases = [
    ("ctx-0", dict(hp={"context_length": ("u32", 0)}), "llama.context_length = 0 is invalid"),
    ("block-count-0", dict(hp={"block_count": ("u32", 0)}), "llama.block_count = 0 is invalid"),
    ("ff-0", dict(hp={"feed_forward_length": ("u32", 0)}), "llama.feed_forward_length = 0 is invalid"),
    ("head-count-0", dict(hp={"attention.head_count": ("u32", 0)}), "llama.attention.head_count = 0 is invalid"),
    ("head-kv-0", dict(hp={"attention.head_count_kv": ("u32", 0)}), "llama.attention.head_count_kv = 0 is invalid"),
    ("head-kv-3", dict(hp={"attention.head_count_kv": ("u32", 3)}),
     "llama.attention.head_count = 4 is not a multiple of llama.attention.head_count_kv = 3"),
    ("embd-30", dict(hp={"embedding_length": ("u32", 30)}),
     "llama.embedding_length = 30 is not a multiple of llama.attention.head_count = 4"),
    ("key-length-7", dict(hp={"attention.key_length": ("u32", 7), "attention.value_length": ("u32", 7)}),
     "llama.attention.key_length = 7 is invalid"),
    ("rope-dim-0", dict(hp={"rope.dimension_count": ("u32", 0)}), "llama.rope.dimension_count = 0 is invalid"),
    ("eps-0", dict(hp={"attention.layer_norm_rms_epsilon": ("f32", 0.0)}),
     "llama.attention.layer_norm_rms_epsilon = 0 is invalid"),
    ("eps-neg", dict(hp={"attention.layer_norm_rms_epsilon": ("f32", -1e-5)}),
     "llama.attention.layer_norm_rms_epsilon = -1e-05 is invalid"),
    ("eps-nan", dict(hp={"attention.layer_norm_rms_epsilon": ("f32", nan)}),
     "llama.attention.layer_norm_rms_epsilon = nan is invalid"),
    ("rope-base-0", dict(hp={"rope.freq_base": ("f32", 0.0)}), "llama.rope.freq_base = 0 is invalid"),
    ("rope-base-inf", dict(hp={"rope.freq_base": ("f32", inf)}), "llama.rope.freq_base = inf is invalid"),
    ("rope-base-nan", dict(hp={"rope.freq_base": ("f32", nan)}), "llama.rope.freq_base = nan is invalid"),
    ("rope-factor-nan", dict(hp={"rope.scaling.type": ("str", "linear"), "rope.scaling.factor": ("f32", nan)}),
     "llama.rope.scaling.factor = nan is invalid"),
    ("rope-factor-neg", dict(hp={"rope.scaling.type": ("str", "linear"), "rope.scaling.factor": ("f32", -2.0)}),
     "llama.rope.scaling.factor = -2 is invalid"),
    ("softcap-nan", dict(hp={"final_logit_softcapping": ("f32", nan)}), "llama.final_logit_softcapping = nan is invalid"),
    ("softcap-neg", dict(hp={"final_logit_softcapping": ("f32", -30.0)}), "llama.final_logit_softcapping = -30 is invalid"),
    ("output-q8_1", dict(tensor_type={"output.weight": Q.Q8_1}),
     "tensor 'output.weight' has type q8_1, which is not supported as a weight"),
    ("attn-q-q8_K", dict(n_embd=256, tensor_type={"blk.0.attn_q.weight": Q.Q8_K}),
     "tensor 'blk.0.attn_q.weight' has type q8_K, which is not supported as a weight"),
]
run_only = []
for name, kw, expect in model_cases:
    path = os.path.join(work, name + ".gguf")
    write_model(path, **kw)
    run_only.append((name, path, expect))

failed = 0
runs = [(name, path, expect, cmd) for name, path, expect in cases
        for cmd in (["show", path], ["run", path, "hi", "-n", "1"])]
runs += [(name, path, expect, ["run", path, "hi", "-n", "1"]) for name, path, expect in run_only]
for name, path, expect, cmd in runs:
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
# quantize never destroys its input: the output as a symlink or hard link to the input, or the
# input under another spelling, is refused; a device as the output is refused, not replaced
# (issue 28: the input was truncated and /dev/full deleted); a write that fails (here: a file size
# limit) leaves an existing output as it was and no temporary beside it.
import hashlib
import resource
import signal
qdir = os.path.join(work, "quantize")
os.makedirs(qdir, exist_ok=True)
for f in os.listdir(qdir):
    os.unlink(os.path.join(qdir, f))
src = os.path.join(qdir, "in.gguf")
with open(good, "rb") as fi, open(src, "wb") as fo:
    fo.write(fi.read())
digest = hashlib.sha256(open(src, "rb").read()).hexdigest()
os.symlink("in.gguf", os.path.join(qdir, "sym.gguf"))
os.link(src, os.path.join(qdir, "hard.gguf"))
q_cases = [("symlink output", os.path.join(qdir, "sym.gguf"), "two different files"),
           ("hard-link output", os.path.join(qdir, "hard.gguf"), "two different files"),
           ("same file respelled", os.path.join(qdir, ".", "in.gguf"), "two different files"),
           ("device output", "/dev/null", "not a regular file")]
q_failed = 0
for label, out, expect in q_cases:
    p = subprocess.run([anvil, "quantize", src, out, "Q8_0"], capture_output=True, text=True, timeout=120)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    ok = (p.returncode != 0 and len(lines) == 1 and expect in lines[0]
          and hashlib.sha256(open(src, "rb").read()).hexdigest() == digest)
    print(("ok  " if ok else "FAIL") + f" quantize {label:20s} exit {p.returncode}: {lines[0] if lines else '(no message)'}")
    q_failed += not ok
out = os.path.join(qdir, "out.gguf")
with open(out, "w") as f:
    f.write("previous output")


def small_files():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # writes past the limit fail with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


p = subprocess.run([anvil, "quantize", src, out, "Q8_0"], capture_output=True, text=True, timeout=120, preexec_fn=small_files)
left = sorted(os.listdir(qdir))
ok = (p.returncode != 0 and open(out).read() == "previous output" and left == ["hard.gguf", "in.gguf", "out.gguf", "sym.gguf"]
      and hashlib.sha256(open(src, "rb").read()).hexdigest() == digest)
print(("ok  " if ok else "FAIL") + f" quantize failing write      exit {p.returncode}, folder {left}: "
      + (p.stderr.strip().splitlines() or ["(no message)"])[-1])
q_failed += not ok
p = subprocess.run([anvil, "quantize", src, out, "Q8_0"], capture_output=True, text=True, timeout=120)
ok = p.returncode == 0 and open(out, "rb").read(4) == b"GGUF" and sorted(os.listdir(qdir)) == left
print(("ok  " if ok else "FAIL") + f" quantize over an old output exit {p.returncode}")
q_failed += not ok
failed += q_failed
passed = len(runs) + len(env_cases) + len(q_cases) + 2 - failed
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
