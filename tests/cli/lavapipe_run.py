#!/usr/bin/env python3
"""`anvil run` on lavapipe, chosen the way users choose a device (issue 4): with
ANVIL_VK_VISIBLE_DEVICES=0 (and llama.cpp's GGML_VK_VISIBLE_DEVICES=0) every layer + the
output head run on vulkan0 (llvmpipe) and the greedy text equals the CPU run's; with -ngl 2
the log shows a cpu line (the first layers) and a vulkan0 line (the last 2 + output) and the
text is still the same; without the variable lavapipe is listed as not used, with the reason.
Every Vulkan run has ANVIL_VK_VALIDATE=1: the loader must report the Khronos layer inserted
(VK_LOADER_DEBUG=layer) and Anvil must print no validation message.

usage: lavapipe_run.py ANVIL LAVAPIPE_ICD_JSON MODEL.gguf [MODEL.gguf ...]
Exit 77 (skipped) when the lavapipe ICD is not installed.
"""
import os
import re
import subprocess
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from checks import check, finish  # noqa: E402


anvil, icd, models = sys.argv[1], sys.argv[2], sys.argv[3:]
if not os.path.exists(icd):
    print(f"lavapipe ICD {icd} not installed (mesa-vulkan-drivers): skipped")
    sys.exit(77)



# Only lavapipe's ICD, so that "device 0" is lavapipe on any machine; no inherited selection.
BASE_ENV = {k: v for k, v in os.environ.items()
            if k not in ("ANVIL_VK_VISIBLE_DEVICES", "GGML_VK_VISIBLE_DEVICES", "ANVIL_DEVICE", "ANVIL_BACKEND",
                         "ANVIL_VK_DISABLE", "ANVIL_VK_MAX_ALLOCATION", "VK_DRIVER_FILES", "VK_INSTANCE_LAYERS")}
BASE_ENV["VK_ICD_FILENAMES"] = icd
BASE_ENV["VK_LOADER_DEBUG"] = "layer"
# Under Wine (tools/windows/test-wine.sh) winevulkan hides the host's layers from the program,
# so ANVIL_VK_VALIDATE cannot ask for one: the host loader inserts the layer itself
# (VK_INSTANCE_LAYERS) and the layer writes its messages to the file ANVIL_TEST_VK_LAYER_LOG
# names (a vk_layer_settings.txt beside it), which must then hold its start-up notice only.
LAYER_LOG = os.environ.get("ANVIL_TEST_VK_LAYER_LOG")
if LAYER_LOG:
    with open(os.path.join(os.path.dirname(LAYER_LOG), "vk_layer_settings.txt"), "w") as f:
        f.write("khronos_validation.debug_action = VK_DBG_LAYER_ACTION_LOG_MSG\n"
                "khronos_validation.report_flags = error,warn,perf,info\n"
                f"khronos_validation.log_filename = {LAYER_LOG}\n")
    BASE_ENV["VK_LAYER_SETTINGS_PATH"] = os.path.dirname(LAYER_LOG)
    BASE_ENV["VK_INSTANCE_LAYERS"] = "VK_LAYER_KHRONOS_validation"
else:
    BASE_ENV["ANVIL_VK_VALIDATE"] = "1"
PROMPT = "Q: What is the capital of Italy?\nA:"
LAYER_INSERTED = 'Insert instance layer "VK_LAYER_KHRONOS_validation"'


def run(model, extra_env, extra_args=()):
    env = dict(BASE_ENV, **extra_env)
    if LAYER_LOG and os.path.exists(LAYER_LOG):
        os.remove(LAYER_LOG)
    p = subprocess.run([anvil, "run", model, PROMPT, "-n", "8", "--temp", "0", "--raw", "--repeat-penalty", "1",
                        *extra_args], env=env, capture_output=True, timeout=600)
    err = p.stderr.decode("utf-8", "replace")
    anvil_lines = "\n".join(l for l in err.splitlines() if l.startswith("anvil:"))
    return p.returncode, p.stdout, err, anvil_lines


