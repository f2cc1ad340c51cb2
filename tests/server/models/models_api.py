#!/usr/bin/env python3
"""The server's model-management API through Ollama's own Python client (ollama 0.6.3)
against `anvil serve` with a private store: version, blob upload, create (files +
parameters/system/template, from a store name, bad input), list, show, generate then ps
(size, size_vram 0 on CPU, expires_at), `anvil ps` / `anvil stop`, copy, delete, and
/metrics parsed strictly before and after requests.

usage: models_api.py ANVIL_BINARY WORK_DIR
"""
import datetime
import hashlib
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import prom  # noqa: E402
from harness import check  # noqa: E402

import ollama  # noqa: E402

anvil, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
gguf_path = harness.make_model(os.path.join(work, "tiny-gemma3-q8_0.gguf"))
gguf_bytes = open(gguf_path, "rb").read()
gguf_hex = hashlib.sha256(gguf_bytes).hexdigest()
params = harness.n_params(gguf_path)

tmp = harness.workdir("models-api")
srv = harness.Server(anvil, tmp)
client = ollama.Client(host=srv.url, timeout=300)


def raw(method, path, body=None, headers=None):
    """(status, body text) of one request, errors included."""
    req = urllib.request.Request(srv.url + path, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def status_of(fn):
    """The HTTP status of an ollama client call that should fail (None if it succeeded)."""
    try:
        fn()
    except ollama.ResponseError as e:
        return e.status_code, str(e)
    return None, ""


def metrics():
    st, text = srv.get("/metrics")
    check(st == 200, "/metrics answers 200")
    try:
        return prom.parse(text)
    except ValueError as e:
        check(False, "/metrics parses as Prometheus text", f"{e}\n{text}")
        return {"types": {}, "help": {}, "samples": []}


def anvil_cli(*args, host=None):
    env = dict(os.environ, ANVIL_HOST=host or srv.addr)
    return subprocess.run([anvil, *args], env=env, capture_output=True, text=True, timeout=120)


def ps_row(out, name):
    for line in out.splitlines()[1:]:
        if line.startswith(name + " "):
            return line
    return None


try:
    m0 = metrics()
    check(m0["types"].get("anvil_requests_total") == "counter", "metrics: anvil_requests_total is a counter", m0["types"])
    check(m0["types"].get("anvil_request_duration_seconds") == "histogram", "metrics: request duration is a histogram")
    for fam in ("anvil_models_loaded", "anvil_model_memory_bytes", "anvil_prompt_tokens_total",
                "anvil_generated_tokens_total", "anvil_tokens_per_second", "anvil_queue_length",
                "anvil_batched_steps_total"):
        check(fam in m0["types"] and fam in m0["help"], f"metrics: # HELP and # TYPE for {fam}")
    check(prom.value(m0, "anvil_models_loaded") == 0, "metrics: nothing loaded at start")

    # version
    st, body = srv.get("/api/version")
    v = json.loads(body).get("version", "")
    check(st == 200 and len(v.split(".")) == 3 and all(p.isdigit() for p in v.split(".")), "/api/version", body)
    check(client.list().models == [], "tags: empty store lists nothing")

    # blobs
    digest = "sha256:" + gguf_hex
    st, _ = raw("HEAD", "/api/blobs/" + digest)
    check(st == 404, "blob HEAD before upload: 404", st)
    wrong = "sha256:" + "0" * 64
    st, body = raw("POST", "/api/blobs/" + wrong, gguf_bytes[:4096])
    check(st == 400 and "mismatch" in body, "blob POST with a wrong digest: 400 digest mismatch", (st, body))
    st, _ = raw("HEAD", "/api/blobs/" + wrong)
    check(st == 404, "a mismatched upload leaves no blob", st)
    st, body = raw("POST", "/api/blobs/sha256:xyz", b"abc")
    check(st == 400, "blob POST with a malformed digest: 400", (st, body))
    st, body = raw("HEAD", "/api/blobs/..%2F..%2Fetc%2Fpasswd")
    check(st in (400, 404), "blob HEAD with a path in the digest: refused", (st, body))
    up = client.create_blob(gguf_path)
    check(up == digest, "create_blob uploads and returns the digest", up)
    st, _ = raw("HEAD", "/api/blobs/" + digest)
    check(st == 200, "blob HEAD after upload: 200", st)
    blob_file = os.path.join(srv.models, "blobs", "sha256-" + gguf_hex)
    check(os.path.exists(blob_file) and open(blob_file, "rb").read() == gguf_bytes, "the blob file holds the upload")
    st, _ = raw("POST", "/api/blobs/" + digest, gguf_bytes)
    check(st in (200, 201), "uploading an existing blob again is fine", st)

    # create
    template = "{{ if .System }}<sys>{{ .System }}</sys>{{ end }}{{ .Prompt }}"
    statuses = [p.status for p in client.create(
        model="tiny:test", files={"tiny.gguf": digest}, system="You are terse.", template=template,
        parameters={"temperature": 0.5, "top_k": 7, "stop": ["<eos>", "END"]}, license="MIT-like test license",
        stream=True)]
    check(statuses and statuses[-1] == "success", "create (stream) ends with success", statuses)
    check(len(statuses) >= 2, "create (stream) reports its steps", statuses)
    r = client.create(model="other/tiny:v2", from_="tiny:test", system="Another system.")
    check(r.status == "success", "create from a store name (not streamed)", r)
    for bad, what in ((dict(model="../evil", files={"tiny.gguf": digest}), "a '..' name"),
                      (dict(model="bad name", files={"tiny.gguf": digest}), "a name with a space"),
                      (dict(model="tiny:x", files={"tiny.gguf": "sha256:" + "1" * 64}), "a blob never uploaded"),
                      (dict(model="tiny:x", files={"tiny.gguf": digest}, parameters={"temperature": "hot"}),
                       "a parameter of the wrong type"),
                      (dict(model="tiny:x"), "neither from nor files")):
        code, msg = status_of(lambda: client.create(**bad))
        check(code == 400, f"create with {what}: 400", (code, msg))
        check("\n" not in msg, f"create with {what}: one-line error", msg)
    st, body = raw("POST", "/api/create", json.dumps({"model": "tiny:legacy", "stream": False,
                   "modelfile": "FROM tiny:test\nSYSTEM \"\"\"legacy system\"\"\"\nPARAMETER top_k 3\n"}).encode())
    check(st == 200 and json.loads(body).get("status") == "success", "create with a Modelfile (the older API)", body)
    st, body = raw("POST", "/api/show", json.dumps({"model": "tiny:legacy"}).encode())
    shown = json.loads(body) if st == 200 else {}
    check(shown.get("system") == "legacy system" and "top_k" in shown.get("parameters", ""),
          "the Modelfile's SYSTEM and PARAMETER are kept", shown.get("parameters"))
    st, body = raw("POST", "/api/create", json.dumps({"model": "tiny:x", "modelfile": "FROM tiny:test\nBOGUS x\n"}).encode())
    check(st == 400 and "BOGUS" in body.upper(), "create with a bad Modelfile: 400 naming the line", (st, body))
    client.delete("tiny:legacy")
    st, body = raw("POST", "/api/show", b"not json")
    check(st == 400 and "error" in json.loads(body), "show with a body that is not JSON: 400", (st, body))
    code, msg = status_of(lambda: client.create(model="tiny:x", from_="missing:model"))
    check(code == 404, "create from a missing model: 404", (code, msg))
    check(not os.path.exists(os.path.join(srv.models, "manifests", "registry.ollama.ai", "library", "tiny", "x")),
          "failed creates write no manifest")

    # list
    tags = {m.model: m for m in client.list().models}
    check(set(tags) == {"tiny:test", "other/tiny:v2"}, "tags lists both models", list(tags))
    t = tags.get("tiny:test")
    manifest_path = os.path.join(srv.models, "manifests", "registry.ollama.ai", "library", "tiny", "test")
    with open(manifest_path, "rb") as f:
        manifest_hex = hashlib.sha256(f.read()).hexdigest()   # Ollama's model ID (ollama list)
    if t:
        check(t.digest == manifest_hex, "tags digest: the manifest's sha256", t.digest)
        check(t.size >= len(gguf_bytes), "tags size: at least the GGUF", t.size)
        d = t.details
        check(d.format == "gguf" and d.family == "gemma3" and d.families == ["gemma3"], "tags details: gguf, gemma3", d)
        check(d.parameter_size == harness.human_number(params), "tags parameter_size like Ollama's",
              (d.parameter_size, params))
        check(d.quantization_level == "Q8_0", "tags quantization_level", d.quantization_level)
        age = datetime.datetime.now(datetime.timezone.utc) - t.modified_at
        check(t.modified_at.tzinfo is not None and abs(age.total_seconds()) < 600, "tags modified_at: RFC 3339 now",
              t.modified_at)
    st, body = srv.get("/api/tags")
    raw_tags = json.loads(body)["models"]
    check(all(m["name"] == m["model"] for m in raw_tags), "tags: name and model agree")

    # show
    s = client.show("tiny:test")
    st, body = raw("POST", "/api/show", json.dumps({"model": "tiny:test"}).encode())
    check(st == 200 and json.loads(body).get("system") == "You are terse.", "show system", body[:300])
    check(s.template == template, "show template", s.template)
    check(s.license and "MIT-like" in s.license, "show license", s.license)
    lines = [ln.split(None, 1) for ln in (s.parameters or "").splitlines()]
    check(["temperature", "0.5"] in lines and ["top_k", "7"] in lines, "show parameters: key value lines", s.parameters)
    check(['stop', '"<eos>"'] in lines and ['stop', '"END"'] in lines, "show parameters: one quoted line per stop",
          s.parameters)
    check(s.modelfile and "FROM " in s.modelfile and "You are terse." in s.modelfile, "show modelfile", s.modelfile)
    info = s.modelinfo or {}
    check(info.get("general.architecture") == "gemma3", "show model_info architecture")
    check(info.get("gemma3.context_length") == 32768, "show model_info context_length", info.get("gemma3.context_length"))
    check(info.get("general.parameter_count") == params, "show model_info parameter_count", info.get("general.parameter_count"))
    check(info.get("tokenizer.ggml.tokens") == [], "show: token table left out unless verbose",
          str(info.get("tokenizer.ggml.tokens"))[:80])
    check(isinstance(info.get("gemma3.attention.layer_norm_rms_epsilon"), float)
          and abs(info["gemma3.attention.layer_norm_rms_epsilon"] - 1e-6) < 1e-12, "show: float32 metadata printed short",
          info.get("gemma3.attention.layer_norm_rms_epsilon"))
    check("completion" in (s.capabilities or []), "show capabilities", s.capabilities)
    check(s.details.quantization_level == "Q8_0" and s.details.family == "gemma3", "show details", s.details)
    st, body = raw("POST", "/api/show", json.dumps({"model": "tiny:test", "verbose": True}).encode())
    vs = json.loads(body) if st == 200 else {}
    check(len(vs.get("model_info", {}).get("tokenizer.ggml.tokens", [])) == 768, "show verbose: the token table")
    tensors = vs.get("tensors", [])
    check(any(t.get("name") == "token_embd.weight" and t.get("type") == "Q8_0" and t.get("shape") == [128, 768]
              for t in tensors), "show verbose: tensors with type and shape", tensors[:2])
    s2 = json.loads(raw("POST", "/api/show", json.dumps({"model": "other/tiny:v2"}).encode())[1])
    check(s2.get("system") == "Another system." and s2.get("template") == template,
          "show: a model made FROM another inherits", s2)
    code, msg = status_of(lambda: client.show("missing:model"))
    check(code == 404, "show a missing model: 404", (code, msg))

    # generate, then ps
    g = client.generate(model="tiny:test", prompt="hello", raw=True, options={"num_predict": 3, "temperature": 0})
    check(g.done and g.eval_count and g.eval_count > 0, "generate on the created model", g)
    ps = client.ps().models
    check(len(ps) == 1, "ps: one model loaded", ps)
    now = datetime.datetime.now(datetime.timezone.utc)
    if ps:
        p = ps[0]
        check(p.name == "tiny:test" and p.model == "tiny:test", "ps name", p.name)
        check(p.digest == manifest_hex, "ps digest: the manifest's sha256", p.digest)
        check(p.size and p.size >= len(gguf_bytes) // 2, "ps size: weights and caches", p.size)
        check(p.size_vram == 0, "ps size_vram 0 on the CPU", p.size_vram)
        left = (p.expires_at - now).total_seconds()
        check(200 < left <= 301, "ps expires_at: keep_alive 5m from now", p.expires_at)
        check(p.context_length == 512, "ps context_length (ANVIL_CONTEXT_LENGTH)", p.context_length)
        check(p.details and p.details.family == "gemma3", "ps details", p.details)

    out = anvil_cli("ps")
    row = ps_row(out.stdout, "tiny:test")
    check(out.returncode == 0 and out.stdout.split()[:6] == ["NAME", "ID", "SIZE", "PROCESSOR", "CONTEXT", "UNTIL"],
          "anvil ps: header", out.stdout + out.stderr)
    check(row is not None and manifest_hex[:12] in row and "100% CPU" in row and " 512 " in row, "anvil ps: the row",
          out.stdout)
    check(row is not None and row.rstrip().endswith("minutes from now"), "anvil ps: UNTIL in minutes", row)

    m1 = metrics()
    check((prom.value(m1, "anvil_generated_tokens_total") or 0) >= g.eval_count, "metrics: generated tokens counted",
          prom.value(m1, "anvil_generated_tokens_total"))
    check((prom.value(m1, "anvil_prompt_tokens_total") or 0) >= 1, "metrics: prompt tokens counted")
    check(prom.value(m1, "anvil_models_loaded") == 1, "metrics: one model loaded")
    check((prom.value(m1, "anvil_model_memory_bytes", model="tiny:test", device="cpu") or 0) > 0
          and prom.value(m1, "anvil_model_memory_bytes", model="tiny:test", device="gpu") == 0,
          "metrics: the model's memory on the CPU")
    check((prom.value(m1, "anvil_tokens_per_second") or 0) > 0, "metrics: tokens per second")
    before = prom.value(m0, "anvil_requests_total", route="/api/tags", code="2xx") or 0
    after = prom.value(m1, "anvil_requests_total", route="/api/tags", code="2xx") or 0
    check(after >= before + 2, "metrics: /api/tags 2xx counter went up", (before, after))
    check((prom.value(m1, "anvil_requests_total", route="/api/show", code="4xx") or 0) >= 1,
          "metrics: a 4xx counted under its route")
    check((prom.value(m1, "anvil_request_duration_seconds_count", route="/api/generate") or 0) >= 1,
          "metrics: /api/generate latency observed")

    # keep_alive forever, then anvil stop
    client.generate(model="tiny:test", prompt="", keep_alive=-1)
    ps = client.ps().models
    check(ps and (ps[0].expires_at - now).total_seconds() > 20 * 365 * 86400, "ps: keep_alive -1 expires far away",
          ps[0].expires_at if ps else None)
    out = anvil_cli("ps")
    row = ps_row(out.stdout, "tiny:test")
    check(row is not None and row.rstrip().endswith("Forever"), "anvil ps: Forever", out.stdout)
    out = anvil_cli("stop", "tiny:test")
    check(out.returncode == 0 and out.stderr == "", "anvil stop exits 0 quietly", out.stderr)
    deadline = time.time() + 60
    while time.time() < deadline:
        out = anvil_cli("ps")
        row = ps_row(out.stdout, "tiny:test")
        if row is None or "Stopping..." in row:
            break
        time.sleep(0.2)
    check(out.returncode == 0 and (row is None or row.rstrip().endswith("Stopping...")),
          "anvil ps after stop: gone or Stopping...", out.stdout)
    deadline = time.time() + 60
    while client.ps().models and time.time() < deadline:
        time.sleep(0.2)
    check(client.ps().models == [], "ps after stop: nothing loaded")
    out = anvil_cli("stop", "missing:model")
    check(out.returncode != 0 and "missing:model" in out.stderr and out.stderr.count("\n") == 1,
          "anvil stop of an unknown model: one-line error", out.stderr)

    # copy, delete
    r = client.copy("tiny:test", "tiny:copy")
    check(r.status == "success", "copy", r)
    st, body = raw("POST", "/api/show", json.dumps({"model": "tiny:copy"}).encode())
    check(st == 200 and json.loads(body).get("system") == "You are terse.", "the copy shows the same system")
    check({m.model for m in client.list().models} == {"tiny:test", "tiny:copy", "other/tiny:v2"}, "tags after copy")
    code, msg = status_of(lambda: client.copy("missing:model", "tiny:c2"))
    check(code == 404, "copy from a missing model: 404", (code, msg))
    code, msg = status_of(lambda: client.copy("tiny:test", "a/b/c/d/e"))
    check(code == 400, "copy to a bad name: 400", (code, msg))
    r = client.delete("tiny:copy")
    check(r.status == "success", "delete", r)
    check("tiny:copy" not in {m.model for m in client.list().models}, "tags after delete")
    code, msg = status_of(lambda: client.delete("tiny:copy"))
    check(code == 404, "delete a missing model: 404", (code, msg))
    code, msg = status_of(lambda: client.delete("../../etc"))
    check(code == 400, "delete a bad name: 400", (code, msg))
    client.delete("other/tiny:v2")
    client.delete("tiny:test")
    check(client.list().models == [], "tags empty after deleting everything")
    check(not os.path.exists(blob_file), "the last delete prunes the GGUF blob")
finally:
    rc = srv.stop()
    check(rc == 0, "anvil serve exits 0 on SIGTERM", "".join(srv.log[-20:]))
    harness.cleanup(tmp)

# no server: the one-line error
out = anvil_cli("ps", host=srv.addr)
addr = srv.addr
check(out.returncode != 0 and out.stderr.strip() ==
      f"anvil: could not connect to a running anvil server at {addr} (start one with 'anvil serve')",
      "anvil ps without a server: the one-line error", out.stderr)
out = anvil_cli("stop", "x", host=srv.addr)
check(out.returncode != 0 and "could not connect" in out.stderr and out.stderr.count("\n") == 1,
      "anvil stop without a server: the one-line error", out.stderr)
sys.exit(harness.finish())
