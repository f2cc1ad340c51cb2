#!/usr/bin/env python3
"""The model store through the CLI, in a temporary HOME: a fake ~/.ollama/models tree (manifest
and blobs of a tiny test GGUF) listed and run by name, read-only; `anvil create` from
Modelfiles whose PARAMETERs (num_predict, stop, seed, temperature, num_gpu), SYSTEM and TEMPLATE
must take effect; show / list / cp / rm; hostile names and Modelfiles rejected with one-line
errors.

usage: store_cli.py ANVIL MAKE_TEST_MODEL_PY WORKDIR
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from checks import check, finish  # noqa: E402


anvil, make_model, work = (os.path.abspath(a) for a in sys.argv[1:4])
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
home = os.path.join(work, "home")
os.makedirs(home)
env = {k: v for k, v in os.environ.items() if k not in ("ANVIL_MODELS", "OLLAMA_MODELS")}
env["HOME"] = home



def anvil_run(*args, stdin=None, timeout=300):
    return subprocess.run([anvil, *args], capture_output=True, text=True, env=env, input=stdin,
                          timeout=timeout, cwd=work)


def one_line_error(p):
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    return p.returncode != 0 and len(lines) == 1 and lines[0].startswith("anvil: ")


def eval_count(p):
    m = re.search(r"eval count:\s+(\d+) token", p.stderr.split("prompt eval count")[-1])
    return int(m.group(1)) if m else -1


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def snapshot(root):
    out = []
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            st = os.stat(p)
            out.append((p, st.st_size, st.st_mtime_ns, sha256_file(p)))
    return sorted(out)


# ---- the tiny model (gemma3 layout: it has a chat template) ----
gguf = os.path.join(work, "tiny.gguf")
subprocess.run([sys.executable, make_model, "--family", "gemma3", "--preset", "tiny", "--type", "f32",
                "--out", gguf], check=True, capture_output=True)

# ---- a fake Ollama store holding it as "tiny:latest" ----
oroot = os.path.join(home, ".ollama", "models")
os.makedirs(os.path.join(oroot, "blobs"))
model_hex = sha256_file(gguf)
shutil.copy(gguf, os.path.join(oroot, "blobs", "sha256-" + model_hex))
config = json.dumps({"model_format": "gguf", "model_family": "gemma3"}).encode()
config_hex = hashlib.sha256(config).hexdigest()
with open(os.path.join(oroot, "blobs", "sha256-" + config_hex), "wb") as f:
    f.write(config)
params = json.dumps({"num_gpu": 0}).encode()  # CPU: quick and the same numbers everywhere
params_hex = hashlib.sha256(params).hexdigest()
with open(os.path.join(oroot, "blobs", "sha256-" + params_hex), "wb") as f:
    f.write(params)
manifest = json.dumps({
    "schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
    "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "digest": "sha256:" + config_hex, "size": len(config)},
    "layers": [
        {"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:" + model_hex, "size": os.path.getsize(gguf)},
        {"mediaType": "application/vnd.ollama.image.params", "digest": "sha256:" + params_hex, "size": len(params)},
    ]}).encode()
mdir = os.path.join(oroot, "manifests", "registry.ollama.ai", "library", "tiny")
os.makedirs(mdir)
with open(os.path.join(mdir, "latest"), "wb") as f:
    f.write(manifest)
ollama_before = snapshot(oroot)

PROMPT = "Tell me about the weather today."

# ---- the Ollama model, by name ----
p = anvil_run("list")
check(p.returncode == 0 and p.stdout.splitlines()[0].split() == ["NAME", "ID", "SIZE", "MODIFIED"], "list: header", p.stdout + p.stderr)
row = [l for l in p.stdout.splitlines() if l.startswith("tiny:latest")]
manifest_id = hashlib.sha256(manifest).hexdigest()[:12]
check(len(row) == 1 and row[0].split()[1] == manifest_id, "list: the Ollama model with its manifest ID", p.stdout)
check(len(row) == 1 and re.search(r"\b6\.5 MB\b", row[0]) and "ago" in row[0], "list: SIZE and MODIFIED like ollama", p.stdout)

p = anvil_run("run", "tiny", PROMPT, "--temp", "0", "-n", "12", "--verbose")
by_name = p.stdout
check(p.returncode == 0 and eval_count(p) == 12, "run an Ollama model by name", p.stderr)
p = anvil_run("run", "tiny:latest", PROMPT, "--temp", "0", "-n", "12", "-ngl", "0")
check(p.returncode == 0 and p.stdout == by_name, "tiny and tiny:latest are the same model", p.stdout + p.stderr)
p = anvil_run("run", gguf, PROMPT, "--temp", "0", "-n", "12", "-ngl", "0")
check(p.returncode == 0 and p.stdout == by_name, "the same text as the GGUF path", (p.stdout, by_name))

# ---- anvil create ----
def create(name, modelfile, *extra, expect_ok=True):
    mf = os.path.join(work, "Modelfile." + re.sub(r"[^A-Za-z0-9]", "_", name))
    with open(mf, "w") as f:
        f.write(modelfile)
    p = anvil_run("create", name, "-f", mf, *extra)
    if expect_ok:
        check(p.returncode == 0 and "success" in p.stderr, "create " + name, p.stderr)
    return p


create("greedy", "FROM ./tiny.gguf\nPARAMETER temperature 0\nPARAMETER num_predict 7\nPARAMETER num_gpu 0\n")
p = anvil_run("run", "greedy", PROMPT, "--verbose")
check(p.returncode == 0 and eval_count(p) == 7, "PARAMETER num_predict 7 -> 7 tokens", p.stderr)
greedy7 = p.stdout
check(by_name.startswith(greedy7.rstrip("\n")), "PARAMETER temperature 0 -> the greedy text", (greedy7, by_name))
p = anvil_run("run", "greedy", PROMPT, "-n", "3", "--verbose")
check(p.returncode == 0 and eval_count(p) == 3, "a flag replaces the model's PARAMETER", p.stderr)
# num_gpu: with lavapipe made eligible, PARAMETER num_gpu 0 keeps the layers on the CPU and
# -ngl -1 (the flag) puts them on the Vulkan device
# (as tests/vulkan/lavapipe.cmake does: Mesa keeps allocations until exit, and slow unwinding
# through its JIT code can stall a sanitizer build; so no leak check there)
saved_env = dict(env)
env["ANVIL_VK_VISIBLE_DEVICES"] = "0"
env["ASAN_OPTIONS"] = "detect_leaks=0"
p = anvil_run("run", "greedy", PROMPT, "--verbose")
q = anvil_run("run", "greedy", PROMPT, "--verbose", "-ngl", "-1")
env = saved_env
if "vulkan0" in p.stderr:
    check(re.search(r"^anvil: cpu .*layers 0-6", p.stderr, re.M) and "-ngl 0 keeps every layer on the CPU" in p.stderr,
          "PARAMETER num_gpu 0 -> CPU", p.stderr[-1500:])
    check(re.search(r"^anvil: vulkan0 .*: layers 0-6", q.stderr, re.M) and q.stdout == p.stdout,
          "-ngl -1 replaces PARAMETER num_gpu 0 (same text on Vulkan)", (q.stderr[-1500:], q.stdout, p.stdout))
else:
    print("skip: no Vulkan device, num_gpu placement not checked")

# stop: the first run's text, cut at a piece of it
long_run = anvil_run("run", "greedy", PROMPT, "-n", "24")
text = long_run.stdout.rstrip("\n")
stop = None
for i in range(6, max(6, len(text) - 3)):
    cand = text[i:i + 3]
    if cand.strip() == cand and not any(c in cand for c in '"\\\n\r#') and text.find(cand) == i:
        stop = cand
        break
check(stop is not None, "a stop string can be picked from the greedy text", repr(text))
if stop:
    create("stopper", "FROM greedy\nPARAMETER num_predict 24\nPARAMETER stop \"%s\"\n" % stop)
    p = anvil_run("run", "stopper", PROMPT, "--verbose")
    check(p.returncode == 0 and p.stdout == text[:text.find(stop)] + "\n", "PARAMETER stop ends the text before the stop string",
          (p.stdout, text, stop))
    check(0 < eval_count(p) < 24, "PARAMETER stop ends generation early", p.stderr)
    p = anvil_run("run", "greedy", PROMPT, "-n", "24", "--stop", stop)
    check(p.returncode == 0 and p.stdout == text[:text.find(stop)] + "\n", "--stop does the same", (p.stdout, stop))

# seed: the same seed, the same sampled text; another seed, another text
create("seeded", "FROM ./tiny.gguf\nPARAMETER temperature 1.5\nPARAMETER top_k 0\nPARAMETER seed 42\nPARAMETER num_predict 16\nPARAMETER num_gpu 0\n")
a = anvil_run("run", "seeded", PROMPT)
b = anvil_run("run", "seeded", PROMPT)
check(a.returncode == 0 and a.stdout == b.stdout and len(a.stdout) > 1, "PARAMETER seed: the same output twice", (a.stdout, b.stdout))
others = [anvil_run("run", "seeded", PROMPT, "--seed", str(s)).stdout for s in (1, 2, 3)]
check(any(o != a.stdout for o in others), "another --seed gives another output", others)
check(anvil_run("run", "seeded", PROMPT, "--seed", "42").stdout == a.stdout, "--seed 42 equals PARAMETER seed 42")

# TEMPLATE: a raw-looking Go template is used instead of the GGUF's chat template
create("rawtmpl", 'FROM greedy\nTEMPLATE """{{ .Prompt }}"""\n')
p = anvil_run("run", "rawtmpl", PROMPT)
raw = anvil_run("run", gguf, PROMPT, "--raw", "--temp", "0", "-n", "7", "-ngl", "0")
check(p.returncode == 0 and p.stdout == raw.stdout, "TEMPLATE {{ .Prompt }} gives the raw prompt's text", (p.stdout, raw.stdout, p.stderr))
check(p.stdout != greedy7, "TEMPLATE changes the output vs the chat template", (p.stdout, greedy7))

# SYSTEM: applied like --system; --system replaces it
create("sys", "FROM greedy\nSYSTEM You answer in one word.\n")
p = anvil_run("run", "sys", PROMPT)
ref = anvil_run("run", gguf, PROMPT, "--system", "You answer in one word.", "--temp", "0", "-n", "7", "-ngl", "0")
check(p.returncode == 0 and p.stdout == ref.stdout, "SYSTEM is the system prompt", (p.stdout, ref.stdout, p.stderr))
check(p.stdout != greedy7, "SYSTEM changes the output", (p.stdout, greedy7))
p = anvil_run("run", "sys", PROMPT, "--system", "Other.")
ref = anvil_run("run", gguf, PROMPT, "--system", "Other.", "--temp", "0", "-n", "7", "-ngl", "0")
check(p.stdout == ref.stdout, "--system replaces the model's SYSTEM", (p.stdout, ref.stdout))

# MESSAGE: the few-shot turns come before the conversation
create("fewshot", "FROM greedy\nMESSAGE user Hello there\nMESSAGE assistant General Kenobi\n")
p = anvil_run("run", "fewshot", PROMPT, "--verbose")
q = anvil_run("run", "greedy", PROMPT, "--verbose")
pc = re.search(r"prompt eval count:\s+(\d+)", p.stderr)
qc = re.search(r"prompt eval count:\s+(\d+)", q.stderr)
check(p.returncode == 0 and pc and qc and int(pc.group(1)) > int(qc.group(1)) + 6, "MESSAGEs are in the prompt",
      (p.stderr[-800:], q.stderr[-800:]))

# show
p = anvil_run("show", "sys")
caps = p.stdout.split("Capabilities\n")[-1].split("\n\n")[0].split()
check(p.returncode == 0 and caps == ["completion"], "show: capabilities", p.stdout + p.stderr)
check("num_predict" in p.stdout and "System" in p.stdout and "You answer in one word." in p.stdout and "gemma3" in p.stdout,
      "show: model, parameters, system", p.stdout)
p = anvil_run("show", "stopper", "--parameters")
check(p.returncode == 0 and re.search(r"^stop\s+\"", p.stdout, re.M) and re.search(r"^num_predict\s+24$", p.stdout, re.M),
      "show --parameters", p.stdout)
p = anvil_run("show", "rawtmpl", "--template")
check(p.stdout == "{{ .Prompt }}\n", "show --template", repr(p.stdout))
p = anvil_run("show", "sys", "--system")
check(p.stdout == "You answer in one word.\n", "show --system", repr(p.stdout))
p = anvil_run("show", "sys", "--modelfile")
check(p.returncode == 0 and re.search(r"^FROM .*/blobs/sha256-%s$" % model_hex, p.stdout, re.M) and
      "PARAMETER num_predict 7" in p.stdout and 'SYSTEM """You answer in one word."""' in p.stdout, "show --modelfile", p.stdout)
# the rendered Modelfile builds the same model again
create("again", p.stdout)
check(anvil_run("run", "again", PROMPT).stdout == anvil_run("run", "sys", PROMPT).stdout, "a --modelfile round trip runs the same")

# -q: re-quantized
p = create("small", "FROM greedy\n", "-q", "q8_0")
check("quantizing" in p.stderr and "Q8_0" in p.stderr, "create -q q8_0 quantizes", p.stderr)
p = anvil_run("show", "small")
check("Q8_0" in p.stdout, "the quantized model is Q8_0", p.stdout)
p = anvil_run("run", "small", PROMPT, "--verbose")
check(p.returncode == 0 and eval_count(p) == 7, "the quantized model runs with the inherited parameters", p.stderr)

# list / cp / rm
time.sleep(1.1)  # MODIFIED has a resolution of one second
p = anvil_run("cp", "greedy", "user/copy:v1")
check(p.returncode == 0, "cp", p.stderr)
p = anvil_run("run", "user/copy:v1", PROMPT)
check(p.returncode == 0 and p.stdout == greedy7, "the copy runs the same", p.stdout + p.stderr)
p = anvil_run("ls")
names = [l.split()[0] for l in p.stdout.splitlines()[1:]]
for n in ("greedy:latest", "user/copy:v1", "tiny:latest", "sys:latest", "small:latest"):
    check(n in names, "ls lists " + n, p.stdout)
check(names[0] == "user/copy:v1", "ls: newest first", names)
p = anvil_run("rm", "user/copy:v1")
check(p.returncode == 0 and "deleted 'user/copy:v1'" in p.stdout, "rm", p.stdout + p.stderr)
p = anvil_run("run", "user/copy:v1", PROMPT)
check(one_line_error(p) and "not found" in p.stderr, "a removed model is gone", p.stderr)
p = anvil_run("rm", "tiny")
check(one_line_error(p) and "Ollama" in p.stderr, "rm of an Ollama model: refused with a one-line error", p.stderr)
p = anvil_run("run", "nothere", PROMPT)
check(one_line_error(p) and "model 'nothere' not found" in p.stderr, "unknown model: one-line error", p.stderr)

# hostile names
mf_ok = os.path.join(work, "Modelfile.greedy")
for args in (["create", "../x", "-f", mf_ok], ["create", "/etc/passwd", "-f", mf_ok], ["create", "a/../../b", "-f", mf_ok],
             ["create", "x:..", "-f", mf_ok], ["create", "a\\b", "-f", mf_ok], ["create", "a\x01b", "-f", mf_ok],
             ["create", "a/b/c/d", "-f", mf_ok], ["cp", "greedy", "../../etc/x"], ["cp", "greedy", "/tmp/x"],
             ["rm", "../x"], ["rm", "a\nb"], ["run", "x:..", "hi"], ["run", "a/../../b", "hi"], ["show", "a\x1bb"]):
    p = anvil_run(*args)
    check(one_line_error(p) and "invalid model name" in p.stderr, "rejected: %r" % args, p.stderr)
p = anvil_run("run", "/no/such/model.gguf", "hi")
check(one_line_error(p) and "/no/such/model.gguf" in p.stderr, "an absolute path that does not exist", p.stderr)
check(not os.path.exists(os.path.join(work, "x")) and not os.path.exists("/tmp/x/latest"), "nothing written outside the store")

# broken Modelfiles
for text, want in (("FROM ./tiny.gguf\nPARAMETER temperature hot\n", "line 2"), ("FROM ./tiny.gguf\n\nFOO x\n", "line 3"),
                   ("PARAMETER seed 1\n", "no FROM"), ("FROM ./tiny.gguf\nADAPTER ./x.gguf\n", "not supported"),
                   ("FROM ./missing.gguf\n", "missing.gguf"), ("FROM nomodel\n", "not found")):
    p = create("bad", text, expect_ok=False)
    errors = [l for l in p.stderr.splitlines() if l.startswith("anvil: ")]
    check(p.returncode != 0 and len(errors) == 1 and p.stderr.rstrip("\n").endswith(errors[0]) and want in errors[0],
          "Modelfile rejected: " + want, p.stderr)
p = anvil_run("create", "nofile", "-f", os.path.join(work, "no-Modelfile"))
check(one_line_error(p) and "no-Modelfile" in p.stderr, "a missing Modelfile", p.stderr)

# removing everything prunes every blob of the anvil store; the Ollama store is untouched
for n in ("greedy", "stopper", "seeded", "rawtmpl", "sys", "again", "small", "fewshot"):
    anvil_run("rm", n)
left = os.listdir(os.path.join(home, ".anvil", "models", "blobs"))
check(left == [], "rm prunes the blobs no model uses", left)
check(snapshot(oroot) == ollama_before, "the Ollama store was never modified")
p = anvil_run("list")
check([l.split()[0] for l in p.stdout.splitlines()[1:]] == ["tiny:latest"], "only the Ollama model is left", p.stdout)

import time
# a symbolic link to / in manifests/ (either store) is not followed: a listing walked three
# levels of the whole filesystem (8.7 s a call)
links = [os.path.join(home, ".anvil", "models", "manifests", "evil"), os.path.join(oroot, "manifests", "evil")]
for link in links:
    os.symlink("/", link)
t0 = time.monotonic()
p = anvil_run("list")
took = time.monotonic() - t0
check(p.returncode == 0 and "tiny:latest" in p.stdout and took < 2,
      "list with manifests/evil -> / in both stores: %.2f s (< 2 s), the models still listed" % took, p.stdout + p.stderr)
for link in links:
    os.unlink(link)

# a registry that refuses the connection fails the pull at once with one line, as Ollama (it was
# retried for 61 s); a free local port refuses
import socket
sk = socket.socket()
sk.bind(("127.0.0.1", 0))
port = sk.getsockname()[1]
sk.close()
t0 = time.monotonic()
p = anvil_run("pull", "--insecure", "127.0.0.1:%d/library/none:latest" % port, timeout=120)
took = time.monotonic() - t0
check(p.returncode != 0 and "127.0.0.1:%d" % port in p.stderr and took < 5,
      "pull from a refusing registry: fails in %.1f s (< 5 s)" % took, p.stderr[-500:])

finish()
