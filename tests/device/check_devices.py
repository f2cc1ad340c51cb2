#!/usr/bin/env python3
"""CLI checks of `anvil devices` and `anvil doctor` on this machine: the CPU is listed, a
software Vulkan device (lavapipe) is listed as software and unused by default with the
reason, ANVIL_VK_VISIBLE_DEVICES / GGML_VK_VISIBLE_DEVICES make it used, malformed values
are one-line errors naming the variable (the CPU backend's ANVIL_CPU_SIMD too: doctor reports
it instead of the process dying), and doctor names the missing ICD when
VK_ICD_FILENAMES / VK_DRIVER_FILES point nowhere. Usage: check_devices.py ANVIL"""
import json
import os
import subprocess
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import checks  # noqa: E402
from checks import check, finish  # noqa: E402
checks.quiet = True


ANVIL = sys.argv[1]
VARS = ["ANVIL_VK_VISIBLE_DEVICES", "GGML_VK_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
        "CUDA_VISIBLE_DEVICES", "ANVIL_BACKEND", "ANVIL_DEVICE", "ANVIL_IGPU", "HSA_OVERRIDE_GFX_VERSION",
        "VK_ICD_FILENAMES", "VK_DRIVER_FILES", "VK_ADD_DRIVER_FILES", "ANVIL_CPU_SIMD"]


