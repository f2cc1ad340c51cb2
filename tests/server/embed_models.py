#!/usr/bin/env python3
"""embed_models: the embedding APIs of `anvil serve` on real embedding models, through the
real `ollama` and `openai` Python clients. The synthetic bert (CLS pooling), bert-mean and
nomic-bert models of the embed_models fixture (tools/make_embed_model.py) are registered in
the server's store; every text of tests/data/embed/<name>.json (llama.cpp's llama-embedding,
unnormalised) must come back with cosine similarity >= 0.9999 to llama.cpp's vector:
/api/embed (L2-normalised, as Ollama), the legacy /api/embeddings (unnormalised: the norm
too must match), /v1/embeddings as floats, base64 and from token arrays; prompt_eval_count
and usage count llama-tokenize's tokens. Also: dimensions, truncation (default: the first
tokens plus [SEP]; truncate false: Ollama's 400), capabilities ["embedding"] in /api/show,
/api/tags and `anvil show`, and the 400 for /api/generate, /api/chat,
/v1/chat/completions and /v1/completions on an embedding-only model.

  embed_models.py ANVIL MODELS_DIR GOLDEN_DIR"""
import argparse
import base64
import json
import math
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Server, check, finish, post_json, request  # noqa: E402

import ollama  # noqa: E402
import openai  # noqa: E402

# store name -> (fixture file, golden, the pooling `anvil show` reports)
MODELS = {"bert-cls": ("embed-bert.gguf", "bert.json", "cls"),
          "bert-mean": ("embed-bert-mean.gguf", "bert-mean.json", "mean"),
          "nomic": ("embed-nomic-bert.gguf", "nomic-bert.json", "mean")}
SEP = 102   # the synthetic WordPiece vocabulary's [SEP] (the last token of every golden list)


def norm(v):
    return math.sqrt(sum(x * x for x in v))


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b)) / (norm(a) * norm(b) + 1e-30)


def unit(v):
    n = norm(v)
    return [x / n for x in v]


