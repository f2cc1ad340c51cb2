#!/usr/bin/env python3
"""make_quant_golden: writes tests/data/quant/golden.bin, the reference data test_quant.c
checks Anvil's quantizers and dequantizers against.

References, independent of Anvil's C code:
  * gguf-py (`pip install gguf`, module gguf.quants): quantizes F16, BF16, Q4_0, Q4_1, Q5_0,
    Q5_1, Q8_0 and dequantizes those plus Q2_K..Q6_K;
  * ggml itself, the compiled libggml-base.so that node-llama-cpp ships (llama.cpp's own
    quantize_row_*_ref / dequantize_row_*), loaded with ctypes: the only reference for the
    K-quant quantizers (gguf-py has none), Q8_1 and Q8_K.  Where both exist the script checks
    that gguf-py and ggml agree, and stores ggml's bytes/floats.
  * numpy: float16 conversions (round-to-nearest-even) for the F16 section.

Regenerate (from the repository root):
    python3 tests/gguf/quant/make_quant_golden.py \
        --ggml /tmp/llamacpp-oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so

File format (little endian): b"AQG1", u32 record count, then records of
    u8 name_len, name (ASCII), u32 payload bytes, payload.
Record names: "input" (f32, ROWS x COLS), "q/<type>" (reference quantization of input),
"dq/<type>" (reference dequantization of q/<type>, f32), "rb/<type>" (one row of random
block bytes with sane scale fields), "rbdq/<type>" (its reference dequantization),
"f16/in" (f32 values), "f16/out" (u16, numpy float16), "bf16/out" (u16, ggml rule),
"f16/table_fnv" (u64 FNV-1a of the f32 bits of all 65536 halves, numpy; NaNs as sign|0x7FC00000).
"""
import argparse
import ctypes
import os
import struct
import sys

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

ROWS, COLS = 4, 512
SEED = 20240611

# name -> (ggml type, block size, block bytes, offsets of fp16 scale fields, float32 scale offsets)
TYPES = {
    "f16": (T.F16, 1, 2, [], []),
    "bf16": (T.BF16, 1, 2, [], []),
    "q4_0": (T.Q4_0, 32, 18, [0], []),
    "q4_1": (T.Q4_1, 32, 20, [0, 2], []),
    "q5_0": (T.Q5_0, 32, 22, [0], []),
    "q5_1": (T.Q5_1, 32, 24, [0, 2], []),
    "q8_0": (T.Q8_0, 32, 34, [0], []),
    "q8_1": (T.Q8_1, 32, 36, [0, 2], []),
    "q2_K": (T.Q2_K, 256, 84, [80, 82], []),
    "q3_K": (T.Q3_K, 256, 110, [108], []),
    "q4_K": (T.Q4_K, 256, 144, [0, 2], []),
    "q5_K": (T.Q5_K, 256, 176, [0, 2], []),
    "q6_K": (T.Q6_K, 256, 210, [208], []),
    "q8_K": (T.Q8_K, 256, 292, [], [0]),
}
GGUFPY_QUANTIZES = {"f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0"}
# gguf-py's Q8_1 layout is stale (40-byte blocks), Q8_K has no dequantizer there.
GGUFPY_DEQUANTIZES = GGUFPY_QUANTIZES | {"q2_K", "q3_K", "q4_K", "q5_K", "q6_K"}


def make_input(rng):
    x = np.zeros((ROWS, COLS), dtype=np.float32)
    x[0] = rng.standard_normal(COLS)
    x[1] = rng.standard_t(3, COLS) * 0.02  # heavy tails, like real weights
    x[1, 300:340] = np.abs(x[1, 300:340])  # a positive-only stretch
    # row 2: an all-zero super-block, then two constant halves
    x[2, 256:384] = 0.37
    x[2, 384:512] = -1.5
    # row 3: negative-only values; one huge outlier among small ones; f32 subnormals; tiny normals
    x[3, 0:128] = -rng.uniform(0.01, 2.0, 128)
    x[3, 128:256] = rng.standard_normal(128) * 0.01
    x[3, 128 + 50] = 1000.0
    sub = rng.integers(1, 1 << 23, 128, dtype=np.uint32) | (rng.integers(0, 2, 128, dtype=np.uint32) << 31)
    x[3, 256:384] = sub.view(np.float32)
    x[3, 384:512] = rng.standard_normal(128) * 1e-30
    return x


class Ggml:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)

    def quantize(self, name, x, row_bytes):
        fn = getattr(self.lib, f"quantize_row_{name}_ref")
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
        fn.restype = None
        out = np.zeros((x.shape[0], row_bytes), dtype=np.uint8)  # zeroed: q8_K leaves bsums of all-zero blocks unwritten
        for r in range(x.shape[0]):
            row = np.ascontiguousarray(x[r], dtype=np.float32)
            fn(row.ctypes.data, out[r].ctypes.data, row.size)
        return out

    def dequantize(self, name, q, n_per_row):
        fn = getattr(self.lib, f"dequantize_row_{name}", None)
        if fn is None:
            return None
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
        fn.restype = None
        out = np.zeros((q.shape[0], n_per_row), dtype=np.float32)
        for r in range(q.shape[0]):
            row = np.ascontiguousarray(q[r])
            fn(row.ctypes.data, out[r].ctypes.data, n_per_row)
        return out


def same_floats(a, b):
    a = np.asarray(a, np.float32).view(np.uint32)
    b = np.asarray(b, np.float32).view(np.uint32)
    return a.shape == b.shape and bool(np.all(a == b))


