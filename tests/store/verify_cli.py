#!/usr/bin/env python3
"""`anvil verify NAME` and blob verification on create, in a temporary HOME: a fake read-only
~/.ollama/models model and an `anvil create`d one verify intact (exit 0); one byte flipped in
place in a blob (the GGUF stays valid, so it would run silently), a truncated blob and a missing
blob each make verify name the layer and exit 1; verify never writes to the Ollama store; a
create FROM a corrupted store model is refused naming the blob.

usage: verify_cli.py ANVIL MAKE_TEST_MODEL_PY WORKDIR
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from checks import check, finish  # noqa: E402

anvil, make_model, work = (os.path.abspath(a) for a in sys.argv[1:4])
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
home = os.path.join(work, "home")
os.makedirs(home)
env = {k: v for k, v in os.environ.items() if k not in ("ANVIL_MODELS", "OLLAMA_MODELS")}
env["HOME"] = home


def anvil_run(*args, timeout=300):
    return subprocess.run([anvil, *args], capture_output=True, text=True, env=env, timeout=timeout, cwd=work)


def sha256_bytes(b):
    return hashlib.sha256(b).hexdigest()


def snapshot(root):
    out = []
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            st = os.stat(p)
            out.append((p, st.st_size, st.st_mtime_ns, sha256_bytes(open(p, "rb").read())))
    return sorted(out)


def err_lines(p):
    return [l for l in p.stderr.splitlines() if l.strip()]


gguf = os.path.join(work, "tiny.gguf")
subprocess.run([sys.executable, make_model, "--family", "gemma3", "--preset", "tiny", "--type", "f32",
                "--out", gguf], check=True, capture_output=True)
model = open(gguf, "rb").read()

# ---- a fake Ollama store holding it as "tiny:latest" ----
oroot = os.path.join(home, ".ollama", "models")
os.makedirs(os.path.join(oroot, "blobs"))
model_hex = sha256_bytes(model)
model_blob = os.path.join(oroot, "blobs", "sha256-" + model_hex)
open(model_blob, "wb").write(model)
config = json.dumps({"model_format": "gguf", "model_family": "gemma3"}).encode()
config_hex = sha256_bytes(config)
open(os.path.join(oroot, "blobs", "sha256-" + config_hex), "wb").write(config)
params = json.dumps({"num_gpu": 0}).encode()
params_hex = sha256_bytes(params)
params_blob = os.path.join(oroot, "blobs", "sha256-" + params_hex)
open(params_blob, "wb").write(params)
manifest = json.dumps({
    "schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
    "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "digest": "sha256:" + config_hex, "size": len(config)},
    "layers": [
        {"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:" + model_hex, "size": len(model)},
        {"mediaType": "application/vnd.ollama.image.params", "digest": "sha256:" + params_hex, "size": len(params)},
    ]}).encode()
mdir = os.path.join(oroot, "manifests", "registry.ollama.ai", "library", "tiny")
os.makedirs(mdir)
open(os.path.join(mdir, "latest"), "wb").write(manifest)

# ---- intact ----
before = snapshot(oroot)
p = anvil_run("verify", "tiny")
check(p.returncode == 0 and "tiny: 3 blobs intact" in p.stdout and p.stdout.count("ok ") == 3 and not p.stderr.strip(),
      "verify: an intact Ollama (read-only) model, exit 0", p.stdout + p.stderr)
modelfile = os.path.join(work, "Modelfile")
open(modelfile, "w").write("FROM %s\nPARAMETER num_predict 3\n" % gguf)
p = anvil_run("create", "mine", "-f", modelfile)
check(p.returncode == 0, "create mine from the GGUF", p.stderr)
p = anvil_run("verify", "mine")
check(p.returncode == 0 and "blobs intact" in p.stdout, "verify: an intact anvil-store model, exit 0", p.stdout + p.stderr)
p = anvil_run("verify", "nosuch")
check(p.returncode == 1 and len(err_lines(p)) == 1 and "nosuch" in p.stderr and "not found" in p.stderr,
      "verify: an unknown model is one line, exit 1", p.stderr)
p = anvil_run("verify")
check(p.returncode == 2, "verify: no name is a usage error", p.stdout + p.stderr)

# ---- one byte corrupted in place in the Ollama model blob (same size, still a valid GGUF) ----
bad = bytearray(model)
bad[len(bad) - 100] ^= 0x01
open(model_blob, "wb").write(bytes(bad))
before = snapshot(oroot)
p = anvil_run("show", "tiny")
check(p.returncode == 0, "(the corrupted blob still parses: the corruption is silent without verify)", p.stderr)
p = anvil_run("verify", "tiny")
lines = err_lines(p)
check(p.returncode == 1, "verify: a flipped byte gives exit 1", p.returncode)
check(len(lines) == 1 and "sha256:" + model_hex in lines[0] and "application/vnd.ollama.image.model" in lines[0]
      and "corrupt" in lines[0] and "sha256:" + sha256_bytes(bytes(bad)) in lines[0],
      "verify: one line naming the model layer, its digest and what the content hashes to", p.stderr)
check(("CORRUPT  sha256:" + model_hex) in p.stdout and p.stdout.count("ok ") == 2 and "1 of 3 blobs corrupt" in p.stdout,
      "verify: the listing marks only that layer", p.stdout)
check(snapshot(oroot) == before, "verify never writes to the Ollama store")
# "mine" was created from the same GGUF: its model layer is that very blob (found in the
# Ollama root, not copied), so it is reported corrupt as well.
p = anvil_run("verify", "mine", "tiny")
check(p.returncode == 1 and "mine: 1 of 3 blobs corrupt" in p.stdout and "tiny: 1 of 3 blobs corrupt" in p.stdout
      and len(err_lines(p)) == 2, "verify: several names, each reported (the shared blob twice), exit 1", p.stdout)
# create from the GGUF path again: the file itself is fine, but the store blob it would reuse is not.
open(modelfile, "w").write("FROM %s\n" % gguf)
p = anvil_run("create", "mine2", "-f", modelfile)
check(p.returncode != 0 and "sha256:" + model_hex in p.stderr and "corrupt" in p.stderr,
      "create from a GGUF whose digest names a corrupt store blob fails naming the blob", p.stderr)

# ---- create FROM the corrupted store model is refused (the blob is re-hashed) ----
open(modelfile, "w").write("FROM tiny\nPARAMETER num_predict 4\n")
p = anvil_run("create", "derived", "-f", modelfile)
check(p.returncode != 0 and "sha256:" + model_hex in p.stderr and "corrupt" in p.stderr,
      "create FROM a store model whose blob is corrupt fails naming the blob", p.stderr)
check(anvil_run("show", "derived").returncode != 0, "and writes no manifest")
open(model_blob, "wb").write(model)
p = anvil_run("create", "derived", "-f", modelfile)
check(p.returncode == 0, "create FROM the repaired store model works", p.stderr)

# ---- truncated and missing blobs ----
open(params_blob, "wb").write(params[:-3])
p = anvil_run("verify", "tiny")
check(p.returncode == 1 and "sha256:" + params_hex in p.stderr and "application/vnd.ollama.image.params" in p.stderr,
      "verify: a truncated params blob is named, exit 1", p.stderr)
os.unlink(params_blob)
p = anvil_run("verify", "tiny")
check(p.returncode == 1 and "missing" in p.stderr and "sha256:" + params_hex in p.stderr, "verify: a missing blob is named, exit 1",
      p.stdout + p.stderr)
finish()
