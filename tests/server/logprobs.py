#!/usr/bin/env python3
"""logprobs: "logprobs" / "top_logprobs" on Ollama's /api/generate and /api/chat and on OpenAI's
/v1/chat/completions (and the legacy /v1/completions "logprobs": N), issue 31: they were silently
ignored on the Ollama API and refused on /v1.

The oracle is `anvil eval --dump` (the model's log-softmax at every position, its own code path):
each reported logprob of a greedy reply equals the log-probability eval gives that token at its
position, the top alternatives are eval's most likely tokens in order, and the reported values are
the raw model's even when the sampler's settings (temperature, top_k) change what is sampled.
The openai SDK parses the chat answer (whole and streamed: the tokens spell the text); a bad
top_logprobs is a 400 with Ollama's words.

usage: logprobs.py ANVIL_BINARY MODEL.gguf
"""
import json
import os
import subprocess
import sys
import tempfile

from common import Server, check, finish, post_json

anvil, model = sys.argv[1], os.path.abspath(sys.argv[2])
N = 4


def eval_positions(tokens):
    """log-probabilities at every position of tokens (anvil eval --tokens)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([anvil, "eval", model, "--tokens", ",".join(map(str, tokens)), "--dump", f.name, "--no-bos"],
                       check=True, capture_output=True, timeout=300)
        return json.load(open(f.name))


with tempfile.NamedTemporaryFile(suffix=".json") as f:
    subprocess.run([anvil, "eval", model, "--prompt", "hi", "--n-gen", str(N), "--dump", f.name], check=True,
                   capture_output=True, timeout=300)
    first = json.load(open(f.name))
prompt_ids, greedy_ids = first["tokens"], first["generated"]
full = eval_positions(prompt_ids + greedy_ids[:N - 1])["positions"]

srv = Server(anvil)
try:
    opts = {"num_predict": N, "temperature": 0}
    st, _, obj, raw = post_json(srv, "/api/generate", {"model": model, "prompt": "hi", "raw": True, "stream": False,
                                                        "logprobs": True, "top_logprobs": 3, "options": opts})
    lps = (obj or {}).get("logprobs") or []
    check(st == 200 and len(lps) == N, "/api/generate: one logprob entry per generated token (%d)" % len(lps), raw[-400:])
    worst = 0.0
    top_ok = True
    for i, e in enumerate(lps[:N]):
        row = full[len(prompt_ids) - 1 + i]["logprobs"]
        want = row[greedy_ids[i]]
        worst = max(worst, abs(e["logprob"] - want))
        best3 = sorted(range(len(row)), key=lambda k: -row[k])[:3]
        top = e.get("top_logprobs") or []
        top_ok = top_ok and len(top) == 3 and all(abs(t["logprob"] - row[k]) < 2e-3 for t, k in zip(top, best3))
        top_ok = top_ok and bytes(e["bytes"]).decode("utf-8", "replace") == e["token"]
    check(lps and worst < 2e-3, "each logprob is the model's log-softmax at its position (worst |diff| %.2e)" % worst)
    check(lps and top_ok, "top_logprobs: the 3 most likely tokens of eval's row, in order")
    check(obj and "".join(e["token"] for e in lps) == obj.get("response"), "the tokens spell the response",
          (obj or {}).get("response"))

    # the sampler's settings change what is sampled, not the reported (raw) log-probabilities
    hot = {"num_predict": 1, "temperature": 3.0, "top_k": 1}
    st, _, obj2, raw = post_json(srv, "/api/generate", {"model": model, "prompt": "hi", "raw": True, "stream": False,
                                                         "logprobs": True, "options": hot})
    e2 = ((obj2 or {}).get("logprobs") or [{}])[0]
    check(st == 200 and abs(e2.get("logprob", 9) - lps[0]["logprob"]) < 1e-4 and "top_logprobs" not in e2,
          "temperature 3 + top_k 1: the raw log-probability, no alternatives unless asked", raw[-300:])

    # /api/chat streamed: the entries ride on the chunks
    st, _, _, raw = post_json(srv, "/api/chat", {"model": model, "messages": [{"role": "user", "content": "hi"}],
                                                  "logprobs": True, "options": opts})
    lines = [json.loads(l) for l in raw.decode().splitlines() if l.strip()]
    streamed = [e for l in lines for e in l.get("logprobs") or []]
    text = "".join(l.get("message", {}).get("content", "") for l in lines)
    check(st == 200 and len(streamed) == N and "".join(e["token"] for e in streamed) == text,
          "/api/chat streamed: %d entries spelling the text" % len(streamed), raw[-400:])

    # without logprobs: no field
    st, _, obj3, _ = post_json(srv, "/api/generate", {"model": model, "prompt": "hi", "raw": True, "stream": False,
                                                       "options": opts})
    check(st == 200 and "logprobs" not in obj3, "no logprobs unless asked")
    st, _, obj4, raw = post_json(srv, "/api/chat", {"model": model, "messages": [{"role": "user", "content": "hi"}],
                                                     "logprobs": True, "top_logprobs": 21})
    check(st == 400 and "top_logprobs must be between 0 and 20" in raw.decode(), "top_logprobs 21: a 400", raw[-200:])

    # OpenAI: the SDK parses the chat answer, whole and streamed; the legacy completions shape
    try:
        import openai
    except ImportError:
        openai = None
    if openai:
        oc = openai.OpenAI(base_url=srv.base + "/v1", api_key="unused", max_retries=0)
        msgs = [{"role": "user", "content": "hi"}]
        r = oc.chat.completions.create(model=model, messages=msgs, max_tokens=N, temperature=0, logprobs=True,
                                       top_logprobs=2)
        content = r.choices[0].logprobs.content if r.choices[0].logprobs else []
        check(len(content) == N and all(len(c.top_logprobs) == 2 and c.logprob <= 0 for c in content)
              and "".join(c.token for c in content) == r.choices[0].message.content,
              "openai SDK: chat logprobs with 2 alternatives each, spelling the message")
        pieces, text = [], ""
        for ch in oc.chat.completions.create(model=model, messages=msgs, max_tokens=N, temperature=0, logprobs=True,
                                             stream=True):
            if ch.choices and ch.choices[0].logprobs and ch.choices[0].logprobs.content:
                pieces += [c.token for c in ch.choices[0].logprobs.content]
            if ch.choices and ch.choices[0].delta.content:
                text += ch.choices[0].delta.content
        check(len(pieces) == N and "".join(pieces) == text, "openai SDK streamed: %d tokens spelling the text" % len(pieces))
        c = oc.completions.create(model=model, prompt="hi", max_tokens=N, temperature=0, logprobs=2)
        lp = c.choices[0].logprobs
        check(lp is not None and len(lp.tokens) == N and "".join(lp.tokens) == c.choices[0].text
              and len(lp.top_logprobs[0]) == 2 and lp.text_offset[1] == len(lp.tokens[0]),
              "/v1/completions: the legacy logprobs shape (tokens, token_logprobs, top_logprobs, text_offset)")
    else:
        print("skip: openai not installed")
finally:
    srv.stop()
finish()
