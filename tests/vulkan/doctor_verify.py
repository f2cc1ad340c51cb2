#!/usr/bin/env python3
"""doctor_verify.py ANVIL LVP_ICD MODEL: `anvil doctor --verify` and the automatic first-use
self-check through the CLI on lavapipe (validation layer on), each in a fresh XDG_CACHE_HOME:
1. doctor --verify MODEL passes (exit 0, "0 failed"), names the cache file, which exists;
2. with a planted wrong kernel (ANVIL_VK_TEST_BREAK) it fails (exit 1) with a FAIL line naming
   the kernel and the checked fix ANVIL_VK_DISABLE=subgroup;
3. `anvil run` on a device seen for the first time checks its kernels once (log line), a second
   run reads the cached verdict; with the planted kernel the run applies the fix and still
   prints the same text as the CPU;
4. bad ANVIL_VK_DISABLE / ANVIL_VK_MV_ROWS values: one-line errors, exit 1."""
import os, subprocess, sys, tempfile

anvil, icd, model = sys.argv[1:4]
if not os.path.exists(icd):
    print("lavapipe ICD missing: skipped"); sys.exit(77)
fails = 0

def check(cond, what):
    global fails
    print(("ok   " if cond else "FAIL ") + what)
    if not cond: fails += 1

def run(args, cache, **extra):
    env = dict(os.environ, VK_ICD_FILENAMES=icd, ANVIL_VK_VISIBLE_DEVICES="0", ANVIL_VK_VALIDATE="1",
               XDG_CACHE_HOME=cache, ASAN_OPTIONS="detect_leaks=0")
    env.pop("ANVIL_VK_TEST_BREAK", None)
    env.update(extra)
    p = subprocess.run([anvil] + args, env=env, capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr

with tempfile.TemporaryDirectory() as c1:
    rc, out, err = run(["doctor", "--verify", model], c1)
    print(out)
    check(rc == 0 and ", 0 failed" in out, "doctor --verify passes (rc %d)" % rc)
    check("validation" not in err, "no validation messages")
    cached = [l.split("cached in ", 1)[1].strip() for l in out.splitlines() if "cached in " in l]
    check(len(cached) == 1 and os.path.exists(cached[0]) and cached[0].startswith(c1), "verdict cached under XDG_CACHE_HOME")
    if cached:
        check(open(cached[0]).readline().strip() == "result: pass", "cached result: pass")

with tempfile.TemporaryDirectory() as c2:
    rc, out, err = run(["doctor", "--verify", model], c2, ANVIL_VK_TEST_BREAK="mul_mat_vecq_q4_0_w_sg")
    print(out)
    check(rc == 1, "planted wrong kernel: exit 1 (rc %d)" % rc)
    check(any(l.startswith("  FAIL") and "mul_mat_vecq_q4_0_w_sg" in l for l in out.splitlines()), "a FAIL line names the kernel")
    check("fix: ANVIL_VK_DISABLE=subgroup (checked" in out, "the checked fix is printed")

ref_rc, ref_out, _ = run(["run", model, "Hello", "-n", "8", "--temp", "0"], tempfile.gettempdir(), ANVIL_VK_VISIBLE_DEVICES="-1")
with tempfile.TemporaryDirectory() as c3:
    rc, out, err = run(["run", model, "Hello", "-n", "8", "--temp", "0"], c3)
    check(rc == 0 and "checking its kernels" in err and "self-check passed" in err, "first run on the device: self-check ran and passed")
    check(out == ref_out, "same text as the CPU")
    rc, out, err = run(["run", model, "Hello", "-n", "8", "--temp", "0"], c3)
    check(rc == 0 and "checking its kernels" not in err, "second run: the cached verdict, no check")
with tempfile.TemporaryDirectory() as c4:
    rc, out, err = run(["run", model, "Hello", "-n", "8", "--temp", "0"], c4, ANVIL_VK_TEST_BREAK="mul_mat_vecq_q4_0_w_sg")
    print(err)
    check(rc == 0 and "self-check FAILED" in err and "applying ANVIL_VK_DISABLE=subgroup" in err, "planted kernel: fix applied with a log line")
    check(out == ref_out, "and the text is the CPU's")

for var, val in (("ANVIL_VK_DISABLE", "bogus"), ("ANVIL_VK_MV_ROWS", "3"), ("ANVIL_VK_TUNE", "x")):
    with tempfile.TemporaryDirectory() as c5:
        rc, out, err = run(["run", model, "Hello", "-n", "2"], c5, **{var: val})
        lines = [l for l in err.splitlines() if l.strip()]
        check(rc == 1 and any(var in l for l in lines) and "Traceback" not in err and rc >= 0, "%s=%s: one-line error (rc %d)" % (var, val, rc))
print("doctor_verify: %d failed" % fails)
sys.exit(1 if fails else 0)