def run(args, **env):
    e = {k: v for k, v in os.environ.items() if k not in VARS}
    e.update(env)
    # Mesa/LLVM keep allocations until exit, so the ctest sets detect_leaks=0; with no
    # driver loaded (an ICD variable pointing nowhere) leaks are ours: check them.
    if "VK_ICD_FILENAMES" in env or "VK_DRIVER_FILES" in env:
        e["ASAN_OPTIONS"] = "detect_leaks=1"

    p = subprocess.run([ANVIL] + args, env=e, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def devices_json(**env):
    rc, out, err = run(["devices", "--json"], **env)
    check(rc == 0, "devices --json exits 0", err)
    try:
        return json.loads(out)
    except ValueError:
        check(False, "devices --json prints JSON", out)
        return {"devices": [], "notes": [], "vulkan": {}, "hip": {}}


# Default selection.
rc, table, err = run(["devices"])
check(rc == 0, "anvil devices exits 0", err)
check("\ncpu " in "\n" + table, "the CPU is listed", table)
print(table)
j = devices_json()
ids = [d["id"] for d in j["devices"]]
check("cpu" in ids, "cpu in --json", ids)
software = [d for d in j["devices"] if d["type"] == "software"]
hardware = [d for d in j["devices"] if d["backend"] != "cpu" and d["type"] != "software"]
for d in software:
    check(not d["used"], f"{d['id']} (software) unused by default", d)
    check("software rasteriser" in (d["reason"] or ""), f"{d['id']} says why", d)
    check("ANVIL_VK_VISIBLE_DEVICES=" in d.get("fix", ""), f"{d['id']} says how to use it", d)
    row = [l for l in table.splitlines() if l.startswith(d["id"] + " ")]
    check(row and " software " in row[0] and row[0].rstrip().endswith(" no"), f"{d['id']} row: software, not used", row)
    check("why: software rasteriser" in table, "the table shows the reason", table)
if not hardware:
    cpu = [d for d in j["devices"] if d["id"] == "cpu"][0]
    check(cpu["used"], "without a GPU the CPU is used", cpu)

# The explicit asks that make lavapipe usable.
lavapipe = [d for d in software if "llvmpipe" in d["name"]]
if lavapipe:
    idx = str(lavapipe[0]["backend_index"])
    for var in ("ANVIL_VK_VISIBLE_DEVICES", "GGML_VK_VISIBLE_DEVICES"):
        jj = devices_json(**{var: idx})
        d = [x for x in jj["devices"] if x["id"] == lavapipe[0]["id"]][0]
        check(d["used"], f"{var}={idx} makes lavapipe used", d)
    jj = devices_json(ANVIL_DEVICE=lavapipe[0]["id"])
    check([x for x in jj["devices"] if x["id"] == lavapipe[0]["id"]][0]["used"], "ANVIL_DEVICE pins lavapipe")
    jj = devices_json(ANVIL_VK_VISIBLE_DEVICES="-1")
    check(all(not x["used"] for x in jj["devices"] if x["backend"] == "vulkan"), "-1 disables Vulkan")
else:
    print("SKIP: no lavapipe device here (mesa-vulkan-drivers not installed or Vulkan not built)")

# Malformed values and indices that do not exist: one line naming the variable, exit 1.
for var, val in [("ANVIL_VK_VISIBLE_DEVICES", "99"), ("ANVIL_VK_VISIBLE_DEVICES", "abc"), ("GGML_VK_VISIBLE_DEVICES", "0,0"),
                 ("ANVIL_BACKEND", "gpu"), ("ANVIL_DEVICE", "vulkan99"), ("ANVIL_DEVICE", "gpu"), ("ANVIL_IGPU", "2"),
                 ("ANVIL_CPU_SIMD", "bogus")]:
    rc, out, err = run(["devices"], **{var: val})
    lines = [l for l in err.splitlines() if l.strip()]
    check(rc == 1 and len(lines) == 1 and f"{var}={val}" in lines[0], f"{var}={val}: one-line error, exit 1", f"rc={rc} stderr={err!r}")
    check("\ncpu " not in "\n" + out, f"{var}={val}: no table after the error", out)

# ANVIL_CPU_SIMD (the CPU backend's kernels): a bad value is an error the commands report, not
# a process exit inside the library; doctor explains it with the allowed values.
rc, out, err = run(["devices", "--json"], ANVIL_CPU_SIMD="bogus")
lines = [l for l in err.splitlines() if l.strip()]
check(rc == 1 and len(lines) == 1 and lines[0].startswith("anvil: ANVIL_CPU_SIMD=bogus ") and "scalar, avx2, avx512" in lines[0],
      "ANVIL_CPU_SIMD=bogus: devices --json gives one line naming the allowed values, exit 1", f"rc={rc} stderr={err!r}")
rc, out, err = run(["doctor"], ANVIL_CPU_SIMD="bogus")
check(rc == 1 and "[PROBLEM] Environment variable error: ANVIL_CPU_SIMD=bogus is not one of scalar, avx2, avx512" in out,
      "ANVIL_CPU_SIMD=bogus: doctor reports it as a problem, exit 1", f"rc={rc} stdout={out!r} stderr={err!r}")
check("ANVIL_CPU_SIMD" not in err, "ANVIL_CPU_SIMD=bogus: doctor does not die with it on stderr", err)
jj = devices_json(ANVIL_CPU_SIMD="SCALAR")
cpu = [d for d in jj["devices"] if d["id"] == "cpu"]
check(cpu and cpu[0]["driver"]["info"] == "scalar" and cpu[0]["supported"], "ANVIL_CPU_SIMD=SCALAR: the CPU uses the scalar kernels", cpu)

# Doctor: the missing ICD is named.
for var in ("VK_ICD_FILENAMES", "VK_DRIVER_FILES"):
    rc, out, err = run(["doctor"], **{var: "/nonexistent.json"})
    check(rc == 1, f"doctor with {var}=/nonexistent.json exits 1", out + err)
    check(f"{var}=/nonexistent.json" in out and "no Vulkan driver (ICD)" in out and "Missing: /nonexistent.json" in out,
          f"doctor names the missing ICD ({var})", out)
    print(out)
    jj = devices_json(**{var: "/nonexistent.json"})
    check(all(x["backend"] != "vulkan" for x in jj["devices"]), f"{var}=/nonexistent.json: no Vulkan device listed", jj)
rc, out, err = run(["doctor"])
check(rc in (0, 1) and ("Vulkan loader" in out or "No Vulkan loader" in out), "doctor runs and checks the loader", out + err)
if lavapipe and not hardware:
    check("only Vulkan device is a software rasteriser" in out and "ANVIL_VK_VISIBLE_DEVICES=" in out,
          "doctor explains the software-only setup", out)
print(out)
finish()
