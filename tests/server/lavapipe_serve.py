"""lavapipe_serve: `anvil serve` with its models on a Vulkan device (lavapipe, selected by
ANVIL_VK_VISIBLE_DEVICES=0, the Khronos validation layer on): four concurrent greedy
requests (their decode steps batched into one forward pass on the GPU backend) each give
exactly the text the same request gives alone; `/api/ps` and `anvil ps` report the model as
100% GPU (every layer and the output head are there), with Anvil's "anvil" fields naming vulkan0
and its GPU layers; the placement is logged; zero validation messages.
Usage: lavapipe_serve.py ANVIL MODEL.gguf ICD.json   (exit 77 = no lavapipe ICD)"""
import json
import os
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import check  # noqa: E402

anvil, gguf, icd = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
if not os.path.exists(icd):
    print("SKIP: no lavapipe ICD at %s" % icd)
    sys.exit(77)

env = {"VK_ICD_FILENAMES": icd, "ANVIL_VK_VISIBLE_DEVICES": "0", "ANVIL_VK_VALIDATE": "1",
       "ANVIL_BACKEND": None, "ANVIL_NUM_PARALLEL": "4",
       # Mesa keeps allocations until exit: LeakSanitizer would flag the driver, not us
       "ASAN_OPTIONS": "detect_leaks=0:fast_unwind_on_malloc=1"}
srv = common.Server(anvil, env=env)
prompts = ["hello %d" % i for i in range(4)]


def generate(prompt):
    st, _, obj, _ = common.post_json(srv, "/api/generate", {
        "model": gguf, "prompt": prompt, "raw": True, "stream": False,
        "options": {"num_predict": 24, "temperature": 0}})
    return st, obj or {}


try:
    alone = {p: generate(p) for p in prompts}
    for p, (st, r) in alone.items():
        check(st == 200 and r.get("eval_count") == 24, "alone '%s': 24 tokens (%s %s)" % (p, st, r.get("error")))
    together = {}
    threads = [threading.Thread(target=lambda p=p: together.__setitem__(p, generate(p))) for p in prompts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p in prompts:
        check(together[p][1].get("response") == alone[p][1].get("response"),
              "'%s': concurrent text == alone (%r vs %r)" % (p, together[p][1].get("response"), alone[p][1].get("response")))
    st, _, body = common.request(srv, "GET", "/api/ps")
    models = json.loads(body).get("models", []) if st == 200 else []
    check(len(models) == 1 and 0 < models[0]["size_vram"] == models[0]["size"],
          "/api/ps: every layer and the head on the GPU: size_vram == size (%s)" % models)
    a = models[0].get("anvil", {}) if models else {}
    check(a.get("backend") == "vulkan0" and "llvmpipe" in a.get("device", "") and a.get("layers", 0) > 0
          and a.get("gpu_layers") == a.get("layers") and a.get("parallel") == 4,
          "/api/ps anvil: backend vulkan0 on llvmpipe, every layer on the GPU, 4 slots (%s)" % a)
    e = dict(srv.env)
    e["ANVIL_HOST"] = srv.host
    ps = subprocess.run([anvil, "ps"], env=e, capture_output=True, text=True, timeout=60)
    check("100% GPU" in ps.stdout, "anvil ps: 100%% GPU: %s" % ps.stdout)
    # num_gpu 1: the model reloads with only its last layer (and the head) on the GPU
    st, _, obj, _ = common.post_json(srv, "/api/generate", {
        "model": gguf, "prompt": "hello", "raw": True, "stream": False,
        "options": {"num_predict": 4, "temperature": 0, "num_gpu": 1}})
    check(st == 200, "num_gpu 1 request: %s" % st)
    ps = subprocess.run([anvil, "ps"], env=e, capture_output=True, text=True, timeout=60)
    check("CPU/GPU" in ps.stdout and "100% GPU" not in ps.stdout, "anvil ps: a CPU/GPU split after num_gpu 1: %s" % ps.stdout)
    st, _, body = common.request(srv, "GET", "/api/ps")
    a = [m["anvil"] for m in json.loads(body).get("models", [])] if st == 200 else []
    check(len(a) == 1 and a[0]["gpu_layers"] == 1 and a[0]["backend"] == "vulkan0",
          "/api/ps anvil after num_gpu 1: 1 GPU layer on vulkan0 (%s)" % a)
    st, _, body = common.request(srv, "GET", "/metrics")
    body = body.decode()
    check(st == 200 and 'anvil_model_memory_bytes' in body and 'device="gpu"' in body, "metrics: GPU memory series")
    check('anvil_model_gpu_layers{replica="' in body and 'backend="vulkan0"' in body, "metrics: GPU layers and backend vulkan0")
finally:
    rc, log = srv.stop()
check("vulkan0" in log and "layers" in log, "the placement names vulkan0 and its layers")
check("vulkan validation" not in log, "zero validation messages")
common.finish()
