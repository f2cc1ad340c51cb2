#!/usr/bin/env python3
"""clients: `anvil serve` driven by the real client libraries: the `ollama` and `openai`
Python packages (generate, chat, streamed and not, embeddings, JSON-schema output that
must parse and validate) and, when --node-dir is given, the `ollama` npm package
(tests/server/node_client.mjs; `npm ci` into the build tree when node_modules is absent,
skipped with a message only when npm cannot reach a registry).

  clients.py ANVIL MODEL.gguf [--node-dir BUILD/server-node]"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Server, check, finish  # noqa: E402

import jsonschema  # noqa: E402
import ollama  # noqa: E402
import openai  # noqa: E402

MODEL = "tiny-server:latest"
GREEDY = {"temperature": 0, "num_predict": 8, "seed": 1}
# Bounded by construction (enum, boolean, integer of at most 16 digits), so a random-weight
# model constrained by the grammar finishes well inside num_predict.
SCHEMA = {
    "type": "object",
    "properties": {
        "color": {"type": "string", "enum": ["red", "green", "blue"]},
        "ok": {"type": "boolean"},
        "count": {"type": "integer"},
    },
    "required": ["color", "ok", "count"],
}


def create_model(anvil, gguf, store):
    """Registers the GGUF as a named model in the temporary store with `anvil create`."""
    mf = os.path.join(store, "Modelfile")
    os.makedirs(store, exist_ok=True)
    with open(mf, "w") as f:
        f.write("FROM %s\n" % gguf)
    env = dict(os.environ, ANVIL_MODELS=store, HOME=store)
    p = subprocess.run([anvil, "create", MODEL, "-f", mf], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("anvil create failed: %s%s" % (p.stdout, p.stderr))


def unit_norm(v):
    return abs(math.sqrt(sum(x * x for x in v)) - 1.0) < 1e-3


def ollama_python(base):
    c = ollama.Client(host=base)
    r = c.generate(model=MODEL, prompt="Once upon a time", options=GREEDY)
    check(r.done and r.done_reason in ("stop", "length"), "generate: done with a reason (%s)" % r.done_reason)
    check(1 <= r.eval_count <= 8, "generate: eval_count %s within num_predict 8" % r.eval_count)
    check(r.prompt_eval_count and r.prompt_eval_count > 0, "generate: prompt_eval_count > 0")
    check(r.total_duration and r.total_duration >= r.eval_duration > 0, "generate: durations in ns")
    check(isinstance(r.context, list) and len(r.context) > 0, "generate: context returned")
    parts = list(c.generate(model=MODEL, prompt="Once upon a time", options=GREEDY, stream=True))
    check(parts and parts[-1].done and not any(p.done for p in parts[:-1]), "generate stream: only the last chunk is done")
    check("".join(p.response for p in parts) == r.response, "generate stream: same text as not streamed (greedy)")
    check(parts[-1].eval_count == r.eval_count, "generate stream: same eval_count")

    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there"}]
    r = c.chat(model=MODEL, messages=msgs, options=GREEDY)
    check(r.message.role == "assistant" and isinstance(r.message.content, str), "chat: assistant message")
    check(r.done and 1 <= r.eval_count <= 8, "chat: done, eval_count %s" % r.eval_count)
    parts = list(c.chat(model=MODEL, messages=msgs, options=GREEDY, stream=True))
    check("".join(p.message.content for p in parts) == r.message.content, "chat stream: same text as not streamed")
    check(parts[-1].done and parts[-1].done_reason == r.done_reason, "chat stream: final chunk with done_reason")

    e = c.embed(model=MODEL, input=["first text", "a second, longer text"])
    check(len(e.embeddings) == 2 and len(e.embeddings[0]) == len(e.embeddings[1]) > 0, "embed: two vectors")
    check(all(unit_norm(v) for v in e.embeddings), "embed: L2-normalised")
    check(e.embeddings[0] != e.embeddings[1], "embed: different texts, different vectors")
    e16 = c.embed(model=MODEL, input="first text", dimensions=16)
    check(len(e16.embeddings) == 1 and len(e16.embeddings[0]) == 16 and unit_norm(e16.embeddings[0]),
          "embed: dimensions=16 gives 16 renormalised values")
    legacy = c.embeddings(model=MODEL, prompt="first text")
    check(len(legacy.embedding) == len(e.embeddings[0]), "embeddings (legacy): one vector")

    r = c.chat(model=MODEL, messages=[{"role": "user", "content": "Describe a thing as JSON."}],
               format=SCHEMA, options={"temperature": 0, "num_predict": 256, "seed": 3})
    try:
        obj = json.loads(r.message.content)
        jsonschema.validate(obj, SCHEMA)
        check(True, "chat format=schema: output validates")
    except (ValueError, jsonschema.ValidationError) as ex:
        check(False, "chat format=schema: %r does not validate: %s" % (r.message.content, ex))
    r = c.generate(model=MODEL, prompt="JSON please:", format=SCHEMA, options={"num_predict": 256, "seed": 5})
    try:
        jsonschema.validate(json.loads(r.response), SCHEMA)
        check(True, "generate format=schema (sampled): output validates")
    except (ValueError, jsonschema.ValidationError) as ex:
        check(False, "generate format=schema: %r does not validate: %s" % (r.response, ex))

    try:
        c.generate(model="no-such-model", prompt="x")
        check(False, "unknown model raises")
    except ollama.ResponseError as ex:
        check(ex.status_code == 404, "unknown model: 404 (got %s)" % ex.status_code)


def openai_python(base):
    c = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0)
    msgs = [{"role": "user", "content": "Hello there"}]
    r = c.chat.completions.create(model=MODEL, messages=msgs, max_tokens=8, temperature=0, seed=1)
    ch = r.choices[0]
    check(r.object == "chat.completion" and ch.message.role == "assistant", "openai chat: shape")
    check(ch.finish_reason in ("stop", "length") and 1 <= r.usage.completion_tokens <= 8,
          "openai chat: finish_reason %s, completion_tokens %s" % (ch.finish_reason, r.usage.completion_tokens))
    check(r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens, "openai chat: usage adds up")
    chunks = list(c.chat.completions.create(model=MODEL, messages=msgs, max_tokens=8, temperature=0, seed=1,
                                            stream=True, stream_options={"include_usage": True}))
    text = "".join(k.choices[0].delta.content or "" for k in chunks if k.choices)
    check(text == ch.message.content, "openai chat stream: same text as not streamed")
    check(chunks[-1].choices == [] and chunks[-1].usage is not None
          and chunks[-1].usage.completion_tokens == r.usage.completion_tokens, "openai chat stream: usage chunk last")
    check([k.choices[0].finish_reason for k in chunks if k.choices][-1] == ch.finish_reason,
          "openai chat stream: finish_reason on the last choice chunk")
    parts = [{"type": "text", "text": "Hello"}, {"type": "text", "text": "there"}]
    r2 = c.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": parts}], max_tokens=4, temperature=0)
    check(isinstance(r2.choices[0].message.content, str), "openai chat: content-part arrays accepted")

    r = c.completions.create(model=MODEL, prompt="Once upon a time", max_tokens=8, temperature=0, seed=1)
    check(r.object == "text_completion" and isinstance(r.choices[0].text, str) and 1 <= r.usage.completion_tokens <= 8,
          "openai completions: shape and usage")
    chunks = list(c.completions.create(model=MODEL, prompt="Once upon a time", max_tokens=8, temperature=0, seed=1,
                                       stream=True))
    check("".join(k.choices[0].text for k in chunks if k.choices) == r.choices[0].text,
          "openai completions stream: same text")

    e = c.embeddings.create(model=MODEL, input=["first text", "a second, longer text"])  # base64 on the wire
    check(len(e.data) == 2 and e.data[1].index == 1 and unit_norm(e.data[0].embedding), "openai embeddings: base64")
    f = c.embeddings.create(model=MODEL, input="first text", encoding_format="float")
    check(max(abs(a - b) for a, b in zip(f.data[0].embedding, e.data[0].embedding)) < 1e-6,
          "openai embeddings: float and base64 agree")

    ids = [m.id for m in c.models.list().data]
    check(MODEL in ids, "openai models.list has %s (%s)" % (MODEL, ids))
    m = c.models.retrieve(MODEL)
    check(m.id == MODEL and m.owned_by == "library", "openai models.retrieve")
    try:
        c.models.retrieve("nothere:latest")
        check(False, "openai retrieve of a missing model raises")
    except openai.NotFoundError:
        check(True, "openai retrieve of a missing model: 404")

    r = c.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "JSON please"}], max_tokens=256, temperature=0,
        response_format={"type": "json_schema", "json_schema": {"name": "thing", "schema": SCHEMA}})
    try:
        jsonschema.validate(json.loads(r.choices[0].message.content), SCHEMA)
        check(True, "openai response_format json_schema: output validates")
    except (ValueError, jsonschema.ValidationError) as ex:
        check(False, "openai json_schema: %r: %s" % (r.choices[0].message.content, ex))
    try:
        c.chat.completions.create(model="no-such-model", messages=msgs)
        check(False, "openai unknown model raises")
    except openai.NotFoundError as ex:
        body = ex.body if isinstance(ex.body, dict) else {}
        check("message" in body and "type" in body, "openai error shape {message, type, ...}: %s" % ex.body)


def node_client(base, node_dir):
    src = os.path.dirname(os.path.abspath(__file__))
    os.makedirs(node_dir, exist_ok=True)
    for f in ("package.json", "package-lock.json"):
        shutil.copy(os.path.join(src, "node", f), os.path.join(node_dir, f))
    if not os.path.isdir(os.path.join(node_dir, "node_modules", "ollama")):
        if not shutil.which("npm"):
            print("SKIP node client: npm is not installed")
            return
        p = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=node_dir, capture_output=True, text=True,
                           timeout=300)
        if p.returncode != 0:
            if any(s in p.stderr for s in ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "network")):
                print("SKIP node client: npm cannot reach a registry:\n" + p.stderr[-800:])
                return
            check(False, "npm ci failed:\n" + p.stderr[-2000:])
            return
    script = os.path.join(src, "node_client.mjs")
    p = subprocess.run(["node", script, base, MODEL, json.dumps(SCHEMA)], cwd=node_dir, capture_output=True,
                       text=True, timeout=300, env=dict(os.environ, NODE_PATH=os.path.join(node_dir, "node_modules")))
    if not check(p.returncode == 0, "node client ran (rc %d): %s" % (p.returncode, p.stderr[-2000:])):
        return
    res = json.loads(p.stdout)
    check(res["generate_done"] and 1 <= res["generate_eval_count"] <= 8, "node generate: done, eval_count")
    check(res["generate_stream_text"] == res["generate_text"], "node generate stream: same text")
    check(res["chat_stream_done"] and res["chat_stream_text"] == res["chat_text"], "node chat stream: same text")
    check(res["embed_n"] == 2 and res["embed_dim"] > 0, "node embed: two vectors")
    try:
        jsonschema.validate(json.loads(res["schema_text"]), SCHEMA)
        check(True, "node chat format=schema validates")
    except (ValueError, jsonschema.ValidationError) as ex:
        check(False, "node format=schema: %r: %s" % (res["schema_text"], ex))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("anvil")
    ap.add_argument("model")
    ap.add_argument("--node-dir")
    a = ap.parse_args()
    srv = Server(a.anvil, env={"ANVIL_NUM_PARALLEL": "2"})
    try:
        create_model(a.anvil, os.path.abspath(a.model), srv.env["ANVIL_MODELS"])
        ollama_python(srv.base)
        openai_python(srv.base)
        if a.node_dir:
            node_client(srv.base, a.node_dir)
        check(srv.alive(), "server still running")
    finally:
        srv.stop()
    finish()


if __name__ == "__main__":
    main()
