#!/usr/bin/env python3
"""make_iq_golden: writes tests/data/quant/golden_iq.bin, the reference dequantizations that
test_quant_iq.c checks Anvil's read-only types (MXFP4, IQ4_NL, IQ4_XS, IQ3_XXS, IQ3_S,
IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M, TQ1_0, TQ2_0) against, bit for bit.

References, independent of Anvil's C code:
  * ggml itself: today's llama.cpp libggml-base.so (its dequantize_row_<type>), loaded with
    ctypes; its floats are stored;
  * gguf-py (today's llama.cpp gguf-py, module gguf.quants): its numpy dequantizers must
    agree with ggml (bit for bit, or the script stops).

Regenerate (from the repository root):
    PYTHONPATH=~/.cache/llamacpp-current/src/llama.cpp/gguf-py python3 tests/gguf/quant/make_iq_golden.py \\
        --ggml ~/.cache/llamacpp-current/src/llama.cpp/build-cpu/bin/libggml-base.so

Format: as golden.bin (b"AQG1", u32 count, records of u8 name_len, name, u32 bytes, payload).
Records per type: "rb/<type>" (ROWS rows of random blocks, COLS elements per row, with sane
scale fields: finite, moderate block scales) and "rbdq/<type>" (ggml's dequantization, f32).
"""
import argparse
import ctypes
import struct

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

ROWS, COLS = 3, 1024
SEED = 20261204

# name -> (type, block elements, block bytes, offsets of fp16 scales)
TYPES = {
    "mxfp4": (T.MXFP4, 32, 17, []),
    "iq4_nl": (T.IQ4_NL, 32, 18, [0]),
    "iq4_xs": (T.IQ4_XS, 256, 136, [0]),
    "iq2_xxs": (T.IQ2_XXS, 256, 66, [0]),
    "iq2_xs": (T.IQ2_XS, 256, 74, [0]),
    "iq2_s": (T.IQ2_S, 256, 82, [0]),
    "iq3_xxs": (T.IQ3_XXS, 256, 98, [0]),
    "iq3_s": (T.IQ3_S, 256, 110, [0]),
    "iq1_s": (T.IQ1_S, 256, 50, [0]),
    "iq1_m": (T.IQ1_M, 256, 56, []),
    "tq1_0": (T.TQ1_0, 256, 54, [52]),
    "tq2_0": (T.TQ2_0, 256, 66, [64]),
}


def random_rows(rng, name):
    _, bs, ts, f16_offs = TYPES[name]
    nb = ROWS * COLS // bs
    raw = rng.integers(0, 256, (nb, ts), dtype=np.uint8)
    for off in f16_offs:
        v = (rng.uniform(0.001, 0.1, nb) * rng.choice([-1, 1], nb)).astype(np.float16)
        raw[:, off:off + 2] = v.view(np.uint8).reshape(nb, 2)
    if name == "mxfp4":  # E8M0 exponents around 2^0, plus the two subnormal codes and the top one
        raw[:, 0] = rng.integers(112, 136, nb)
        raw[:3, 0] = [0, 1, 255]
    if name == "iq1_m":  # the block fp16 scale is the top nibble of each of the 4 scale words
        v = (rng.uniform(0.001, 0.1, nb) * rng.choice([-1, 1], nb)).astype(np.float16).view(np.uint16)
        sc = raw[:, 48:56].copy().view(np.uint16).reshape(nb, 4)
        for k in range(4):
            sc[:, k] = (sc[:, k] & 0x0FFF) | (((v >> (4 * k)) & 0xF) << 12)
        raw[:, 48:56] = sc.view(np.uint8).reshape(nb, 8)
    return raw.reshape(ROWS, -1)


def ggml_dequant(lib, name, q):
    fn = getattr(lib, f"dequantize_row_{name}")
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    fn.restype = None
    out = np.zeros((ROWS, COLS), dtype=np.float32)
    for r in range(ROWS):
        row = np.ascontiguousarray(q[r])
        fn(row.ctypes.data, out[r].ctypes.data, COLS)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ggml", required=True, help="path of today's llama.cpp libggml-base.so")
    ap.add_argument("--out", default="tests/data/quant/golden_iq.bin")
    args = ap.parse_args()
    lib = ctypes.CDLL(args.ggml)
    rng = np.random.default_rng(SEED)
    records = []
    for name in TYPES:
        q = random_rows(rng, name)
        ref = ggml_dequant(lib, name, q)
        py = quants.dequantize(q, TYPES[name][0]).astype(np.float32).reshape(ROWS, COLS)
        a, b = ref.view(np.uint32), py.view(np.uint32)
        if not np.array_equal(a, b):
            bad = int(np.argmax(a.reshape(-1) != b.reshape(-1)))
            raise SystemExit(f"{name}: gguf-py and ggml differ at element {bad}: {py.reshape(-1)[bad]} vs {ref.reshape(-1)[bad]}")
        records.append((f"rb/{name}", q.tobytes()))
        records.append((f"rbdq/{name}", ref.tobytes()))
    out = bytearray(b"AQG1" + struct.pack("<I", len(records)))
    for name, payload in records:
        nb = name.encode()
        out += struct.pack("<B", len(nb)) + nb + struct.pack("<I", len(payload)) + payload
    with open(args.out, "wb") as f:
        f.write(out)
    print(f"wrote {args.out}: {len(records)} records, {len(out)} bytes")


if __name__ == "__main__":
    main()
