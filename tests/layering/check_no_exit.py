#!/usr/bin/env python3
"""check_no_exit: no library source (engine/, cpu/, hip/) ends the process. A library
reports errors (anv_set_error, the backend's sticky error); only the CLI may exit. Scans the
C/C++ sources with comments and string literals removed for calls of exit, _exit, _Exit,
quick_exit, abort and anv_die. usage: check_no_exit.py REPO_ROOT
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import checks  # noqa: E402
from checks import check, finish  # noqa: E402

checks.quiet = True

CALL = re.compile(r"\b(exit|_exit|_Exit|quick_exit|abort|anv_die)\s*\(")
CODE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def strip(src):
    # Comments and literals become blanks of the same line count, so line numbers hold.
    return CODE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), src)


root = sys.argv[1]
scanned = 0
for top in ("engine", "cpu", "hip"):
    for d, _, files in os.walk(os.path.join(root, top)):
        for n in sorted(files):
            if not n.endswith((".c", ".h", ".cpp", ".hip", ".cu", ".cuh")):
                continue
            path = os.path.join(d, n)
            with open(path, encoding="utf-8", errors="replace") as f:
                code = strip(f.read())
            scanned += 1
            hits = [f"{os.path.relpath(path, root)}:{code.count(chr(10), 0, m.start()) + 1}: {m.group(1)}()"
                    for m in CALL.finditer(code)]
            check(not hits, f"{os.path.relpath(path, root)} does not end the process", "\n".join(hits))
check(scanned > 50, f"scanned the library sources ({scanned} files)")
finish()
