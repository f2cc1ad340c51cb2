#!/usr/bin/env python3
"""habits: the day-one paper cuts of issue 31 that a user coming from Ollama hits first, each
observed through the binary (Linux, and Windows under Wine with --windows):
- a second `anvil serve` on a port already served fails at once with one line naming the
  address, and the first server keeps answering (MHD's SO_REUSEPORT let both listen and split
  the requests);
- `anvil create -f DIR/Modelfile` resolves a relative FROM against the Modelfile's folder, not
  the current one (on Windows also with a backslash in the -f path); `create -q` shows the
  quantization's progress in %;
- `anvil run` takes Ollama's run flags (--keepalive, --nowordwrap, --insecure, --truncate,
  --dimensions; "unknown option" broke scripts), and an embedding model's run prints its
  embedding as Ollama's CLI does (one JSON array, normalised, cut to --dimensions), the same in
  this process and through a server (equal to the server's /api/embed), and --truncate=false
  refuses an input longer than the context;
- a prompt longer than the context is shortened, not refused (Ollama's "truncate", default
  true; OpenAI clients cannot set num_ctx): /api/chat keeps the system message and says what
  went in "prompt_truncated", /v1/chat/completions in usage.prompt_truncated; "truncate": false
  is a 400 naming both sizes;
- client mode: with ANVIL_HOST (or OLLAMA_HOST) set, create (the FROM file uploaded as a blob),
  list, show (and --modelfile, --system, -v), cp and rm act on that server's store, not the local
  one (before: "not found" for the server's models);
- Windows only: `anvil doctor` looks for vulkan-1.dll (it looked for libvulkan.so.1 and always
  reported "No Vulkan loader"); FROM C:\\... and FROM C:/... (drive-letter paths; Wine's Z: is /);
  an Ollama store in another folder of the same drive is listed (MinGW's stat reports inode 0, so
  every folder looked like the Anvil store and the Ollama store was dropped); `serve --help` shows
  %USERPROFILE% paths.

usage: habits.py ANVIL_BINARY MODEL.gguf [--embed EMBEDDING.gguf] [--windows]
"""
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
from common import Server, check, finish, request  # noqa: E402

anvil, model = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
windows = "--windows" in sys.argv[3:]
embed_model = os.path.abspath(sys.argv[sys.argv.index("--embed") + 1]) if "--embed" in sys.argv else None
tmp = tempfile.mkdtemp(prefix="anvil-habits-")


def win_path(p, sep="\\"):
    """A Unix path as a Windows program under Wine names it (drive Z: is /)."""
    return "Z:" + p.replace("/", sep)


def run(args, env=None, cwd=None, timeout=120):
    e = dict(os.environ, HOME=tmp, ANVIL_MODELS=os.path.join(tmp, "store"), ANVIL_BACKEND="cpu")
    e.pop("OLLAMA_MODELS", None)
    e.pop("ANVIL_HOST", None)
    e.pop("OLLAMA_HOST", None)
    e.update(env or {})
    return subprocess.run([anvil] + args, capture_output=True, text=True, env=e, cwd=cwd or tmp, timeout=timeout)


