#!/usr/bin/env python3
"""gen_corpus: writes the seed corpus for fuzz_gguf into a folder: small valid GGUF files
made with gguf-py's GGUFWriter (every value type, arrays, several tensor types, v2 and v3,
a custom alignment) and hand-built bad ones (bad magic, versions 1 and 4, absurd counts and
lengths, unknown types, misaligned/out-of-file tensors, duplicates, truncations).

Usage: gen_corpus.py OUT_DIR"""
import os
import struct
import sys
import tempfile

import numpy as np
from gguf import GGMLQuantizationType as QT
from gguf import GGUFValueType as VT
from gguf import GGUFWriter
from gguf.constants import GGML_QUANT_SIZES


def write_with(fn, arch="llama"):
    """Runs fn(writer) on a fresh GGUFWriter and returns the file bytes."""
    fd, path = tempfile.mkstemp(suffix=".gguf")
    os.close(fd)
    try:
        w = GGUFWriter(path, arch)
        fn(w)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        with open(path, "rb") as f:
            return f.read()
    finally:
        os.unlink(path)


def raw_tensor(w, name, qtype, n_per_row, rows, seed):
    """Adds a tensor of random bytes (valid or not as numbers: the reader does not care)."""
    block, size = GGML_QUANT_SIZES[qtype]
    row_bytes = n_per_row // block * size
    data = np.random.default_rng(seed).integers(0, 256, size=(rows, row_bytes), dtype=np.uint8)
    w.add_tensor(name, data, raw_dtype=qtype)


def model_like(w):
    w.add_block_count(1)
    w.add_context_length(128)
    w.add_embedding_length(64)
    w.add_head_count(2)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(10000.0)
    w.add_tokenizer_model("llama")
    w.add_token_list(["<unk>", "<s>", "</s>", "\u2581hello", "\u2581world", "<0x0A>"])
    w.add_token_scores([0.0, 0.0, 0.0, -1.5, -2.5, -3.0])
    w.add_token_types([2, 3, 3, 1, 1, 6])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_chat_template("{% for m in messages %}{{ m['content'] }}{% endfor %}")
    raw_tensor(w, "token_embd.weight", QT.Q4_K, 256, 6, 1)
    raw_tensor(w, "output_norm.weight", QT.F32, 64, 1, 2)
    raw_tensor(w, "blk.0.attn_q.weight", QT.Q8_0, 64, 4, 3)
    raw_tensor(w, "blk.0.attn_k.weight", QT.Q4_0, 64, 2, 4)
    raw_tensor(w, "blk.0.ffn_down.weight", QT.Q6_K, 256, 2, 5)
    raw_tensor(w, "blk.0.ffn_up.weight", QT.F16, 64, 3, 6)


def all_values(w):
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -5)
    w.add_uint16("t.u16", 60000)
    w.add_int16("t.i16", -30000)
    w.add_uint32("t.u32", 4000000000)
    w.add_int32("t.i32", -7)
    w.add_float32("t.f32", 1.5)
    w.add_bool("t.bool", True)
    w.add_uint64("t.u64", 1 << 40)
    w.add_int64("t.i64", -123456789012)
    w.add_float64("t.f64", -2.25)
    w.add_string("t.str", "w\u00f6rld")
    w.add_array("t.strs", ["a", "", "bc"])
    w.add_array("t.ints", [1, -2, 3])
    w.add_array("t.floats", [0.5, 1.5])
    w.add_array("t.bools", [True, False])
    w.add_key_value("t.u16s", [1, 2, 3], VT.ARRAY, VT.UINT16)


def aligned64(w):
    w.add_custom_alignment(64)
    raw_tensor(w, "a", QT.F32, 3, 1, 7)
    raw_tensor(w, "b", QT.Q5_K, 256, 1, 8)
    raw_tensor(w, "c", QT.BF16, 5, 2, 9)


# ---- hand-built bad files ----

def hdr(version=3, n_tensors=0, n_kv=0, magic=b"GGUF"):
    return magic + struct.pack("<IQQ", version, n_tensors, n_kv)