def random_blocks(rng, name, n_per_row):
    _, bs, ts, f16_offs, f32_offs = TYPES[name]
    nb = n_per_row // bs
    raw = rng.integers(0, 256, (nb, ts), dtype=np.uint8)
    for off in f16_offs:
        v = (rng.uniform(0.001, 0.1, nb) * rng.choice([-1, 1], nb)).astype(np.float16)
        raw[:, off:off + 2] = v.view(np.uint8).reshape(nb, 2)
    for off in f32_offs:
        v = rng.uniform(0.001, 0.1, nb).astype(np.float32)
        raw[:, off:off + 4] = v.view(np.uint8).reshape(nb, 4)
    if name in ("f16", "bf16"):  # keep NaN/inf out of the dequant comparison (F16 has its own section)
        h = raw.reshape(-1).view(np.uint16)
        h &= np.uint16(0xBFFF)  # clear the top exponent bit: finite values only
    return raw.reshape(1, -1)


def fnv1a64(data: bytes):
    h = 0xCBF29CE484222325
    arr = np.frombuffer(data, dtype=np.uint8)
    for byte in arr.tolist():
        h ^= byte
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def f16_section(rng):
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 65504.0, 65519.0, 65520.0,
                65536.0, 1e10, -1e10, 2.0**-24, 2.0**-25, 3 * 2.0**-26, 2.0**-14, 2.0**-14 - 2.0**-24,
                1 + 2.0**-11, 1 + 3 * 2.0**-11, 1 + 2.0**-11 + 2.0**-20, 1e-40, -1e-40,
                3.4028234663852886e38, 0.1, -0.3333333, 2049.0, 2051.0, 4097.0]
    sp = np.array(specials, dtype=np.float32)
    rnd = rng.integers(0, 1 << 32, 4096, dtype=np.uint64).astype(np.uint32).view(np.float32)
    # also many values inside the half range, where rounding matters
    mid = (rng.standard_normal(2048) * np.exp2(rng.uniform(-26, 16, 2048))).astype(np.float32)
    vals = np.concatenate([sp, rnd, mid]).astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        f16 = vals.astype(np.float16).view(np.uint16)
    bf16 = quants.quantize(vals, T.BF16).view(np.uint16)
    halves = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    table = halves.view(np.float16).astype(np.float32).view(np.uint32)
    # NaNs canonical (sign | 0x7FC00000): numpy keeps signaling NaNs, F16C hardware quiets them
    is_nan = ((halves & 0x7C00) == 0x7C00) & ((halves & 0x3FF) != 0)
    table = np.where(is_nan, ((halves.astype(np.uint32) & 0x8000) << 16) | 0x7FC00000, table).astype(np.uint32)
    return vals, f16, bf16, fnv1a64(table.tobytes())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ggml", required=True, help="path to libggml-base.so (llama.cpp's ggml)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "data", "quant", "golden.bin"))
    args = ap.parse_args()
    np.seterr(all="ignore")  # subnormal rows overflow 1/d inside gguf-py, as they do in ggml

    ggml = Ggml(args.ggml)
    rng = np.random.default_rng(SEED)
    x = make_input(rng)
    records = [("input", x.tobytes())]
    notes = []

    for name, (qt, bs, ts, _, _) in TYPES.items():
        row_bytes = COLS // bs * ts
        if name in ("f16", "bf16"):
            ref_q = quants.quantize(x, qt).reshape(ROWS, row_bytes) if name == "bf16" else \
                x.astype(np.float16).view(np.uint8).reshape(ROWS, row_bytes)
            src = "numpy" if name == "f16" else "gguf-py"
        else:
            ref_q = ggml.quantize(name, x, row_bytes)
            src = "ggml"
            if name in GGUFPY_QUANTIZES:
                py_q = quants.quantize(x, qt).reshape(ROWS, row_bytes)
                if not np.array_equal(py_q, ref_q):
                    nbad = int(np.sum(py_q != ref_q))
                    notes.append(f"{name}: gguf-py quantization differs from ggml in {nbad} bytes (ggml stored)")
        records.append((f"q/{name}", ref_q.tobytes()))

        # dequantization of the reference bytes and of random blocks
        for tag, q in (("dq", ref_q), ("rbdq", random_blocks(rng, name, COLS))):
            if tag == "rbdq":
                records.append((f"rb/{name}", q.tobytes()))
            py_dq = quants.dequantize(q, qt).reshape(q.shape[0], COLS) if name in GGUFPY_DEQUANTIZES else None
            gg_dq = None if name in ("f16", "bf16") else ggml.dequantize(name, q, COLS)
            if gg_dq is not None and py_dq is not None and not same_floats(gg_dq, py_dq):
                d = np.nanmax(np.abs(gg_dq - py_dq))
                notes.append(f"{name} {tag}: gguf-py and ggml dequantization differ (max |diff| {d:g}); ggml stored")
            ref = gg_dq if gg_dq is not None else py_dq
            if ref is None:
                notes.append(f"{name} {tag}: no reference dequantizer (skipped)")
                continue
            records.append((f"{tag}/{name}", np.asarray(ref, np.float32).tobytes()))
        print(f"{name:5s}: quantized by {src}")

    vals, f16, bf16, fnv = f16_section(rng)
    records += [("f16/in", vals.tobytes()), ("f16/out", f16.tobytes()), ("bf16/out", bf16.tobytes()),
                ("f16/table_fnv", struct.pack("<Q", fnv))]

    out = bytearray(b"AQG1" + struct.pack("<I", len(records)))
    for name, payload in records:
        nb = name.encode()
        out += struct.pack("<B", len(nb)) + nb + struct.pack("<I", len(payload)) + payload
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "wb") as f:
        f.write(out)
    for n in notes:
        print("note:", n)
    print(f"wrote {args.out}: {len(records)} records, {len(out)} bytes")


if __name__ == "__main__":
    sys.exit(main())
