#!/usr/bin/env python3
"""POST /api/pull through Ollama's Python client, from the local test registry
(tests/pylib/registry_server.py, plain http: insecure): the NDJSON progress (pulling manifest,
per-layer digest/total/completed, success), the pulled model listed and shown, a second
pull, stream:false, a missing model (404 / an in-stream error), a bad name (400), and a
corrupted blob (the error, no manifest written).

usage: pull_api.py ANVIL_BINARY WORK_DIR
"""
import hashlib
import json
import os
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import prom  # noqa: E402
from harness import check  # noqa: E402

import ollama  # noqa: E402

anvil, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
model_a = harness.make_model(os.path.join(work, "tiny-llama-q4_0.gguf"), family="llama", qtype="q4_0")
model_b = harness.make_model(os.path.join(work, "tiny-qwen3-q8_0.gguf"), family="qwen3", qtype="q8_0")
hex_a = hashlib.sha256(open(model_a, "rb").read()).hexdigest()

registry = subprocess.Popen([sys.executable, os.path.join(harness.ROOT, "tests", "pylib", "registry_server.py"),
                             "--model", "library/regtiny:latest=" + model_a,
                             "--model", "testns/other:q8=" + model_b],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
reg_port = registry.stdout.readline().strip()
if not reg_port.isdigit():
    registry.kill()
    sys.exit("the test registry did not start: " + registry.stderr.read())
reg = "127.0.0.1:" + reg_port


def control(knobs):
    req = urllib.request.Request(f"http://{reg}/_control", data=json.dumps(knobs).encode(), method="POST")
    urllib.request.urlopen(req, timeout=30).read()


tmp = harness.workdir("pull-api")
srv = harness.Server(anvil, tmp)
client = ollama.Client(host=srv.url, timeout=300)
name_a = f"{reg}/library/regtiny:latest"
try:
    progress = list(client.pull(name_a, insecure=True, stream=True))
    statuses = [p.status for p in progress]
    check(statuses and statuses[0] == "pulling manifest", "pull: 'pulling manifest' first", statuses[:3])
    check(statuses and statuses[-1] == "success", "pull: 'success' last", statuses[-3:])
    layer = [p for p in progress if p.digest == "sha256:" + hex_a]
    size_a = os.path.getsize(model_a)
    check(layer and all(p.status == "pulling " + hex_a[:12] for p in layer), "pull: the model layer's status names it",
          [p.status for p in layer][:3])
    check(layer and layer[-1].total == size_a and layer[-1].completed == size_a, "pull: total and completed reach the size",
          layer[-1] if layer else None)
    check(all((p.completed or 0) <= (p.total or 0) for p in layer), "pull: completed never exceeds total")
    check("verifying sha256 digest" in statuses and "writing manifest" in statuses, "pull: verify and write steps",
          statuses)
    tags = {m.model: m for m in client.list().models}
    check(name_a in tags, "pull: the model is listed under its full name", list(tags))
    if name_a in tags:
        t = tags[name_a]
        check(t.digest == harness.manifest_hex(srv.models, name_a) and t.details.family == "llama" and t.details.quantization_level == "Q4_0",
              "pull: tags digest and details", t)
    s = client.show(name_a)
    check(s.license and "Test license" in s.license, "pull: show has the registry's license layer", s.license)
    blob = os.path.join(srv.models, "blobs", "sha256-" + hex_a)
    check(os.path.exists(blob) and os.path.getsize(blob) == size_a, "pull: the blob is in the store")

    again = client.pull(name_a, insecure=True, stream=False)
    check(again.status == "success", "pull again, stream false: success", again)
    g = client.generate(model=name_a, prompt="hi", raw=True, options={"num_predict": 2})
    check(g.done, "generate with the pulled model")

    try:
        client.pull(f"{reg}/library/missing:latest", insecure=True, stream=False)
        check(False, "pull a missing model (stream false) fails")
    except ollama.ResponseError as e:
        check(e.status_code == 404 and "\n" not in str(e), "pull a missing model (stream false): 404, one line",
              (e.status_code, str(e)))
    try:
        list(client.pull(f"{reg}/library/missing:latest", insecure=True, stream=True))
        check(False, "pull a missing model (stream) fails")
    except ollama.ResponseError as e:
        check("not found" in str(e), "pull a missing model (stream): the error names it", str(e))
    try:
        client.pull("../../etc/passwd", stream=False)
        check(False, "pull a bad name fails")
    except ollama.ResponseError as e:
        check(e.status_code == 400, "pull a bad name: 400", (e.status_code, str(e)))

    control({"corrupt": ["*"]})
    name_b = f"{reg}/testns/other:q8"
    try:
        list(client.pull(name_b, insecure=True, stream=True))
        check(False, "pull of a corrupted blob fails")
    except ollama.ResponseError as e:
        check("mismatch" in str(e) or "sha256" in str(e), "pull of a corrupted blob: digest error in the stream", str(e))
    check(name_b not in {m.model for m in client.list().models}, "a failed pull writes no manifest")
    control({"clear": True})
    # The failed pull may have left other layers complete but corrupted in partial files:
    # the next pull must fetch those again rather than fail on them.
    try:
        healed, err = client.pull(name_b, insecure=True, stream=False).status == "success", ""
    except ollama.ResponseError as e:
        healed, err = False, str(e)
    check(healed and name_b in {m.model for m in client.list().models},
          "pull after the registry heals succeeds at once", err)

    st, text = srv.get("/metrics")
    parsed = prom.parse(text)
    check((prom.value(parsed, "anvil_requests_total", route="/api/pull", code="2xx") or 0) >= 3,
          "metrics: pulls counted")
finally:
    rc = srv.stop()
    check(rc == 0, "anvil serve exits 0", "".join(srv.log[-20:]))
    registry.kill()
    registry.wait()
    harness.cleanup(tmp)
sys.exit(harness.finish())