def s(text):
    b = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(b)) + b


def key(name, vtype):
    return s(name) + struct.pack("<I", vtype)


def tinfo(name, ne, qtype, offset):
    return s(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<q", d) for d in ne) + struct.pack("<IQ", qtype, offset)


def pad(b, n):
    return b + b"\0" * max(0, n - len(b))


def bad_files():
    arch = key("general.architecture", 8) + s("x")
    one = lambda ne, qt, off, data: pad(hdr(3, 1, 1) + arch + tinfo("w", ne, qt, off), 160 + data)
    return {
        "bad_magic": hdr(magic=b"GGUX"),
        "version1": hdr(version=1),
        "version4": hdr(version=4),
        "big_endian": hdr(version=0x03000000),
        "absurd_nkv": pad(hdr(n_kv=1 << 60), 100),
        "absurd_ntensors": pad(hdr(n_tensors=(1 << 64) - 1), 100),
        "absurd_keylen": pad(hdr(n_kv=1) + struct.pack("<Q", 1 << 63), 100),
        "absurd_strlen": pad(hdr(n_kv=1) + key("general.name", 8) + struct.pack("<Q", 1 << 63), 100),
        "absurd_strarr": pad(hdr(n_kv=1) + key("tokenizer.ggml.tokens", 9) + struct.pack("<IQ", 8, 1 << 62), 100),
        "unknown_vtype": hdr(n_kv=1) + key("t.x", 13) + b"\0" * 8,
        "unknown_elemtype": hdr(n_kv=1) + key("t.x", 9) + struct.pack("<IQ", 77, 0),
        "nested_array": hdr(n_kv=1) + key("t.x", 9) + struct.pack("<IQIQB", 9, 1, 0, 1, 1),
        "empty_array": hdr(n_kv=1) + key("t.e", 9) + struct.pack("<IQ", 5, 0),
        "bool2": hdr(n_kv=1) + key("t.b", 7) + b"\x02",
        "dup_key": hdr(n_kv=2) + key("a", 0) + b"\0" + key("a", 0) + b"\1",
        "align48": hdr(n_kv=1) + key("general.alignment", 4) + struct.pack("<I", 48),
        "align0": hdr(n_kv=1) + key("general.alignment", 4) + struct.pack("<I", 0),
        "tensor_past_end": one([32, 2], 0, 0, 100),
        "tensor_offset_huge": one([32], 0, (1 << 64) - 32, 256),
        "tensor_misaligned": one([32], 0, 16, 256),
        "tensor_unknown_type": one([32], 99, 0, 256),
        "tensor_block_multiple": one([33], 2, 0, 256),
        "tensor_negative_dim": one([32, -3], 0, 0, 256),
        "tensor_overflow_dims": one([1 << 32, 1 << 32], 0, 0, 256),
        "tensor_ndims5": pad(hdr(3, 1, 0) + tinfo("w", [32, 1, 1, 1, 1], 0, 0), 400),
        "dup_tensor": pad(hdr(3, 2, 0) + tinfo("w", [32], 0, 0) + tinfo("w", [32], 0, 128), 600),
    }


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    files = {
        "valid_minimal": write_with(lambda w: None),
        "valid_values": write_with(all_values),
        "valid_model": write_with(model_like),
        "valid_aligned64": write_with(aligned64),
    }
    v2 = bytearray(files["valid_model"])
    v2[4:8] = struct.pack("<I", 2)
    files["valid_model_v2"] = bytes(v2)
    model = files["valid_model"]
    for cut in (3, 20, 60, len(model) // 2, len(model) - 1):
        files[f"truncated_{cut}"] = model[:cut]
    files.update(bad_files())
    for name, data in files.items():
        with open(os.path.join(out, f"seed_{name}.gguf"), "wb") as f:
            f.write(data)
    print(f"gen_corpus: wrote {len(files)} files to {out}")


if __name__ == "__main__":
    main()