def placement(log, device_re):
    """(first, last, has_output) of the layers on the device whose log line matches device_re."""
    m = re.search(r"^anvil: " + device_re + r"[^\n]*?: (?:layers (\d+)-(\d+)|layer (\d+))?( \+ output)?", log, re.M)
    if not m:
        return None
    first = m.group(1) or m.group(3)
    last = m.group(2) or m.group(3)
    return (int(first) if first else None, int(last) if last else None, bool(m.group(4)))


MESSAGE_HEAD = re.compile(r"^\S+\((INFO|WARN|ERROR|PERF|VERBOSE)[^)]*\): msgNum", re.M)


def validation_clean(name, err):
    check(LAYER_INSERTED in err, f"{name}: the Khronos validation layer is active", err[-600:])
    check("vulkan validation" not in err and "not installed" not in err, f"{name}: no validation message",
          "\n".join(l for l in err.splitlines() if "validation" in l)[:2000])
    if LAYER_LOG:
        text = open(LAYER_LOG, errors="replace").read() if os.path.exists(LAYER_LOG) else ""
        heads = MESSAGE_HEAD.findall(text)
        check("createinstance-status-message" in text, f"{name}: the layer's log holds its start-up notice", text[:600])
        check(all(h == "INFO" for h in heads), f"{name}: the layer's log holds no warning or error", text[:2000])


LVP = r"vulkan0 \(llvmpipe[^)]*\)"
for model in models:
    name = os.path.basename(model)
    if not os.path.exists(model):
        check(False, f"{name}: model exists", model)
        continue

    # Default policy: CPU only, lavapipe listed as not used with the reason.
    rc, text_cpu, err, log = run(model, {})
    check(rc == 0 and len(text_cpu) > 0, f"{name}: CPU run exits 0 with text", err[-2000:])
    cpu = placement(log, r"cpu \([^)]*\)")
    check(cpu is not None and cpu[0] == 0 and cpu[2], f"{name}: CPU line holds layers 0-N + output", log)
    n_layer = cpu[1] + 1 if cpu and cpu[1] is not None else 0
    check(re.search(r"^anvil: " + LVP + r": not used: software rasteriser.*ANVIL_VK_VISIBLE_DEVICES=0", log, re.M)
          is not None, f"{name}: lavapipe listed as not used, with the reason and the fix", log)

    # Whole model on lavapipe through either variable.
    for var in ("ANVIL_VK_VISIBLE_DEVICES", "GGML_VK_VISIBLE_DEVICES"):
        rc, text, err, log = run(model, {var: "0"})
        check(rc == 0, f"{name}: {var}=0 run exits 0", err[-2000:])
        vk = placement(log, LVP)
        check(vk == (0, n_layer - 1, True), f"{name}: {var}=0 puts layers 0-{n_layer - 1} + output on vulkan0 (llvmpipe)", log)
        check(text == text_cpu, f"{name}: {var}=0 text equals the CPU run's", f"{text!r} vs {text_cpu!r}")
        validation_clean(f"{name} {var}=0", err)

    # Split: the last 2 layers + output on lavapipe, the rest on the CPU.
    if n_layer > 2:
        rc, text, err, log = run(model, {"ANVIL_VK_VISIBLE_DEVICES": "0"}, ("-ngl", "2"))
        check(rc == 0, f"{name}: -ngl 2 run exits 0", err[-2000:])
        cpu = placement(log, r"cpu \([^)]*\)")
        vk = placement(log, LVP)
        check(cpu is not None and cpu[0] == 0 and cpu[1] == n_layer - 3 and not cpu[2],
              f"{name}: -ngl 2 cpu line holds layers 0-{n_layer - 3}", log)
        check(vk == (n_layer - 2, n_layer - 1, True), f"{name}: -ngl 2 vulkan0 line holds layers {n_layer - 2}-{n_layer - 1} + output", log)
        check(text == text_cpu, f"{name}: -ngl 2 text equals the CPU run's", f"{text!r} vs {text_cpu!r}")
        validation_clean(f"{name} -ngl 2", err)

finish()
