#!/usr/bin/env python3
"""bench-agent-apis: what the API layer costs: the same greedy chat (one user turn, N tokens)
streamed through /api/chat, /v1/chat/completions, /v1/messages and /v1/responses, round-robin
(interleaved) REPS times, against one `anvil serve`. Prints, per API, the median wall time of a
request, tokens per second of the stream, and the bytes sent per token. The model's work is
the same on every route (same prompt tokens, same generated tokens: checked), so the
differences are the API layers' (JSON building, SSE framing, event counts).

  tools/bench/bench-agent-apis.py build/anvil MODEL.gguf [--tokens 64] [--reps 3]"""
import argparse
import http.client
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "server"))
from common import Server  # noqa: E402

PROMPT = "Write a short story about a lighthouse keeper."


def body(api, model, n):
    msgs = [{"role": "user", "content": PROMPT}]
    if api == "/api/chat":
        return {"model": model, "messages": msgs, "stream": True, "options": {"temperature": 0, "num_predict": n}}
    if api == "/v1/chat/completions":
        return {"model": model, "messages": msgs, "stream": True, "temperature": 0, "max_tokens": n,
                "stream_options": {"include_usage": True}}
    if api == "/v1/messages":
        return {"model": model, "messages": msgs, "stream": True, "temperature": 0, "max_tokens": n}
    return {"model": model, "input": PROMPT, "stream": True, "temperature": 0, "max_output_tokens": n}


def output_tokens(api, data):
    """The generated token count the stream reports."""
    text = data.decode()
    if api == "/api/chat":
        return json.loads(text.strip().split("\n")[-1])["eval_count"]
    for line in reversed(text.split("\n")):
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        o = json.loads(line[6:])
        if api == "/v1/chat/completions" and o.get("usage"):
            return o["usage"]["completion_tokens"]
        if api == "/v1/messages" and o.get("type") == "message_delta":
            return o["usage"]["output_tokens"]
        if api == "/v1/responses" and o.get("type", "").startswith("response.") and o.get("response", {}).get("usage"):
            return o["response"]["usage"]["output_tokens"]
    return -1


def run(srv, api, model, n):
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=600)
    t0 = time.perf_counter()
    conn.request("POST", api, body=json.dumps(body(api, model, n)), headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    dt = time.perf_counter() - t0
    conn.close()
    if resp.status != 200:
        sys.exit("%s: %d %s" % (api, resp.status, data[:300]))
    return dt, output_tokens(api, data), len(data)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("anvil")
    ap.add_argument("model")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    apis = ["/api/chat", "/v1/chat/completions", "/v1/messages", "/v1/responses"]
    srv = Server(a.anvil, env={"ANVIL_NUM_PARALLEL": "1"})
    try:
        run(srv, apis[0], a.model, 4)   # load the model
        res = {api: [] for api in apis}
        for _ in range(a.reps):
            for api in apis:
                res[api].append(run(srv, api, a.model, a.tokens))
    finally:
        srv.stop()
    counts = {r[1] for api in apis for r in res[api]}
    if len(counts) != 1:
        sys.exit("the routes generated different token counts: %r" % counts)
    n = counts.pop()
    print("%-22s %10s %8s %12s   (%d tokens, %d reps, median)" % ("API", "seconds", "tok/s", "bytes/token", n, a.reps))
    for api in apis:
        dt = statistics.median(r[0] for r in res[api])
        size = statistics.median(r[2] for r in res[api])
        print("%-22s %10.3f %8.1f %12.0f" % (api, dt, n / dt, size / n))


if __name__ == "__main__":
    main()