def create(anvil, store, name, gguf):
    mf = os.path.join(store, name + ".Modelfile")
    os.makedirs(store, exist_ok=True)
    with open(mf, "w") as f:
        f.write("FROM %s\n" % gguf)
    env = dict(os.environ, ANVIL_MODELS=store, HOME=store)
    p = subprocess.run([anvil, "create", name, "-f", mf], env=env, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        sys.exit("anvil create %s failed: %s%s" % (name, p.stdout, p.stderr))


def worst(vectors, cases):
    return min(cosine(v, c["embedding"]) for v, c in zip(vectors, cases))


def golden_apis(oc, ai, name, cases):
    texts = [c["text"] for c in cases]
    n_tokens = sum(len(c["tokens"]) for c in cases)
    r = oc.embed(model=name, input=texts)
    check(len(r.embeddings) == len(cases), "%s /api/embed: %d vectors" % (name, len(cases)))
    w = worst(r.embeddings, cases)
    check(w >= 0.9999, "%s /api/embed: cosine with llama-embedding >= 0.9999 (min %.7f)" % (name, w))
    check(all(abs(norm(v) - 1) < 1e-4 for v in r.embeddings), "%s /api/embed: L2-normalised" % name)
    check(r.prompt_eval_count == n_tokens, "%s /api/embed: prompt_eval_count %s = llama-tokenize's %d"
          % (name, r.prompt_eval_count, n_tokens))
    one = oc.embed(model=name, input=texts[1])
    check(len(one.embeddings) == 1 and cosine(one.embeddings[0], r.embeddings[1]) > 0.999999,
          "%s /api/embed: a string input is the same vector as in a list" % name)

    for c in cases[:3]:   # legacy: one prompt, Ollama does not normalise it
        e = oc.embeddings(model=name, prompt=c["text"]).embedding
        cs, rel = cosine(e, c["embedding"]), abs(norm(e) - norm(c["embedding"])) / norm(c["embedding"])
        check(cs >= 0.9999 and rel < 1e-3, "%s /api/embeddings %r: raw vector (cosine %.7f, norm off by %.2e)"
              % (name, c["text"][:20], cs, rel))

    d = oc.embed(model=name, input=texts[0], dimensions=16).embeddings[0]
    want = unit(unit(cases[0]["embedding"])[:16])
    check(len(d) == 16 and max(abs(a - b) for a, b in zip(d, want)) < 1e-3,
          "%s /api/embed dimensions=16: the first 16, renormalised" % name)

    f = ai.embeddings.create(model=name, input=texts, encoding_format="float")
    w = worst([x.embedding for x in f.data], cases)
    check(w >= 0.9999 and [x.index for x in f.data] == list(range(len(cases))),
          "%s /v1/embeddings float: cosine >= 0.9999 (min %.7f), indexed" % (name, w))
    check(f.usage.prompt_tokens == n_tokens and f.usage.total_tokens == n_tokens,
          "%s /v1/embeddings: usage counts %d tokens (%s)" % (name, n_tokens, f.usage))
    b = ai.embeddings.create(model=name, input=texts)   # the client asks for base64 and decodes it
    check(max(abs(x - y) for p, q in zip(b.data, f.data) for x, y in zip(p.embedding, q.embedding)) < 1e-6,
          "%s /v1/embeddings base64 = float" % name)
    t = ai.embeddings.create(model=name, input=[c["tokens"] for c in cases], encoding_format="float")
    w = worst([x.embedding for x in t.data], cases)
    check(w >= 0.9999 and t.usage.prompt_tokens == n_tokens,
          "%s /v1/embeddings token arrays (llama-tokenize's ids): cosine min %.7f" % (name, w))
    t1 = ai.embeddings.create(model=name, input=cases[0]["tokens"], encoding_format="float")
    check(len(t1.data) == 1 and cosine(t1.data[0].embedding, cases[0]["embedding"]) >= 0.9999,
          "%s /v1/embeddings one token array" % name)
    return r


def raw_b64(srv, name, tokens):
    st, _, o, raw = post_json(srv, "/v1/embeddings", {"model": name, "input": tokens, "encoding_format": "base64"})
    if st != 200:
        return None
    data = base64.b64decode(o["data"][0]["embedding"])
    return list(struct.unpack("<%df" % (len(data) // 4), data))


def truncation(srv, oc, name, cases):
    long_case = max(cases, key=lambda c: len(c["tokens"]))
    toks = long_case["tokens"]
    # num_ctx 16: Ollama keeps the first tokens and the end token: [CLS] t1..t14 [SEP]
    r = oc.embed(model=name, input=long_case["text"], options={"num_ctx": 16})
    want = raw_b64(srv, name, toks[:15] + [toks[-1]])
    check(toks[-1] == SEP and r.prompt_eval_count == 16, "%s truncate: 16 tokens at num_ctx 16 (%s)"
          % (name, r.prompt_eval_count))
    check(want is not None and cosine(r.embeddings[0], want) > 0.99999,
          "%s truncate: the vector of the first 15 tokens + [SEP]" % name)
    try:
        oc.embed(model=name, input=long_case["text"], truncate=False, options={"num_ctx": 16})
        check(False, "%s truncate=false: an input over num_ctx is refused" % name)
    except ollama.ResponseError as e:
        check(e.status_code == 400 and e.error == "the input length exceeds the context length",
              "%s truncate=false: Ollama's 400 (%s %r)" % (name, e.status_code, e.error))
    for empty in ([], ""):   # Ollama: nothing to embed (the model still loads)
        st, _, o, raw = post_json(srv, "/api/embed", {"model": name, "input": empty, "truncate": False})
        check(st == 200 and o.get("embeddings") == [] and o.get("prompt_eval_count") == 0,
              "%s /api/embed input %r: no vectors (%s)" % (name, empty, raw[:120]))
    st, _, o, raw = post_json(srv, "/api/embeddings", {"model": name, "prompt": ""})
    check(st == 200 and o == {"embedding": []}, "%s /api/embeddings empty prompt: {\"embedding\": []} (%s)" % (name, raw[:80]))


def refusals(srv, oc, ai, name):
    for call, what in ((lambda: oc.generate(model=name, prompt="hi"), "generate"),
                       (lambda: oc.generate(model=name), "generate"),   # even the load-only request
                       (lambda: oc.chat(model=name, messages=[{"role": "user", "content": "hi"}]), "chat")):
        try:
            call()
            check(False, "%s /api/%s refused" % (name, what))
        except ollama.ResponseError as e:
            check(e.status_code == 400 and e.error == '"%s" does not support %s' % (name, what),
                  "%s /api/%s: 400 '\"%s\" does not support %s' (%s %r)" % (name, what, name, what, e.status_code, e.error))
    try:
        ai.chat.completions.create(model=name, messages=[{"role": "user", "content": "hi"}])
        check(False, "%s /v1/chat/completions refused" % name)
    except openai.BadRequestError as e:
        check("does not support chat" in str(e), "%s /v1/chat/completions: 400 does not support chat (%s)" % (name, e))
    try:
        ai.completions.create(model=name, prompt="hi")
        check(False, "%s /v1/completions refused" % name)
    except openai.BadRequestError as e:
        check("does not support generate" in str(e), "%s /v1/completions: 400 does not support generate" % name)
    st, _, o, raw = post_json(srv, "/v1/embeddings", {"model": name, "input": [[101, 5], [101, 10 ** 6]]})
    check(st == 400 and "outside the vocabulary" in raw.decode(), "%s /v1/embeddings: a token id past the vocabulary is a 400 (%s)"
          % (name, raw[:160]))
    st, _, o, raw = post_json(srv, "/v1/embeddings", {"model": name, "input": [101, "a"]})
    check(st == 400 and (o or {}).get("error", {}).get("param") == "input[1]", "%s /v1/embeddings [101, \"a\"]: 400 on input[1]" % name)
    st, _, o, raw = post_json(srv, "/v1/embeddings", {"model": name, "input": [[101], []]})
    check(st == 400 and (o or {}).get("error", {}).get("param") == "input[1]", "%s /v1/embeddings [[101], []]: 400 on input[1]" % name)


def capabilities(srv, anvil, store, oc, name, pooling):
    s = oc.show(name)
    check(list(s.capabilities or []) == ["embedding"], "%s /api/show: capabilities %s" % (name, s.capabilities))
    st, _, body = request(srv, "GET", "/api/tags")   # the ollama client's list() drops capabilities
    caps = [m.get("capabilities") for m in json.loads(body)["models"] if m.get("model") == name + ":latest"]
    check(st == 200 and caps == [["embedding"]], "%s /api/tags: capabilities %s" % (name, caps))
    env = dict(os.environ, ANVIL_MODELS=store, HOME=store)
    p = subprocess.run([anvil, "show", name], env=env, capture_output=True, text=True, timeout=120)
    out = p.stdout
    cap = out.split("Capabilities", 1)[1] if "Capabilities" in out else ""
    check(p.returncode == 0 and "WordPiece (bert)" in out and "embedding" in cap.split("\n")[1]
          and "completion" not in cap and ("pooling              %s" % pooling) in cap,
          "%s anvil show: WordPiece tokenizer, capabilities embedding, pooling %s" % (name, pooling), out + p.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("anvil")
    ap.add_argument("models")
    ap.add_argument("goldens")
    a = ap.parse_args()
    srv = Server(a.anvil, env={"ANVIL_NUM_PARALLEL": "1", "ANVIL_MAX_LOADED_MODELS": "4"})
    store = srv.env["ANVIL_MODELS"]
    try:
        oc = ollama.Client(host=srv.base)
        ai = openai.OpenAI(base_url=srv.base + "/v1", api_key="anvil")
        for name, (gguf, golden, pooling) in MODELS.items():
            create(a.anvil, store, name, os.path.join(os.path.abspath(a.models), gguf))
            with open(os.path.join(a.goldens, golden)) as f:
                cases = json.load(f)["cases"]
            golden_apis(oc, ai, name, cases)
            if name == "bert-cls":
                truncation(srv, oc, name, cases)
                refusals(srv, oc, ai, name)
            capabilities(srv, a.anvil, store, oc, name, pooling)
        ps = oc.ps()
        check({m.model for m in ps.models} >= {"bert-cls:latest", "nomic:latest"} or
              {m.name for m in ps.models} >= {"bert-cls", "nomic"}, "ps lists the embedding models (%s)"
              % [m.model for m in ps.models])
    finally:
        srv.stop()
    finish()


if __name__ == "__main__":
    main()
