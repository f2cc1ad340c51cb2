#!/usr/bin/env python3
"""check_gguf_write: reads the sample file written by `test_gguf_write --write PATH` with gguf-py's
GGUFReader (an independent GGUF parser) and checks every key, type, tensor and data offset.
Exit 0 = pass, 1 = fail, 77 = skipped (gguf-py not installed)."""
import math
import sys

try:
    import numpy as np
    from gguf import GGUFReader, GGUFValueType as V
except ImportError:
    print("gguf-py not installed: skipped")
    sys.exit(77)

EXPECT = {
    "general.architecture": ([V.STRING], "test"),
    "t.u8": ([V.UINT8], 200), "t.i8": ([V.INT8], -100), "t.u16": ([V.UINT16], 60000),
    "t.i16": ([V.INT16], -30000), "t.u32": ([V.UINT32], 4000000000), "t.i32": ([V.INT32], -2000000000),
    "t.u64": ([V.UINT64], 1 << 60), "t.i64": ([V.INT64], -(1 << 60)), "t.f32": ([V.FLOAT32], 0.25),
    "t.f64": ([V.FLOAT64], 1e-300), "t.bool": ([V.BOOL], True), "t.str": ([V.STRING], "a string"),
    "t.str_empty": ([V.STRING], ""),
    "t.arr_u8": ([V.ARRAY, V.UINT8], [1, 2, 255]), "t.arr_i8": ([V.ARRAY, V.INT8], [-128, 127]),
    "t.arr_u16": ([V.ARRAY, V.UINT16], [0, 65535]), "t.arr_i16": ([V.ARRAY, V.INT16], [-32768, 5]),
    "t.arr_u32": ([V.ARRAY, V.UINT32], [7, 8, 4000000000]), "t.arr_i32": ([V.ARRAY, V.INT32], [-1, 2147483647]),
    "t.arr_u64": ([V.ARRAY, V.UINT64], [18446744073709551615]),
    "t.arr_i64": ([V.ARRAY, V.INT64], [-9223372036854775808, 42]),
    "t.arr_f32": ([V.ARRAY, V.FLOAT32], [1.5, -0.0, math.inf]),
    "t.arr_f64": ([V.ARRAY, V.FLOAT64], [3.141592653589793, -1e300]),
    "t.arr_bool": ([V.ARRAY, V.BOOL], [True, False, True]),
    "t.arr_empty": (None, []),
    "t.arr_str": ([V.ARRAY, V.STRING], ["hello", "", "wörld", "a b c"]),
    "t.arr_str_empty": (None, []),
    "t.replaced": ([V.STRING], "now a string"),
}
TENSORS = {"w.f32": (0, [48, 3], 576), "n.f16": (1, [10], 20), "w.q8": (8, [64, 2], 136),
           "w.q4k": (12, [256, 2, 3], 864)}


def main(path):
    r = GGUFReader(path)
    bad = []
    keys = [k for k in r.fields if not k.startswith("GGUF.")]
    if keys != list(EXPECT):
        bad.append(f"keys/order: {keys}")
    for k, (types, val) in EXPECT.items():
        f = r.fields.get(k)
        if f is None:
            bad.append(f"missing {k}")
            continue
        if types is not None and f.types != types:
            bad.append(f"{k}: types {f.types}")
        if f.contents() != val:
            bad.append(f"{k}: {f.contents()!r} != {val!r}")
    if len(r.tensors) != len(TENSORS):
        bad.append(f"{len(r.tensors)} tensors")
    for t in r.tensors:
        typ, shape, nbytes = TENSORS.get(t.name, (None, None, None))
        if int(t.tensor_type) != typ or [int(v) for v in t.shape] != shape or int(t.n_bytes) != nbytes:
            bad.append(f"tensor {t.name}: {t.tensor_type} {t.shape} {t.n_bytes}")
        if t.data_offset % 32:
            bad.append(f"tensor {t.name}: data offset {t.data_offset} not 32-aligned")
    f16 = next(t for t in r.tensors if t.name == "n.f16")
    if not np.array_equal(np.asarray(f16.data).view(np.uint16), 0x3C00 + np.arange(10, dtype=np.uint16)):
        bad.append("n.f16 data")
    for b in bad:
        print("FAIL:", b)
    print(f"{len(EXPECT) + len(TENSORS) - len(bad)} checks passed, {len(bad)} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
