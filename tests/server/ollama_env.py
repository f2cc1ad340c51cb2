#!/usr/bin/env python3
"""ollama_env: every OLLAMA_* setting Anvil honours as the fallback of its ANVIL_* name,
each observed on a server started with only the OLLAMA_* name set: OLLAMA_HOST (the port it
listens on, and the CLI client reaching it), OLLAMA_MODELS (the store it lists), OLLAMA_KEEP_ALIVE
(expires_at in /api/ps), OLLAMA_NUM_PARALLEL (parallel slots), OLLAMA_MAX_LOADED_MODELS
(models resident in /api/ps), OLLAMA_ORIGINS (the CORS header), OLLAMA_CONTEXT_LENGTH
(context_length in /api/ps), OLLAMA_FLASH_ATTENTION (accepted, said in the log) and
OLLAMA_KV_CACHE_TYPE (q8_0 and q4_0 run as such, /api/ps sizes the KV cache by the real
type's bytes; a bad value refused with its name), the ones that map with a translation
(OLLAMA_LLM_LIBRARY=cpu/vulkan -> ANVIL_BACKEND, OLLAMA_GPU_OVERHEAD -> ANVIL_GPU_OVERHEAD, a bad
value refused naming it), and one warning line at start for each OLLAMA_* that has no effect
(OLLAMA_LOAD_TIMEOUT, OLLAMA_SCHED_SPREAD, OLLAMA_LLM_LIBRARY=cuda_v12, an unknown one; none for
OLLAMA_VULKAN=1 or a shared setting). The ANVIL_* name wins when both are set.

usage: ollama_env.py ANVIL_BINARY MODEL.gguf
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from common import Server, check, finish, post_json, request, wait_until

anvil, model_path = sys.argv[1], os.path.abspath(sys.argv[2])


def serve(env):
    """A server whose ANVIL_* twins of the given OLLAMA_* names are unset."""
    e = dict(env)
    for k in list(env):
        if k.startswith("OLLAMA_"):
            e.setdefault("ANVIL_" + k[7:], None)
    return Server(anvil, env=e)


def generate(srv, model, **opts):
    body = {"model": model, "prompt": "hello", "stream": False, "options": {"num_predict": 2, "temperature": 0}}
    body.update(opts)
    return post_json(srv, "/api/generate", body, timeout=300)


def ps(srv):
    status, _, data = request(srv, "GET", "/api/ps")
    return json.loads(data)["models"] if status == 200 else None


# OLLAMA_HOST: the address to listen on; port 0 picks one (the harness reads it back)
srv = serve({"OLLAMA_HOST": "127.0.0.1:0"})
check(srv.port is not None and srv.port != 11434, "OLLAMA_HOST=127.0.0.1:0: listens on a picked port")
status, _, _ = request(srv, "GET", "/api/version")
check(status == 200, "OLLAMA_HOST: the API answers on that port")
# the CLI's client: OLLAMA_HOST names the server `anvil ps` talks to
cenv = {k: v for k, v in os.environ.items() if k != "ANVIL_HOST"}
cenv["OLLAMA_HOST"] = srv.host
p = subprocess.run([anvil, "ps"], env=cenv, capture_output=True, text=True, timeout=60)
check(p.returncode == 0 and "NAME" in p.stdout, "anvil ps reaches the server named by OLLAMA_HOST", p.stdout + p.stderr)
cenv["OLLAMA_HOST"] = "127.0.0.1:1"
p = subprocess.run([anvil, "ps"], env=cenv, capture_output=True, text=True, timeout=60)
check(p.returncode != 0, "anvil ps fails against a dead OLLAMA_HOST (the variable is really read)", p.stdout + p.stderr)
srv.stop()

# ANVIL_HOST wins over OLLAMA_HOST
srv = Server(anvil, env={"OLLAMA_HOST": "127.0.0.1:1"})
check(srv.port not in (None, 1), "ANVIL_HOST wins over OLLAMA_HOST")
srv.stop()

# OLLAMA_MODELS: the store (a model created there by the CLI is listed by the server)
store = tempfile.mkdtemp(prefix="anvil-ollama-models-")
try:
    mf = os.path.join(store, "Modelfile")
    with open(mf, "w") as f:
        f.write('FROM "%s"\n' % model_path)
    cenv = {k: v for k, v in os.environ.items() if k not in ("ANVIL_MODELS",)}
    cenv["OLLAMA_MODELS"] = store
    cenv["HOME"] = store
    p = subprocess.run([anvil, "create", "envtest:latest", "-f", mf], env=cenv, capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, "anvil create with only OLLAMA_MODELS set", p.stderr[-1000:])
    check(os.path.isdir(os.path.join(store, "manifests")), "the model went into $OLLAMA_MODELS")
    srv = serve({"OLLAMA_MODELS": store})
    check(("models in %s" % store) in srv.log(), "OLLAMA_MODELS: the server's store", srv.log()[-500:])
    status, _, data = request(srv, "GET", "/api/tags")
    names = [m["name"] for m in json.loads(data)["models"]] if status == 200 else []
    check("envtest:latest" in names, "OLLAMA_MODELS: /api/tags lists the model created there", names)
    srv.stop()
finally:
    shutil.rmtree(store, ignore_errors=True)

# OLLAMA_KEEP_ALIVE: how long an idle model stays loaded (expires_at in /api/ps)
srv = serve({"OLLAMA_KEEP_ALIVE": "2h"})
st, _, obj, _ = generate(srv, model_path)
check(st == 200, "generate (keep-alive 2h)", obj)
models = ps(srv) or []
check(len(models) == 1, "one model loaded", models)
if models:
    exp = models[0]["expires_at"]
    # RFC 3339; compare the hour field against now + 2h through the epoch seconds Python reads
    from datetime import datetime
    t = datetime.fromisoformat(exp.replace("Z", "+00:00")).timestamp()
    check(abs(t - (time.time() + 7200)) < 120, "OLLAMA_KEEP_ALIVE=2h: expires about 2 h from now", exp)
srv.stop()
srv = serve({"OLLAMA_KEEP_ALIVE": "0"})
st, _, obj, _ = generate(srv, model_path)
check(st == 200, "generate (keep-alive 0)", obj)
check(wait_until(lambda: ps(srv) == [], 30), "OLLAMA_KEEP_ALIVE=0: the model unloads after the request", ps(srv))
srv.stop()

# OLLAMA_NUM_PARALLEL / OLLAMA_MAX_LOADED_MODELS / OLLAMA_CONTEXT_LENGTH, and the ANVIL_ name winning
tmp = tempfile.mkdtemp(prefix="anvil-ollama-env-")
try:
    second = os.path.join(tmp, "second.gguf")
    shutil.copyfile(model_path, second)
    srv = serve({"OLLAMA_NUM_PARALLEL": "3", "OLLAMA_MAX_LOADED_MODELS": "1", "OLLAMA_CONTEXT_LENGTH": "256"})
    check("3 parallel slot(s)" in srv.log(), "OLLAMA_NUM_PARALLEL=3: three slots", srv.log()[-800:])
    check("up to 1 model(s) loaded" in srv.log(), "OLLAMA_MAX_LOADED_MODELS=1 in the start-up line", srv.log()[-800:])
    for path in (model_path, second):
        st, _, obj, _ = generate(srv, path)
        check(st == 200, "generate %s" % os.path.basename(path), obj)
    models = ps(srv) or []
    check(len(models) == 1 and models[0]["model"].endswith("second.gguf"),
          "OLLAMA_MAX_LOADED_MODELS=1: loading a second model evicts the first", [m.get("model") for m in models])
    check(bool(models) and models[0]["context_length"] == 256, "OLLAMA_CONTEXT_LENGTH=256: context_length in /api/ps",
          models)
    srv.stop()
    srv = Server(anvil, env={"ANVIL_NUM_PARALLEL": "2", "OLLAMA_NUM_PARALLEL": "5", "OLLAMA_MAX_LOADED_MODELS": None,
                             "ANVIL_MAX_LOADED_MODELS": None})
    check("2 parallel slot(s)" in srv.log(), "ANVIL_NUM_PARALLEL wins over OLLAMA_NUM_PARALLEL", srv.log()[-800:])
    for path in (model_path, second):
        generate(srv, path)
    check(len(ps(srv) or []) == 2, "without OLLAMA_MAX_LOADED_MODELS both models stay loaded (default 3)")
    srv.stop()
finally:
    shutil.rmtree(tmp, ignore_errors=True)

# OLLAMA_ORIGINS: extra CORS origins
srv = serve({"OLLAMA_ORIGINS": "https://app.example.test"})
_, h, _ = request(srv, "GET", "/api/version", headers={"Origin": "https://app.example.test"})
check(h.get("access-control-allow-origin") == "https://app.example.test", "OLLAMA_ORIGINS: the origin is allowed", h)
_, h, _ = request(srv, "GET", "/api/version", headers={"Origin": "https://other.example.test"})
check("access-control-allow-origin" not in h, "an origin not in OLLAMA_ORIGINS is not", h)
srv.stop()

# OLLAMA_FLASH_ATTENTION: accepted and said so
srv = serve({"OLLAMA_FLASH_ATTENTION": "1"})
check("OLLAMA_FLASH_ATTENTION=1: accepted" in srv.log(), "OLLAMA_FLASH_ATTENTION is acknowledged in the log",
      srv.log()[-800:])
srv.stop()

# OLLAMA_KV_CACHE_TYPE: each type runs as itself; /api/ps "size" counts the KV cache at the
# type's bytes per 32 elements (f16 64, q8_0 34, q4_0 18) and nothing else changes, so the
# size differences are in the exact ratio (64 - 34) : (34 - 18).
sizes = {}
for kvt in ("f16", "q8_0", "q4_0"):
    srv = serve({"OLLAMA_KV_CACHE_TYPE": kvt})
    check(("kv cache type %s" % kvt) in srv.log(), "OLLAMA_KV_CACHE_TYPE=%s" % kvt, srv.log()[-800:])
    check("not implemented" not in srv.log(), "OLLAMA_KV_CACHE_TYPE=%s: no fallback warning" % kvt,
          srv.log()[-800:])
    st, _, obj, _ = generate(srv, model_path)
    check(st == 200 and obj.get("response") is not None, "generate with a %s KV cache" % kvt, obj)
    models = ps(srv) or []
    sizes[kvt] = models[0]["size"] if models else None
    srv.stop()
ok = None not in sizes.values()
d_f16_q8 = sizes["f16"] - sizes["q8_0"] if ok else 0
d_q8_q4 = sizes["q8_0"] - sizes["q4_0"] if ok else 0
check(ok and d_q8_q4 > 0 and d_f16_q8 * 16 == d_q8_q4 * 30,
      "/api/ps size: the KV cache at f16/q8_0/q4_0 bytes (64:34:18 per 32 elements)", sizes)
e = {k: v for k, v in os.environ.items() if not k.startswith("ANVIL_KV")}
e.update({"OLLAMA_KV_CACHE_TYPE": "bf8", "ANVIL_HOST": "127.0.0.1:0", "HOME": tempfile.gettempdir(),
          "ANVIL_MODELS": os.path.join(tempfile.gettempdir(), "anvil-ollama-env-unused")})
p = subprocess.run([anvil, "serve"], env=e, capture_output=True, text=True, timeout=60)
check(p.returncode != 0 and "OLLAMA_KV_CACHE_TYPE: 'bf8' is not f16, q8_0, q4_0 or f32" in p.stderr,
      "a bad OLLAMA_KV_CACHE_TYPE is refused, naming the variable", p.stderr[-500:])

# The settings Ollama has that do nothing here: one warning line each at start, naming them.
srv = serve({"OLLAMA_LOAD_TIMEOUT": "10m", "OLLAMA_SCHED_SPREAD": "1", "OLLAMA_LLM_LIBRARY": "cuda_v12",
             "OLLAMA_NOT_A_SETTING": "x", "OLLAMA_VULKAN": "1", "OLLAMA_KEEP_ALIVE": "5m"})
log = srv.log()
for name in ("OLLAMA_LOAD_TIMEOUT", "OLLAMA_SCHED_SPREAD", "OLLAMA_LLM_LIBRARY=cuda_v12", "OLLAMA_NOT_A_SETTING"):
    check(sum(1 for l in log.splitlines() if "warning: " + name in l) == 1, "one start-up warning for " + name, log[-1500:])
for name in ("OLLAMA_VULKAN", "OLLAMA_KEEP_ALIVE"):
    check("warning: " + name not in log, "no warning for " + name, log[-1500:])
srv.stop()


def run_local(extra_env):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("ANVIL_BACKEND", "ANVIL_GPU_OVERHEAD", "OLLAMA_"))}
    e.update(extra_env)
    e.update({"HOME": tempfile.gettempdir(), "ANVIL_MODELS": os.path.join(tempfile.gettempdir(), "anvil-ollama-env-unused")})
    return subprocess.run([anvil, "run", model_path, "hi", "-n", "1", "--local"], env=e, capture_output=True, text=True,
                          timeout=120)


# OLLAMA_LLM_LIBRARY maps to ANVIL_BACKEND: vulkan with no usable Vulkan device is the same
# refusal as ANVIL_BACKEND=vulkan (the variable is read), cpu runs on the CPU.
p = run_local({"OLLAMA_LLM_LIBRARY": "vulkan", "ANVIL_VK_VISIBLE_DEVICES": "-1"})
check(p.returncode != 0 and "no vulkan device" in p.stderr, "OLLAMA_LLM_LIBRARY=vulkan forces the Vulkan backend",
      p.stderr[-500:])
p = run_local({"OLLAMA_LLM_LIBRARY": "cpu_avx2"})
check(p.returncode == 0, "OLLAMA_LLM_LIBRARY=cpu_avx2 runs on the CPU", p.stderr[-500:])
# OLLAMA_GPU_OVERHEAD maps to ANVIL_GPU_OVERHEAD (a bad value is refused, naming it)
p = run_local({"OLLAMA_GPU_OVERHEAD": "lots"})
check(p.returncode != 0 and "OLLAMA_GPU_OVERHEAD=lots: expected a byte count" in p.stderr,
      "a bad OLLAMA_GPU_OVERHEAD is refused, naming the variable", p.stderr[-500:])
p = run_local({"OLLAMA_GPU_OVERHEAD": "536870912"})
check(p.returncode == 0, "OLLAMA_GPU_OVERHEAD=536870912 is accepted", p.stderr[-500:])

finish()
