#!/usr/bin/env python3
"""replicas: what a router in front of several `anvil serve` replicas reads from each (README
"Running several replicas"). Two servers with ANVIL_REPLICA_ID replica-a / replica-b (b with
a q8_0 KV cache and 3 slots) and one without (the host name): the real ollama client's
ps() parses /api/ps; Ollama's fields are exactly Ollama's and Anvil's own are under "anvil"
(replica, backend, device, layers and GPU layers against the model's block count, KV type,
slots, context, requests in flight while a stream runs and after it ends; an embedding model
is embedding_only with one slot); /metrics parses with prometheus_client and tests/server/models/prom.py,
every sample carries its replica label (the two replicas' series never collide), and the
per-model gauges agree with /api/ps; `anvil ps -v` shows the columns; a bad ANVIL_REPLICA_ID
stops the server with one line.

  replicas.py ANVIL MODEL.gguf EMBED_MODEL.gguf"""
import argparse
import json
import os
import socket
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "models"))
from common import Server, check, finish, post_json, request, wait_until  # noqa: E402
import prom  # noqa: E402

import ollama  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

OLLAMA_PS_KEYS = {"name", "model", "size", "digest", "details", "expires_at", "size_vram", "context_length"}


def raw_ps(srv):
    st, _, body = request(srv, "GET", "/api/ps")
    return st, json.loads(body)


def metrics(srv):
    st, _, body = request(srv, "GET", "/metrics")
    text = body.decode()
    fams = {f.name: f for f in text_string_to_metric_families(text)}   # raises on a malformed exposition
    prom.parse(text)   # strict: HELP/TYPE first, no repeated series, cumulative buckets
    return st, text, fams


def samples(fams, name, **labels):
    f = fams.get(name)
    return [s for s in (f.samples if f else []) if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]


