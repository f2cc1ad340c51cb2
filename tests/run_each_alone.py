#!/usr/bin/env python3
"""run_each_alone: every ctest test must pass when it is the only one asked for, on a build
tree where no test has run yet (so each declares the fixtures it needs, and nothing relies on
the order of a full run). Builds DIR once, snapshots it, then for each test: deletes what
earlier tests wrote, runs `ctest -R ^NAME$` (which adds the test's fixture setups).

usage: tests/run_each_alone.py BUILD_DIR [REGEX]   (from the repository root; not part of ctest)
"""
import os
import re
import shutil
import subprocess
import sys

build = os.path.abspath(sys.argv[1])
only = re.compile(sys.argv[2]) if len(sys.argv) > 2 else None
subprocess.run(["cmake", "-S", ".", "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"], check=True,
               stdout=subprocess.DEVNULL)
subprocess.run(["ninja", "-C", build], check=True, stdout=subprocess.DEVNULL)


def tree(root):
    out = set()
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            out.add(os.path.join(d, n))
    return out


snapshot = tree(build)
names = re.findall(r"Test +#\d+: (\S+)", subprocess.run(["ctest", "-N"], cwd=build, capture_output=True,
                                                          text=True, check=True).stdout)
failed = []
for name in names:
    if only and not only.search(name):
        continue
    for p in sorted(tree(build) - snapshot, key=len, reverse=True):
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p, ignore_errors=True)
        elif os.path.lexists(p):
            os.remove(p)
    p = subprocess.run(["ctest", "-R", "^" + re.escape(name) + "$", "--output-on-failure", "--timeout", "900"],
                       cwd=build, capture_output=True, text=True)
    ok = p.returncode == 0 and "No tests were found" not in p.stdout
    print(("ok   " if ok else "FAIL ") + name, flush=True)
    if not ok:
        failed.append(name)
        print(p.stdout[-3000:])
print(f"{len(names) - len(failed) if not only else 'selected'} passed alone, {len(failed)} failed: {' '.join(failed)}")
sys.exit(1 if failed else 0)
