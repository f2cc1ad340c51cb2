"""gguf_rewrite: a good GGUF file rewritten with gguf-py with one thing changed, for the tests that
check a malformed file is refused with one line (tests/model/*_malformed.py).

    rewrite(src, dst, arch, edit)
edit is one of
    ("none", "")                        the same file (a rewrite alone must still load)
    ("dropkey", key)                    a metadata key removed
    ("setu32" | "setf32", key, value)   a scalar key's value replaced (its type kept)
    ("setarr", key, values, elem_type)  an array key added
    ("drop", tensor)                    a tensor removed
    ("shape", tensor, shape)            a tensor reshaped (values repeated or cut, F32)
    ("f16", tensor)                     a tensor stored as F16
    ("addvec", tensor, n)               an F32 vector of n zeros added
"""
import os
import subprocess

import numpy as np
import gguf


def rewrite(src, dst, arch, edit):
    kind, target = edit[0], edit[1]
    r = gguf.GGUFReader(src)
    w = gguf.GGUFWriter(dst, arch)
    for name, f in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        if kind == "dropkey" and name == target:
            continue
        val = edit[2] if kind in ("setu32", "setf32") and name == target else f.contents()
        sub = f.types[1] if f.types[0] == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(name, val, f.types[0], sub_type=sub)
    if kind == "setarr":
        w.add_key_value(target, edit[2], gguf.GGUFValueType.ARRAY, sub_type=edit[3])
    if kind == "addkey":   # ("addkey", name, value, GGUFValueType): a scalar key the file lacks
        w.add_key_value(target, edit[2], edit[3])
    for t in r.tensors:
        if kind == "drop" and t.name == target:
            continue
        data, raw = np.array(t.data), t.tensor_type
        if t.name == target and kind == "shape":
            data = np.resize(data.reshape(-1), int(np.prod(edit[2]))).reshape(edit[2]).astype(np.float32)
        elif t.name == target and kind == "f16":
            data, raw = data.astype(np.float16), gguf.GGMLQuantizationType.F16
        w.add_tensor(t.name, data, raw_dtype=raw)  # quantized: data is the byte shape the reader gives
    if kind == "addvec":
        w.add_tensor(target, np.zeros(edit[2], dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def eval_lines(anvil, path, tmp):
    """`anvil eval` of two tokens on the CPU: (status, the stderr lines but the Vulkan notices);
    a run past 60 s is a hang (-1)."""
    try:
        r = subprocess.run([anvil, "eval", path, "--tokens", "1,2", "--dump", os.path.join(tmp, "x.json")],
                           capture_output=True, text=True, env=dict(os.environ, ANVIL_DEVICE="cpu"), timeout=60)
    except subprocess.TimeoutExpired:
        return -1, ["timed out (a hang)"]
    return r.returncode, [ln for ln in r.stderr.splitlines() if ln.strip() and "vulkan0" not in ln]


def check_refusals(anvil, good, arch, prefix, cases, tmp):
    """The malformed-file check every family shares: the good file and a rewrite of it with nothing
    changed load (so each refusal is its edit's), then each (case, edit, want) rewrite is refused
    with exactly one line containing want and a plain failure status (no crash, no hang). Prints one
    line per check; returns the number of failures."""
    bad = 0
    same = os.path.join(tmp, "%s-rewritten.gguf" % prefix)
    rewrite(good, same, arch, ("none", ""))
    for path in (good, same):
        rc, lines = eval_lines(anvil, path, tmp)
        print("%s %s loads: rc %d %s" % ("ok" if rc == 0 else "FAIL", os.path.basename(path), rc, " | ".join(lines)))
        bad += rc != 0
    for case, edit, want in cases:
        path = os.path.join(tmp, "bad-%s-%s.gguf" % (prefix, case))
        rewrite(good, path, arch, edit)
        rc, lines = eval_lines(anvil, path, tmp)
        ok = 0 < rc < 128 and len(lines) == 1 and want in lines[0]
        print("%s %s: rc %d: %s" % ("ok" if ok else "FAIL", case, rc, " | ".join(lines)))
        bad += not ok
    return bad