def replica_checks(srv, rid, model, gguf, parallel, kv):
    oc = ollama.Client(host=srv.base)
    r = oc.generate(model=model, prompt="hello", options={"num_predict": 2, "temperature": 0})
    check(r.done, "%s: a generation loads the model" % rid)
    ps = oc.ps()   # the real client parses the reply
    check(len(ps.models) == 1 and ps.models[0].model == model and ps.models[0].size > 0
          and ps.models[0].context_length > 0 and ps.models[0].details.family == "gemma3",
          "%s: ollama.ps() parses the entry (%s)" % (rid, ps.models[:1]))
    st, o = raw_ps(srv)
    entry = o["models"][0]
    check(set(entry) == OLLAMA_PS_KEYS | {"anvil"}, "%s: Ollama's ps fields exactly, plus 'anvil' (%s)" % (rid, sorted(entry)))
    a = entry["anvil"]
    show = oc.show(model)
    n_layer = show.modelinfo.get("gemma3.block_count")
    check(a["replica"] == rid and o["anvil"]["replica"] == rid, "%s: replica id in the entry and the reply (%s)" % (rid, a["replica"]))
    check(a["backend"] == "cpu" and a["device"] == "CPU" and a["gpu_layers"] == 0 and entry["size_vram"] == 0,
          "%s: on the CPU: backend, device, 0 GPU layers (%s)" % (rid, a))
    check(a["layers"] == n_layer, "%s: layers %s = the model's block_count %s" % (rid, a["layers"], n_layer))
    check(a["kv_cache_type"] == kv and a["parallel"] == parallel and a["context_per_slot"] == entry["context_length"],
          "%s: kv %s, %d slots, context per slot = context_length (%s)" % (rid, kv, parallel, a))
    check(a["requests_in_flight"] == 0 and a["requests_queued"] == 0 and a["embedding_only"] is False,
          "%s: idle, a generation model (%s)" % (rid, a))

    # a stream in flight: /api/ps and /metrics count it; once it ends, they do not
    first = threading.Event()
    release = threading.Event()

    def stream():
        it = ollama.Client(host=srv.base).generate(model=model, prompt="count", stream=True,
                                                  options={"num_predict": 100000, "temperature": 1, "num_ctx": 4096})
        for _ in it:
            first.set()
            if release.wait(0):
                break
        first.set()

    th = threading.Thread(target=stream, daemon=True)
    th.start()
    check(first.wait(60), "%s: the long stream started" % rid)
    st, o = raw_ps(srv)
    live = [m["anvil"]["requests_in_flight"] for m in o["models"]]
    _, _, fams = metrics(srv)
    gauge = samples(fams, "anvil_requests_in_flight", replica=rid)
    release.set()
    check(sum(live) == 1 and o["anvil"]["requests_in_flight"] == 1, "%s: ps: 1 request in flight during the stream (%s)" % (rid, live))
    check(gauge and gauge[0].value == 1, "%s: metrics: anvil_requests_in_flight 1 during the stream" % rid)
    th.join(120)
    check(wait_until(lambda: raw_ps(srv)[1]["anvil"]["requests_in_flight"] == 0, 60),
          "%s: 0 in flight after the stream ended" % rid)

    st, text, fams = metrics(srv)
    every = [s for f in fams.values() for s in f.samples]
    check(st == 200 and every and all(s.labels.get("replica") == rid for s in every),
          "%s: all %d samples carry replica=\"%s\"" % (rid, len(every), rid))
    info = samples(fams, "anvil_model_info", replica=rid)
    check(any(s.labels.get("backend") == "cpu" and s.labels.get("device") == "CPU" and s.labels.get("kv_cache_type") == kv
              and s.labels.get("kind") == "completion" for s in info), "%s: anvil_model_info labels (%s)" % (rid, info))
    st, o = raw_ps(srv)
    for fam, want in (("anvil_model_layers", n_layer), ("anvil_model_gpu_layers", 0), ("anvil_model_parallel", parallel),
                      ("anvil_model_context_length", o["models"][0]["context_length"])):
        got = [s.value for s in samples(fams, fam, replica=rid)]
        check(got and all(v == want for v in got), "%s: %s %s = /api/ps's %s" % (rid, fam, got, want))
    return text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("anvil")
    ap.add_argument("model")
    ap.add_argument("embed_model")
    a = ap.parse_args()
    gguf, emb = os.path.abspath(a.model), os.path.abspath(a.embed_model)

    # a bad id: one line, exit 1, before listening
    p = subprocess.run([a.anvil, "serve"], env=dict(os.environ, ANVIL_REPLICA_ID="two words", ANVIL_HOST="127.0.0.1:0"),
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 1 and "ANVIL_REPLICA_ID" in p.stderr and len(p.stderr.strip().splitlines()) == 1,
          "ANVIL_REPLICA_ID='two words' refused in one line (%d %r)" % (p.returncode, p.stderr))

    texts = {}
    for rid, env, parallel, kv in (("replica-a", {}, 2, "f16"),
                                   ("replica-b", {"ANVIL_KV_CACHE_TYPE": "q8_0", "ANVIL_NUM_PARALLEL": "3"}, 3, "q8_0")):
        srv = Server(a.anvil, env=dict({"ANVIL_REPLICA_ID": rid, "ANVIL_NUM_PARALLEL": "2"}, **env))
        try:
            texts[rid] = replica_checks(srv, rid, gguf, gguf, parallel, kv)
            if rid == "replica-a":
                st, _, o, raw = post_json(srv, "/api/embed", {"model": emb, "input": "hello"})
                st, ps = raw_ps(srv)
                e = [m["anvil"] for m in ps["models"] if m["model"] == emb]
                check(st == 200 and e and e[0]["embedding_only"] is True and e[0]["parallel"] == 1,
                      "replica-a: an embedding model is embedding_only, with one slot as in Ollama (%s)" % e)
                _, _, fams = metrics(srv)
                kinds = {s.labels.get("model"): s.labels.get("kind") for s in samples(fams, "anvil_model_info")}
                check(kinds.get(emb) == "embedding" and kinds.get(gguf) == "completion", "replica-a: anvil_model_info kind (%s)" % kinds)
                cli = subprocess.run([a.anvil, "ps", "-v"], env=dict(os.environ, ANVIL_HOST=srv.host), capture_output=True,
                                     text=True, timeout=60)
                head = cli.stdout.splitlines()[0] if cli.stdout else ""
                check(cli.returncode == 0 and "REPLICA" in head and "GPU LAYERS" in head and "replica-a" in cli.stdout
                      and "0/%d" % ollama.Client(host=srv.base).show(gguf).modelinfo["gemma3.block_count"] in cli.stdout,
                      "anvil ps -v: replica, backend and GPU layers columns", cli.stdout + cli.stderr)
                plain = subprocess.run([a.anvil, "ps"], env=dict(os.environ, ANVIL_HOST=srv.host), capture_output=True,
                                       text=True, timeout=60)
                check(plain.returncode == 0 and "REPLICA" not in plain.stdout and "PROCESSOR" in plain.stdout,
                      "anvil ps without -v: Ollama's columns only", plain.stdout)
        finally:
            srv.stop()

    # two replicas' expositions side by side (one Prometheus without instance labels): no series collides
    merged, collisions = {}, []
    for rid, text in texts.items():
        for f in text_string_to_metric_families(text):
            for s in f.samples:
                key = (s.name, tuple(sorted(s.labels.items())))
                if key in merged:
                    collisions.append(key)
                merged[key] = rid
    check(not collisions and len(set(merged.values())) == 2 and len(merged) > 50,
          "two replicas side by side: %d distinct series, none collides" % len(merged), collisions[:5])

    srv = Server(a.anvil, env={"ANVIL_REPLICA_ID": None})
    try:
        st, o = raw_ps(srv)
        check(o["anvil"]["replica"] == socket.gethostname(), "no ANVIL_REPLICA_ID: the host name (%s)" % o["anvil"])
        _, _, fams = metrics(srv)
        check(all(s.labels.get("replica") == socket.gethostname() for f in fams.values() for s in f.samples),
              "no ANVIL_REPLICA_ID: metrics carry the host name")
    finally:
        srv.stop()
    finish()


if __name__ == "__main__":
    main()
