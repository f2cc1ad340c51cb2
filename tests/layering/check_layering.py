#!/usr/bin/env python3
"""check_layering: compiles `#include "<header>"` probes with one library's include path
(what its own sources see) and checks that every header of --may is found and every header
of --must-not is not. usage (from tests/layering/layering.cmake):
  check_layering.py --cc CC --library NAME --may a.h,b.h --must-not c.h --includes "d1;d2" [--defines "X=1;Y"]
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from checks import check, finish  # noqa: E402


def compiles(cc, includes, defines, header):
    with tempfile.TemporaryDirectory(prefix="anvil-layering-") as tmp:
        probe = os.path.join(tmp, "probe.c")
        with open(probe, "w") as f:
            f.write(f'#include "{header}"\n')
        cmd = [cc, "-std=c11", "-D_GNU_SOURCE", "-fsyntax-only"] + ["-D" + d for d in defines]
        cmd += ["-I" + d for d in includes] + [probe]
        p = subprocess.run(cmd, capture_output=True, text=True)
        return p.returncode == 0, p.stderr.strip().splitlines()[:1]


ap = argparse.ArgumentParser()
ap.add_argument("--cc", required=True)
ap.add_argument("--library", required=True)
ap.add_argument("--may", required=True)
ap.add_argument("--must-not", required=True)
ap.add_argument("--includes", required=True)
ap.add_argument("--defines", default="")
a = ap.parse_args()
includes = [d for d in a.includes.split(";") if d]
defines = [d for d in a.defines.split(";") if d]
check(len(includes) > 0, f"{a.library}: has an include path", a.includes)
for h in a.may.split(","):
    ok, err = compiles(a.cc, includes, defines, h)
    check(ok, f"{a.library} can include {h} (a layer below)", err)
for h in a.must_not.split(","):
    ok, err = compiles(a.cc, includes, defines, h)
    check(not ok and any("No such file" in e for e in err), f"{a.library} cannot include {h} (above or beside it)", err)
finish()
