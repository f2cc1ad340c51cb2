#!/usr/bin/env python3
"""check_vk_calls: every Vulkan function the backend calls (engine/vulkan/*.c, comments and
string literals removed) is in vk_loader.c's lists of checked functions: VKL_INSTANCE_FUNCS
for volk's process-wide instance pointers (vkX(...)), VKL_DEVICE_FUNCS for the per-device
table (c->fn.vkX(...)). volk loads every function of the headers, so a missing entry would
still compile and run; the lists are what turns a driver without it into an error instead of
a call through NULL. The loader-level and optional (extension) functions vk_loader.c and
vk_instance.c test themselves are exempt. usage: check_vk_calls.py REPO_ROOT
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import checks  # noqa: E402
from checks import check, finish  # noqa: E402

checks.quiet = True
CODE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
EXEMPT = {"vkCreateInstance", "vkEnumerateInstanceExtensionProperties", "vkEnumerateInstanceLayerProperties",
          "vkCreateDebugUtilsMessengerEXT", "vkDestroyDebugUtilsMessengerEXT"}

vk = os.path.join(sys.argv[1], "engine", "vulkan")
loader = open(os.path.join(vk, "vk_loader.c"), encoding="utf-8").read()


def listed(macro):
    m = re.search(r"#define " + macro + r"\(X\)((?:[^\n]*\\\n)*[^\n]*)", loader)
    return set(re.findall(r"X\((vk\w+)\)", m.group(1))) if m else set()


inst, dev = listed("VKL_INSTANCE_FUNCS"), listed("VKL_DEVICE_FUNCS")
check(len(inst) > 5 and len(dev) > 20, f"vk_loader.c lists {len(inst)} instance and {len(dev)} device functions")
calls = 0
for n in sorted(os.listdir(vk)):
    if not n.endswith(".c") or n == "vk_loader.c":
        continue
    code = CODE.sub(" ", open(os.path.join(vk, n), encoding="utf-8", errors="replace").read())
    for m in re.finditer(r"(\bfn\.)?\b(vk[A-Z]\w*)\s*\(", code):
        table, name = m.group(1), m.group(2)
        if name in EXEMPT:
            continue
        calls += 1
        want, where = (dev, "VKL_DEVICE_FUNCS") if table else (inst, "VKL_INSTANCE_FUNCS")
        check(name in want, f"{n}: {name} is in {where}", f"add X({name}) to {where} in engine/vulkan/vk_loader.c")
check(calls > 50, f"found the backend's Vulkan calls ({calls})")
finish()
