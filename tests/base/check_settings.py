#!/usr/bin/env python3
"""check_settings: the settings table (engine/base/settings_table.c) is the only reader of the
environment and the only source of its documentation.
  - no getenv call in engine/, tools/, cpu/, hip/ outside engine/base/settings.c (comments and
    string literals removed first);
  - every name passed to an anv_setting_* reader, and every "ANVIL_*" / "OLLAMA_*" string that
    is a name alone (one handed to a helper), is a name of the table (`anvil help env`);
  - README.md's tables between `<!-- settings: GROUP -->` and `<!-- /settings -->` are exactly
    `anvil help env --markdown GROUP`, and every group of the table has one;
  - `anvil serve --help` lists every ANVIL_* setting but the test hooks.
usage: check_settings.py REPO_ROOT ANVIL_BINARY
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from checks import check, finish  # noqa: E402

root, anvil = sys.argv[1], sys.argv[2]
CODE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
COMMENT = re.compile(r'//[^\n]*|/\*.*?\*/', re.S)
GETENV = re.compile(r"\b(getenv|_wgetenv|secure_getenv|getenv_s|_dupenv_s)\s*\(")
NAME_LITERAL = re.compile(r'"((?:ANVIL|OLLAMA)_[A-Z0-9_]+)"')
READER = re.compile(r'\banv_setting_(?:raw|get|on|off|value|long|int|u64)\s*\(\s*"([^"]+)"')


def blank(m):
    return re.sub(r"[^\n]", " ", m.group(0))


def run(*args):
    p = subprocess.run([anvil, *args], capture_output=True, text=True)
    check(p.returncode == 0, f"anvil {' '.join(args)} exits 0", p.stderr)
    return p.stdout


env_text = run("help", "env")
entries = []  # (group, name, ollama alias, test hook)
group = None
for line in env_text.splitlines():
    if re.fullmatch(r"[a-z]+:", line):
        group = line[:-1]
    m = re.fullmatch(r"  ([A-Z][A-Z0-9_]+)(?: \(or ([A-Z0-9_]+)\))?", line)
    if m:
        entries.append([group, m.group(1), m.group(2), False])
    if line.startswith("      tests: ") and entries:
        entries[-1][3] = True
names = {e[1] for e in entries} | {e[2] for e in entries if e[2]}
check(len(names) > 80, f"anvil help env lists the table ({len(names)} names)")

scanned, used = 0, set()
for top in ("engine", "tools", "cpu", "hip"):
    for d, _, files in os.walk(os.path.join(root, top)):
        for n in sorted(files):
            if not n.endswith((".c", ".h", ".cpp", ".hip", ".cu", ".cuh")):
                continue
            path = os.path.join(d, n)
            rel = os.path.relpath(path, root)
            with open(path, encoding="utf-8", errors="replace") as f:
                src = f.read()
            scanned += 1
            code = CODE.sub(blank, src)
            if rel != os.path.join("engine", "base", "settings.c"):
                hits = [f"{rel}:{code.count(chr(10), 0, m.start()) + 1}: {m.group(1)}()" for m in GETENV.finditer(code)]
                check(not hits, f"{rel} reads the environment only through settings.h", "\n".join(hits))
            if not rel.endswith("settings_table.c"):   # a name handed to a helper (env_int("ANVIL_X")) too
                for m in NAME_LITERAL.finditer(COMMENT.sub(blank, src)):
                    check(m.group(1) in names, f"{rel}: \"{m.group(1)}\" is in the settings table",
                          "add it to engine/base/settings_table.c")
            for m in READER.finditer(COMMENT.sub(blank, src)):
                used.add(m.group(1))
                check(m.group(1) in names, f"{rel}: {m.group(1)} is in the settings table",
                      "add it to engine/base/settings_table.c")
check(scanned > 100, f"scanned the sources ({scanned} files)")
check(len(used) > 60, f"the readers name the table's settings ({len(used)} names)")

readme = open(os.path.join(root, "README.md"), encoding="utf-8").read()
groups = list(dict.fromkeys(e[0] for e in entries))
blocks = re.findall(r"<!-- settings: ([a-z]+) -->\n(.*?)<!-- /settings -->", readme, re.S)
check(sorted(g for g, _ in blocks) == sorted(groups), "README.md has one settings table per group",
      f"README: {[g for g, _ in blocks]}, table: {groups}")
for group, text in blocks:
    want = run("help", "env", "--markdown", group)
    check(text == want, f"README.md's {group} settings table is `anvil help env --markdown {group}`",
          f"regenerate it: anvil help env --markdown {group}\n--- README\n{text}--- generated\n{want}")

serve_help = run("serve", "--help")
for group, name, _, test_hook in entries:
    if group in ("server", "store", "device", "cpu", "vulkan", "hip") and not test_hook:
        check(re.search(rf"^  {name} ", serve_help, re.M) is not None, f"anvil serve --help lists {name}")
finish()
