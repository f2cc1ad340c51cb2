#!/usr/bin/env python3
"""framing: the wire format of `anvil serve`, checked with curl: GET/HEAD / like Ollama,
NDJSON streams (content type, one JSON object per line, only the last done, the final
chunk's fields and RFC3339-nanosecond created_at), SSE streams (`data: {...}` events
separated by blank lines, include_usage, `data: [DONE]` last), CORS (allowed, refused,
ANVIL_ORIGINS, preflight), bearer auth (ANVIL_API_KEY), routing errors, and one
structured log line per request.

  framing.py ANVIL MODEL.gguf"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Server, check, finish, request, wait_until  # noqa: E402

RFC3339_NANO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$")


def curl(server, path, body=None, headers=(), method=None):
    """Runs curl -i; returns (status, headers dict lower-case, body text)."""
    cmd = ["curl", "-sS", "-i", "--max-time", "120", server.base + path]
    if method:
        cmd += ["-X", method] if method != "HEAD" else ["-I"]
    for h in headers:
        cmd += ["-H", h]
    if body is not None:
        cmd += ["-H", "Content-Type: application/json", "--data-binary", json.dumps(body)]
    out = subprocess.run(cmd, capture_output=True, timeout=180).stdout.decode("utf-8", "replace")
    head, _, rest = out.partition("\r\n\r\n")
    while head.startswith("HTTP/1.1 100"):
        head, _, rest = rest.partition("\r\n\r\n")
    lines = head.split("\r\n")
    status = int(lines[0].split()[1]) if lines and lines[0].startswith("HTTP/") else 0
    hdrs = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    return status, hdrs, rest


def check_ndjson(server, path, body, content_key):
    status, hdrs, text = curl(server, path, body)
    check(status == 200, "%s: 200 (got %d: %s)" % (path, status, text[:200]))
    check(hdrs.get("content-type") == "application/x-ndjson", "%s: content type %s" % (path, hdrs.get("content-type")))
    check(hdrs.get("transfer-encoding") == "chunked", "%s: chunked" % path)
    check(text.endswith("\n") and "\n\n" not in text, "%s: newline-terminated lines, none empty" % path)
    objs = [json.loads(line) for line in text.split("\n") if line]
    check(len(objs) >= 2, "%s: several chunks (%d)" % (path, len(objs)))
    check([o["done"] for o in objs] == [False] * (len(objs) - 1) + [True], "%s: only the last chunk is done" % path)
    check(all(RFC3339_NANO.match(o["created_at"]) for o in objs), "%s: created_at RFC3339 with ns" % path)
    check(all(o["model"] == body["model"] for o in objs), "%s: model echoed" % path)
    fin = objs[-1]
    for k in ("done_reason", "total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration",
              "eval_count", "eval_duration"):
        check(k in fin, "%s: final chunk has %s" % (path, k))
    check(fin.get("eval_count") == len(objs) - 1 or fin.get("eval_count", 0) >= len(objs) - 1,
          "%s: eval_count %s covers the %d text chunks" % (path, fin.get("eval_count"), len(objs) - 1))
    check(all(isinstance(o[content_key] if content_key == "response" else o["message"]["content"], str) for o in objs),
          "%s: text in every chunk" % path)
    return objs


def check_sse(server, path, body, chat):
    status, hdrs, text = curl(server, path, body)
    check(status == 200, "%s SSE: 200 (got %d: %s)" % (path, status, text[:200]))
    check(hdrs.get("content-type", "").startswith("text/event-stream"), "%s: content type %s" % (path, hdrs.get("content-type")))
    check(text.endswith("data: [DONE]\n\n"), "%s: ends with data: [DONE]" % path)
    events = text.split("\n\n")
    check(events[-1] == "", "%s: every event ends with a blank line" % path)
    events = events[:-1]
    check(all(e.startswith("data: ") and "\n" not in e for e in events), "%s: each event one data: line" % path)
    objs = [json.loads(e[6:]) for e in events[:-1]]
    want = "chat.completion.chunk" if chat else "text_completion"
    check(all(o["object"] == want for o in objs), "%s: object %s" % (path, want))
    check(len({o["id"] for o in objs}) == 1, "%s: one id for the whole stream" % path)
    usage = objs[-1]
    check(usage["choices"] == [] and set(usage["usage"]) >= {"prompt_tokens", "completion_tokens", "total_tokens"},
          "%s: include_usage chunk last with empty choices" % path)
    finishes = [o["choices"][0]["finish_reason"] for o in objs[:-1]]
    check(finishes[-1] in ("stop", "length") and all(f is None for f in finishes[:-1]),
          "%s: finish_reason only on the last choice chunk" % path)
    return objs


def main():
    anvil, model = sys.argv[1], os.path.abspath(sys.argv[2])
    srv = Server(anvil, env={"ANVIL_ORIGINS": "https://example.test,http://*.corp.test"})
    try:
        st, h, body = curl(srv, "/")
        check(st == 200 and body == "Ollama is running", "GET / says Ollama is running (%d %r)" % (st, body))
        st, h, body = curl(srv, "/", method="HEAD")
        check(st == 200 and h.get("content-length") == "17", "HEAD /: 200, length 17")

        opts = {"temperature": 0, "num_predict": 6, "seed": 1}
        check_ndjson(srv, "/api/generate", {"model": model, "prompt": "Hello", "options": opts}, "response")
        check_ndjson(srv, "/api/chat", {"model": model, "messages": [{"role": "user", "content": "Hi"}],
                                        "options": opts}, "message")
        st, h, body = curl(srv, "/api/generate", {"model": model, "prompt": "Hello", "options": opts, "stream": False})
        one = json.loads(body)
        check(st == 200 and h.get("content-type", "").startswith("application/json") and one["done"]
              and "\n" not in body.strip(), "stream:false: one JSON object")
        st, h, body = curl(srv, "/api/generate", {"model": model})
        o = json.loads(body)
        check(st == 200 and o.get("done") and o.get("done_reason") == "load", "empty prompt loads: %s" % body[:200])
        st, h, body = curl(srv, "/api/generate", {"model": model, "keep_alive": 0})
        o = json.loads(body)
        check(st == 200 and o.get("done_reason") == "unload", "empty prompt, keep_alive 0 unloads: %s" % body[:200])

        check_sse(srv, "/v1/chat/completions", {"model": model, "messages": [{"role": "user", "content": "Hi"}],
                                                 "max_tokens": 6, "temperature": 0, "stream": True,
                                                 "stream_options": {"include_usage": True}}, True)
        check_sse(srv, "/v1/completions", {"model": model, "prompt": "Hello", "max_tokens": 6, "temperature": 0,
                                           "stream": True, "stream_options": {"include_usage": True}}, False)
        st, h, body = curl(srv, "/v1/chat/completions", {"model": model, "messages": [{"role": "user", "content": "Hi"}],
                                                          "max_tokens": 6, "stream": True})
        check(body.endswith("data: [DONE]\n\n") and '"usage"' not in body, "SSE without include_usage: no usage chunk")

        # CORS: defaults, ANVIL_ORIGINS (with a wildcard), refusal, preflight.
        for origin in ("http://localhost:3000", "http://127.0.0.1", "app://obsidian.md", "https://example.test",
                       "http://a.corp.test"):
            st, h, _ = curl(srv, "/api/version", headers=["Origin: " + origin])
            check(h.get("access-control-allow-origin") == origin, "CORS allows %s" % origin)
        st, h, body = curl(srv, "/api/version", headers=["Origin: https://evil.test"])
        check(st == 403 and "access-control-allow-origin" not in h, "CORS refuses https://evil.test (%d)" % st)
        st, h, _ = curl(srv, "/api/chat", method="OPTIONS",
                        headers=["Origin: http://localhost:8080", "Access-Control-Request-Method: POST",
                                 "Access-Control-Request-Headers: content-type,authorization"])
        check(st == 204 and h.get("access-control-allow-origin") == "http://localhost:8080"
              and "POST" in h.get("access-control-allow-methods", "")
              and "authorization" in h.get("access-control-allow-headers", "").lower(), "OPTIONS preflight: 204")

        # Routing.
        st, h, body = curl(srv, "/api/nothing")
        check(st == 404 and "error" in json.loads(body), "unknown path: 404 with an error")
        st, h, body = curl(srv, "/api/chat")
        check(st == 405, "GET on a POST route: 405 (%d)" % st)
        st, h, body = curl(srv, "/v1/nothing")
        check(st == 404 and "message" in json.loads(body)["error"], "unknown /v1 path: OpenAI error shape")

        # One structured line per request, no bodies. The line is written when the request
        # completes, just after the client has its answer.
        before = srv.log().count("\ntime=")
        status, _, _ = request(srv, "POST", "/api/generate", {"model": model, "prompt": "SECRET-PROMPT-TEXT",
                                                               "options": opts, "stream": False})
        wait_until(lambda: srv.log().count("\ntime=") > before, 10)
        log = srv.log()
        lines = [ln for ln in log.splitlines() if ln.startswith("time=")]
        pat = re.compile(r'^time=\S+Z method=[A-Z]+ path="[^"]*" status=\d{3} duration_ms=[\d.]+( model="[^"]*")?( aborted=true)?$')
        check(lines and all(pat.match(ln) for ln in lines), "log lines are structured: %s" % lines[:3])
        check(any('path="/api/generate" status=200' in ln and 'model="%s"' % model in ln for ln in lines),
              "log line names the route, status and model")
        check("SECRET-PROMPT-TEXT" not in log, "no request bodies in the log")
    finally:
        srv.stop()

    # Bearer auth.
    srv = Server(anvil, env={"ANVIL_API_KEY": "s3cret"})
    try:
        st, h, body = curl(srv, "/api/tags")
        check(st == 401 and "error" in json.loads(body), "no key: 401")
        st, h, body = curl(srv, "/api/version")
        check(st == 200, "GET /api/version stays open for readiness probes (%d)" % st)
        st, h, body = curl(srv, "/metrics")
        check(st == 200 and "anvil_" in str(body), "GET /metrics stays open for Prometheus (%d)" % st)
        st, h, body = curl(srv, "/v1/models", headers=["Authorization: Bearer wrong"])
        check(st == 401 and json.loads(body)["error"]["type"], "wrong key: 401 in OpenAI shape on /v1")
        st, h, body = curl(srv, "/api/tags", headers=["Authorization: Bearer s3cret"])
        check(st == 200, "right key: 200 (%d)" % st)
        st, h, body = curl(srv, "/")
        check(st == 200, "GET / stays open for health checks")
    finally:
        srv.stop()
    srv = Server(anvil, env={"ANVIL_API_KEY": "s3cret", "ANVIL_METRICS_AUTH": "1"})
    try:
        st, h, body = curl(srv, "/metrics")
        check(st == 401, "ANVIL_METRICS_AUTH=1: /metrics needs the key (%d)" % st)
    finally:
        srv.stop()
    finish()


if __name__ == "__main__":
    main()