# 1. a second server on a served port
srv = Server(anvil)
try:
    t0 = time.time()
    second = subprocess.Popen([anvil, "serve"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env=dict(srv.env, ANVIL_HOST=srv.host))
    try:
        _, err = second.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        second.terminate()
        _, err = second.communicate()
        second.returncode = None
    lines = [l for l in err.splitlines() if l.strip()]
    check(second.returncode not in (0, None), "a second serve on %s exits non-zero at once (got %s)" % (srv.host, second.returncode))
    check(any("cannot listen on" in l and str(srv.port) in l for l in lines),
          "its error names the address", lines[-3:])
    check(time.time() - t0 < 30, "it fails at once (%.1f s)" % (time.time() - t0))
    status, _, _ = request(srv, "GET", "/api/version")
    check(status == 200, "the first server still answers (%d)" % status)
finally:
    srv.stop()

# 2. relative FROM against the Modelfile's folder
mdir = os.path.join(tmp, "modelfiles", "sub")
os.makedirs(mdir)
shutil.copy(model, os.path.join(mdir, "m.gguf"))
with open(os.path.join(mdir, "Modelfile"), "w") as f:
    f.write("FROM ./m.gguf\nPARAMETER temperature 0\n")
elsewhere = os.path.join(tmp, "elsewhere")
os.makedirs(elsewhere)
dash_f = os.path.join(mdir, "Modelfile")
p = run(["create", "relfrom", "-f", dash_f], cwd=elsewhere)
check(p.returncode == 0, "create -f DIR/Modelfile with FROM ./m.gguf from another folder", p.stderr.strip()[-300:])
p = run(["create", "relfrom-q", "-f", dash_f, "-q", "q4_K_M"], cwd=elsewhere)
pcts = [int(l.rsplit(" ", 1)[1][:-1]) for l in p.stderr.splitlines() if l.startswith("quantizing ") and l.endswith("%")]
check(p.returncode == 0 and len(pcts) >= 2 and pcts == sorted(pcts) and pcts[-1] == 100,
      "create -q shows the quantization's progress in %% (%s)" % pcts, p.stdout[-300:] + p.stderr[-300:])
if windows:
    p = run(["create", "relfrom-bs", "-f", win_path(dash_f)], cwd=elsewhere)
    check(p.returncode == 0, "create -f Z:\\...\\Modelfile (backslashes), relative FROM", p.stderr.strip()[-300:])

# 3. Ollama's run flags, and an embedding model's run
flags = ["--keepalive", "1m", "--nowordwrap", "--insecure"]
p = run(["run", model, "hi", "-n", "2", "--local"] + flags)
check(p.returncode == 0, "run takes --keepalive, --nowordwrap and --insecure", p.stderr.strip()[-300:])
if embed_model:
    text = "The quick brown fox jumps over the lazy dog"
    p = run(["run", embed_model, text, "--local", "--dimensions", "8", "--truncate"] + flags)
    local = json.loads(p.stdout) if p.returncode == 0 else None
    check(isinstance(local, list) and len(local) == 8 and abs(sum(x * x for x in local) - 1) < 1e-5,
          "run EMBEDDING-MODEL TEXT --dimensions 8 prints a unit vector of 8", (p.stdout[:200], p.stderr[-300:]))
    p = run(["run", embed_model, text, "--local"])
    full = json.loads(p.stdout) if p.returncode == 0 else []
    check(len(full) > 8, "without --dimensions: every dimension (%d)" % len(full), p.stderr[-300:])
    p = run(["run", embed_model, " ".join([text] * 40), "--local", "--ctx", "16", "--truncate=false"])
    check(p.returncode != 0 and "exceeds the context length" in p.stderr, "--truncate=false refuses a long input",
          p.stderr[-300:])
    p = run(["run", embed_model, " ".join([text] * 40), "--local", "--ctx", "16"])
    check(p.returncode == 0 and len(json.loads(p.stdout or "[]")) == len(full), "by default a long input is cut",
          p.stderr[-300:])
    srv = Server(anvil)
    try:
        _, _, body = request(srv, "POST", "/api/embed", {"model": embed_model, "input": text, "dimensions": 8})
        api = json.loads(body)["embeddings"][0]
        p = run(["run", embed_model, text, "--dimensions", "8"] + flags, env={"ANVIL_HOST": srv.host})
        remote = json.loads(p.stdout) if p.returncode == 0 else None
        f32 = lambda v: [struct.unpack("f", struct.pack("f", x))[0] for x in v or []]  # noqa: E731
        check(remote is not None and f32(remote) == f32(api), "through the server: the server's /api/embed vector (as float32)",
              (remote, api, p.stderr[-300:]))
        cos = sum(a * b for a, b in zip(local or [], api)) / max(1e-30, math.sqrt(sum(a * a for a in api)))
        check(local is not None and cos > 0.99999, "in this process: the same vector (cosine %.7f)" % cos)
    finally:
        srv.stop()

# 4. prompts longer than the context (a 64-token context on the server)
srv = Server(anvil, env={"ANVIL_CONTEXT_LENGTH": "64"})
try:
    long_text = "the quick brown fox jumps over the lazy dog " * 40
    msgs = [{"role": "system", "content": "Answer in French."}, {"role": "user", "content": "hello"},
            {"role": "assistant", "content": "bonjour"}, {"role": "user", "content": long_text}]
    st, _, body = request(srv, "POST", "/api/chat", {"model": model, "messages": msgs, "stream": False,
                                                      "options": {"num_predict": 2, "temperature": 0}})
    obj = json.loads(body)
    t = obj.get("prompt_truncated") or {}
    check(st == 200 and t.get("messages") == 2 and t.get("tokens", 0) > 0 and obj.get("prompt_eval_count", 99) <= 64,
          "/api/chat: a prompt over the context is shortened and says so", body[-400:])
    st, _, body = request(srv, "POST", "/api/chat", {"model": model, "messages": msgs, "stream": False, "truncate": False,
                                                      "options": {"num_predict": 2}})
    check(st == 400 and b"context length of 64" in body, "/api/chat with truncate false: a 400 naming the sizes", body[-300:])
    st, _, body = request(srv, "POST", "/v1/chat/completions", {"model": model, "messages": msgs, "max_tokens": 2})
    obj = json.loads(body)
    t = (obj.get("usage") or {}).get("prompt_truncated") or {}
    check(st == 200 and t.get("tokens", 0) > 0, "/v1/chat/completions: shortened, usage.prompt_truncated says so",
          body[-400:])
    check("a prompt longer than the context" in srv.log(), "the server log says so")
finally:
    srv.stop()

# 5. client mode: the store commands go to the server of ANVIL_HOST / OLLAMA_HOST
srv_store = os.path.join(tmp, "server-store")
srv = Server(anvil, models_dir=srv_store)
try:
    local_store = os.path.join(tmp, "client-local-store")
    for var in ("ANVIL_HOST", "OLLAMA_HOST"):
        cenv = {var: srv.host, "ANVIL_MODELS": local_store}
        name = "remote-" + var.split("_")[0].lower()
        mf = os.path.join(tmp, "Modelfile-" + name)
        with open(mf, "w") as f:
            f.write('FROM %s\nSYSTEM "be brief"\nPARAMETER temperature 0.25\n' % os.path.join(mdir, "m.gguf"))
        p = run(["create", name, "-f", mf], env=cenv)
        check(p.returncode == 0 and "success" in p.stdout, "%s: create sends the model to the server" % var, p.stdout + p.stderr)
        p = run(["list"], env=cenv)
        check(p.returncode == 0 and name + ":latest" in p.stdout, "%s: list shows the server's models" % var, p.stdout + p.stderr)
        p = run(["show", name], env=cenv)
        check(p.returncode == 0 and "completion" in p.stdout and "be brief" in p.stdout and "temperature" in p.stdout,
              "%s: show prints the server's model" % var, p.stdout + p.stderr)
        p = run(["show", name, "--system"], env=cenv)
        check(p.stdout.strip() == "be brief", "%s: show --system" % var, p.stdout + p.stderr)
        p = run(["show", name, "--modelfile"], env=cenv)
        check("PARAMETER temperature 0.25" in p.stdout, "%s: show --modelfile" % var, p.stdout + p.stderr)
        p = run(["show", name, "-v"], env=cenv)
        check(p.returncode == 0 and "general.architecture" in p.stdout, "%s: show -v prints the metadata" % var, p.stdout[-500:])
        p = run(["cp", name, name + "-copy"], env=cenv)
        check(p.returncode == 0 and "copied" in p.stdout, "%s: cp" % var, p.stdout + p.stderr)
        p = run(["rm", name, name + "-copy"], env=cenv)
        check(p.returncode == 0 and p.stdout.count("deleted") == 2, "%s: rm" % var, p.stdout + p.stderr)
        st, _, body = request(srv, "GET", "/api/tags")
        check(name.encode() not in body, "%s: the server's store no longer has it" % var, body[-300:])
        check(not os.path.exists(os.path.join(local_store, "manifests")), "%s: the local store was never written" % var)
    p = run(["show", model, "-v"])
    check(p.returncode == 0 and "general.architecture" in p.stdout, "show -v (local) prints the metadata", p.stdout[-300:])
    p = run(["list"], env={"ANVIL_HOST": "127.0.0.1:1", "ANVIL_MODELS": local_store})
    check(p.returncode != 0 and "could not connect" in p.stderr, "a dead ANVIL_HOST is an error, not the local store",
          p.stderr[-300:])
finally:
    srv.stop()

if windows:
    # 6. doctor's loader
    p = run(["doctor"])
    out = p.stdout + p.stderr
    check("libvulkan.so.1" not in out, "doctor under Windows does not look for libvulkan.so.1")
    check("No Vulkan loader" not in out, "doctor finds Wine's vulkan-1.dll (no 'No Vulkan loader' problem)")
    # 7. drive-letter FROM paths
    for i, sep in enumerate(("\\", "/")):
        mf = os.path.join(tmp, "Modelfile-drive%d" % i)
        with open(mf, "w") as f:
            f.write("FROM %s\n" % win_path(os.path.join(mdir, "m.gguf"), sep))
        p = run(["create", "drive%d" % i, "-f", mf])
        check(p.returncode == 0, "FROM %s" % (win_path(mdir, sep) + sep + "m.gguf",), p.stderr.strip()[-300:])
    # 8. an Ollama store in another folder of the same drive is listed
    ollama_store = os.path.join(tmp, "ollama-store")
    p = run(["create", "from-ollama", "-f", dash_f], env={"ANVIL_MODELS": ollama_store})
    check(p.returncode == 0, "a model created in the second store", p.stderr.strip()[-300:])
    p = run(["list"], env={"OLLAMA_MODELS": ollama_store})
    check("from-ollama" in p.stdout, "anvil list shows the Ollama store's model", p.stdout[-400:])
    # 9. serve --help
    p = run(["serve", "--help"])
    check("%USERPROFILE%" in p.stdout and "~/.anvil" not in p.stdout, "serve --help shows Windows paths")
    check("vulkan-1.dll" in p.stdout, "serve --help names vulkan-1.dll as the loader")

shutil.rmtree(tmp, ignore_errors=True)
finish()
