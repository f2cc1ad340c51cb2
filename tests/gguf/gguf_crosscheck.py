#!/usr/bin/env python3
"""gguf_crosscheck: compares what Anvil's GGUF reader sees in a file (test_gguf --dump)
with gguf-py's GGUFReader: every key (name, type, array element type and length) and
every tensor (name, file offset, byte size, type), in order.

Usage: gguf_crosscheck.py TEST_GGUF_BINARY FILE.gguf   (prints SKIP if the file is absent)"""
import os
import subprocess
import sys

from gguf import GGUFReader, GGUFValueType


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, path = sys.argv[1], sys.argv[2]
    if not os.path.exists(path):
        print(f"SKIP: {path} not present")
        return 0
    ours = subprocess.run([binary, "--dump", path], check=True, capture_output=True, text=True).stdout.splitlines()
    r = GGUFReader(path)
    want = []
    for field in r.fields.values():
        if field.name.startswith("GGUF."):
            continue  # header fields gguf-py exposes as pseudo-keys
        t = field.types[0]
        if t == GGUFValueType.ARRAY:
            want.append(f"K {field.name} {int(t)} {int(field.types[1])} {len(field.data)}")
        else:
            want.append(f"K {field.name} {int(t)} -1 0")
    for t in r.tensors:
        want.append(f"T {t.name} {t.data_offset} {t.n_bytes} {int(t.tensor_type)}")
    bad = [(i, a, b) for i, (a, b) in enumerate(zip(ours, want)) if a != b]
    for i, a, b in bad[:5]:
        print(f"line {i}: anvil '{a}' != gguf-py '{b}'")
    n_k = sum(1 for x in want if x.startswith("K "))
    print(f"{len(ours)} lines from anvil, {len(want)} from gguf-py ({n_k} keys, {len(want) - n_k} tensors), {len(bad)} differ")
    return 0 if not bad and len(ours) == len(want) else 1


if __name__ == "__main__":
    sys.exit(main())
