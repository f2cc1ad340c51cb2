#!/usr/bin/env python3
"""hostile: `anvil serve` against bad and heavy input: malformed JSON, fields of the wrong
type (a 400 naming the field), unknown models (404), a 10 MB body (413 without being
read into memory), clients that disconnect mid-stream or mid-request, 64 concurrent
requests against ANVIL_NUM_PARALLEL=4 / ANVIL_MAX_QUEUE=8 (each one a complete answer or
a well-formed 503), SIGTERM while requests run; every server must exit 0 on SIGTERM with
no sanitizer report (run against the ASan build, LSan checks leaks at exit). In a
release build also: RSS after a second round of load stays near the first round's.

  hostile.py ANVIL MODEL.gguf [--sanitize]"""
import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Server, check, finish, post_json, request, wait_until  # noqa: E402


def bad_requests(srv, model):
    for path in ("/api/generate", "/api/chat", "/api/embed"):
        st, _, o, raw = post_json(srv, path, '{"model": "x", ')
        check(st == 400 and isinstance(o, dict) and "JSON" in o.get("error", ""), "%s malformed JSON: 400 (%d %r)" % (path, st, raw[:100]))
    st, _, o, _ = post_json(srv, "/v1/chat/completions", "{nope")
    check(st == 400 and o["error"]["type"] == "invalid_request_error", "openai malformed JSON: 400 in OpenAI shape")
    st, _, o, _ = post_json(srv, "/api/generate", "[1,2]")
    check(st == 400, "a JSON array body: 400")
    st = request(srv, "POST", "/api/chat", b"")[0]
    check(st == 400, "an empty body: 400")

    m = model
    wrong = [
        ("/api/generate", {"model": 5, "prompt": "x"}, "model"),
        ("/api/generate", {"model": m, "prompt": ["x"]}, "prompt"),
        ("/api/generate", {"model": m, "prompt": "x", "stream": "yes"}, "stream"),
        ("/api/generate", {"model": m, "prompt": "x", "options": [1]}, "options"),
        ("/api/generate", {"model": m, "prompt": "x", "raw": 1}, "raw"),
        ("/api/generate", {"model": m, "prompt": "x", "context": ["a"]}, "context"),
        ("/api/generate", {"model": m, "prompt": "x", "keep_alive": "forever"}, "keep_alive"),
        ("/api/generate", {"model": m, "prompt": "x", "keep_alive": [1]}, "keep_alive"),
        ("/api/generate", {"model": m, "prompt": "x", "format": "yaml"}, "format"),
        ("/api/generate", {"model": m, "prompt": "x", "images": ["aGVsbG8="]}, "image"),
        ("/api/chat", {"model": m, "messages": {"role": "user"}}, "messages"),
        ("/api/chat", {"model": m, "messages": [{"role": "user", "content": 7}]}, "messages[0].content"),
        ("/api/chat", {"model": m, "messages": [{"role": "wizard", "content": "x"}]}, "role"),
        ("/api/chat", {"model": m, "messages": [{"role": "user", "content": "x", "images": ["aGk="]}]}, "image"),
        ("/api/embed", {"model": m, "input": 3}, "input"),
        ("/api/embed", {"model": m, "input": ["a", 2]}, "input"),
        ("/api/embed", {"model": m, "input": "a", "truncate": "no"}, "truncate"),
        ("/api/embed", {"model": m, "input": "a", "dimensions": 1.5}, "dimensions"),
        ("/api/generate", {"prompt": "x"}, "model"),
    ]
    for path, body, field in wrong:
        st, _, o, raw = post_json(srv, path, body)
        check(st == 400 and isinstance(o, dict) and field in o.get("error", ""),
              "%s %s: 400 naming '%s' (%d %r)" % (path, json.dumps(body)[:60], field, st, raw[:160]))
    owrong = [
        ({"model": m, "messages": [{"role": "user", "content": "x"}], "max_tokens": "ten"}, "max_tokens"),
        ({"model": m, "messages": [{"role": "user", "content": "x"}], "temperature": "hot"}, "temperature"),
        ({"model": m, "messages": [{"role": "user", "content": "x"}], "stop": 5}, "stop"),
        ({"model": m, "messages": [{"role": "user", "content": "x"}], "stream": 1}, "stream"),
        ({"model": m, "messages": "hello"}, "messages"),
        ({"model": m, "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
         "messages[0].content[0].image_url.url"),
        ({"model": m, "messages": [{"role": "user", "content": "x"}], "response_format": {"type": "xml"}},
         "response_format.type"),
    ]
    for body, field in owrong:
        st, _, o, raw = post_json(srv, "/v1/chat/completions", body)
        err = o.get("error", {}) if isinstance(o, dict) else {}
        check(st == 400 and isinstance(err, dict) and err.get("param") == field and field in err.get("message", "")
              and err.get("type") == "invalid_request_error",
              "openai %s: 400 with param '%s' (%d %r)" % (json.dumps(body)[:60], field, st, raw[:200]))
    st, _, o, _ = post_json(srv, "/api/generate", {"model": "missing-model:latest", "prompt": "x"})
    check(st == 404 and "error" in o, "unknown model: 404 (%d)" % st)
    st, _, o, _ = post_json(srv, "/api/chat", {"model": "/no/such/file.gguf", "messages": []})
    check(st in (400, 404) and "error" in o, "missing GGUF path: 4xx (%d)" % st)
    st, _, o, _ = post_json(srv, "/v1/chat/completions", {"model": "missing-model", "messages": [{"role": "user", "content": "x"}]})
    check(st == 404 and o["error"]["type"] == "not_found_error", "openai unknown model: 404 not_found_error")
    st, _, o, _ = post_json(srv, "/api/embed", {"model": "missing-model", "input": "x"})
    check(st == 404, "embed unknown model: 404")


def call_json(srv, method, path, body):
    st, _, raw = request(srv, method, path, body)
    try:
        return st, json.loads(raw), raw
    except ValueError:
        return st, None, raw


def one_wording(srv, model):
    """Every route reads request fields the same way: a field of the wrong type is a 400
    worded as on /api/generate ("invalid value for field '<field>': expected ..."), the
    model routes' "model" and its alias "name" included; OpenAI routes answer in OpenAI's
    envelope with param, type and message."""
    _, ref, _ = call_json(srv, "POST", "/api/generate", {"model": 5, "prompt": "x"})
    ref_error = ref.get("error") if isinstance(ref, dict) else None
    check(ref_error == "invalid value for field 'model': expected a string", "/api/generate model 5: the wording", ref)
    for method, path, extra in (("POST", "/api/pull", {}), ("POST", "/api/show", {}), ("DELETE", "/api/delete", {}),
                                ("POST", "/api/create", {"from": "x"}), ("POST", "/api/embed", {"input": "x"}),
                                ("POST", "/api/chat", {"messages": []})):
        st, o, raw = call_json(srv, method, path, dict(extra, model=5))
        check(st == 400 and isinstance(o, dict) and o.get("error") == ref_error,
              "%s model 5: 400 worded as /api/generate (%d %r)" % (path, st, raw[:160]))
    # a host that refuses connections: a field that is not checked would start a real pull
    pull_name = "127.0.0.1:1/library/none:latest"
    wrong = [
        ("POST", "/api/pull", {"name": 5}, "name"),
        ("POST", "/api/pull", {"model": pull_name, "stream": "yes"}, "stream"),
        ("POST", "/api/pull", {"model": pull_name, "insecure": "yes"}, "insecure"),
        ("POST", "/api/show", {"name": ["x"]}, "name"),
        ("POST", "/api/show", {"model": model, "verbose": "yes"}, "verbose"),
        ("DELETE", "/api/delete", {"name": 5}, "name"),
        ("DELETE", "/api/delete", {"model": "none:latest", "name": 5}, "name"),
        ("POST", "/api/copy", {"source": 5, "destination": "a:b"}, "source"),
        ("POST", "/api/copy", {"source": "none:latest", "destination": 5}, "destination"),
        ("POST", "/api/create", {"name": 5, "from": "x"}, "name"),
        ("POST", "/api/create", {"model": "tiny:x", "from": 5}, "from"),
        ("POST", "/api/create", {"model": "tiny:x", "from": "x", "system": 5}, "system"),
        ("POST", "/api/create", {"model": "tiny:x", "from": "x", "template": 5}, "template"),
        ("POST", "/api/create", {"model": "tiny:x", "from": "x", "quantize": 4}, "quantize"),
        ("POST", "/api/create", {"model": "tiny:x", "from": "x", "stream": "no"}, "stream"),
        ("POST", "/api/create", {"model": "tiny:x", "from": "x", "modelfile": 5}, "modelfile"),
        ("POST", "/api/create", {"model": "tiny:x", "from": "x", "license": ["a", 5]}, "license[1]"),
        ("POST", "/api/create", {"model": "tiny:x", "from": "x", "parameters": [1]}, "parameters"),
        ("POST", "/api/create", {"model": "tiny:x", "from": "x", "messages": [{"role": 5, "content": "x"}]},
         "messages[0].role"),
        ("POST", "/api/create", {"model": "tiny:x", "files": {"tiny.gguf": 5}}, "files.tiny.gguf"),
    ]
    for method, path, body, field in wrong:
        st, o, raw = call_json(srv, method, path, body)
        err = o.get("error", "") if isinstance(o, dict) else ""
        check(st == 400 and isinstance(err, str) and err.startswith("invalid value for field '%s': expected" % field),
              "%s %s: 400 \"invalid value for field '%s'\" (%d %r)" % (path, json.dumps(body)[:70], field, st, raw[:160]))
    m = model
    msg = [{"role": "user", "content": "x"}]
    owrong = [
        ("/v1/chat/completions", {"model": m, "messages": [{"role": 5, "content": "x"}]}, "messages[0].role"),
        ("/v1/chat/completions", {"model": m, "messages": [{"role": "user", "content": [{"type": 5}]}]},
         "messages[0].content[0].type"),
        ("/v1/chat/completions", {"model": m, "messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]},
         "messages[0].content[0].text"),
        ("/v1/chat/completions", {"model": m, "messages": [{"role": "user", "content": ["x"]}]}, "messages[0].content[0]"),
        ("/v1/chat/completions", {"model": m, "messages": msg, "stop": ["a", 5]}, "stop[1]"),
        ("/v1/chat/completions", {"model": m, "messages": msg, "logprobs": 5}, "logprobs"),
        ("/v1/chat/completions", {"model": m, "messages": msg, "stream_options": 5}, "stream_options"),
        ("/v1/chat/completions", {"model": m, "messages": msg, "seed": "x"}, "seed"),
        ("/v1/chat/completions", {"model": 5, "messages": msg}, "model"),
        ("/v1/completions", {"model": m, "prompt": "x", "stop": [1]}, "stop[0]"),
        ("/v1/completions", {"model": m, "prompt": "x", "echo": "yes"}, "echo"),
        ("/v1/completions", {"model": m, "prompt": "x", "max_tokens": "ten"}, "max_tokens"),
        ("/v1/embeddings", {"model": m, "input": ["a", 5]}, "input[1]"),
        ("/v1/embeddings", {"model": m, "input": "a", "encoding_format": 5}, "encoding_format"),
        ("/v1/embeddings", {"model": m, "input": "a", "dimensions": "x"}, "dimensions"),
    ]
    for path, body, field in owrong:
        st, o, raw = call_json(srv, "POST", path, body)
        err = o.get("error", {}) if isinstance(o, dict) else {}
        check(st == 400 and isinstance(err, dict) and err.get("param") == field
              and err.get("type") == "invalid_request_error"
              and err.get("message", "").startswith("invalid value for field '%s': expected" % field)
              and "code" in err,
              "%s %s: OpenAI 400 with param '%s' (%d %r)" % (path, json.dumps(body)[:70], field, st, raw[:200]))


def big_bodies(srv):
    size = 10 * 1000 * 1000
    path = os.path.join(srv.tmp.name, "big.json")
    with open(path, "wb") as f:
        f.write(b'{"model":"x","prompt":"' + b"a" * (size - 30) + b'"}')
    out = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Content-Type: application/json",
                          "--data-binary", "@" + path, srv.base + "/api/generate"], capture_output=True, text=True)
    check(out.stdout.strip() == "413", "10 MB body with curl: 413 (%r %r)" % (out.stdout, out.stderr[-200:]))
    # Raw socket, no Expect: the answer comes before the body is read.
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    s.sendall(("POST /api/chat HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
               % size).encode())
    sent = 0
    try:
        chunk = b"a" * 65536
        while sent < size:
            sent += s.send(chunk)
    except OSError:
        pass
    try:
        head = s.recv(4096).decode("latin1")
    except OSError:
        head = ""
    s.close()
    check(head.startswith("HTTP/1.1 413"), "10 MB body, raw socket: 413 (%r, %d bytes sent)" % (head[:40], sent))
    # Chunked upload with no length: refused once it passes the limit, never stored.
    def gen():
        for _ in range(160):
            yield b"a" * 65536
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
    try:
        conn.request("POST", "/api/generate", body=gen(), headers={"Transfer-Encoding": "chunked"}, encode_chunked=True)
        st = conn.getresponse().status
    except OSError:
        st = -1
    conn.close()
    check(st == 413, "10 MB chunked body: 413 (%d)" % st)


def disconnects(srv, model):
    # A string of at least a million characters in a 16k context: no end of text before
    # the context is full, which takes far longer than the waits below.
    body = json.dumps({"model": model, "prompt": "Tell me a long story", "format": {"type": "string", "minLength": 1000000},
                       "options": {"num_predict": 100000, "temperature": 0, "num_ctx": 16384}})
    for stream in (True, False):
        b = body if stream else body[:-1] + ', "stream": false}'
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
        s.sendall(("POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                   % (len(b), b)).encode())
        if stream:
            got = b""
            while got.count(b"\n") < 12:
                got += s.recv(4096)
            check(b"200 OK" in got, "long stream started")
        else:
            time.sleep(0.5)
        s.close()
        n = 1 if stream else 2  # the log line comes after the handler ended: generation was cancelled
        # 30 s: a waiting (non-streamed) request notices the gone client when its handler next
        # checks the socket, which under ASan on 2 cores can take more than 10 s.
        check(wait_until(lambda: srv.log().count("aborted=true") >= n, 30),
              "%s disconnect: request aborted and its generation cancelled" % ("streaming" if stream else "waiting"))
    st, _, o, _ = post_json(srv, "/api/generate", {"model": model, "prompt": "hi", "stream": False, "options": {"num_predict": 4}})
    check(st == 200 and o["done"], "server serves after clients vanished")
    st, _, _ = request(srv, "GET", "/")
    check(st == 200, "GET / after disconnects")


def one_request(srv, model, i, results):
    stream = i % 2 == 0
    body = {"model": model, "prompt": "Request %d: once upon a time" % i, "stream": stream,
            "options": {"num_predict": 24, "seed": i}}
    try:
        st, hdrs, raw = request(srv, "POST", "/api/generate", body, timeout=300)
    except Exception as ex:  # noqa: BLE001
        results[i] = ("exception", repr(ex))
        return
    if st == 200:
        try:
            objs = [json.loads(line) for line in raw.decode().split("\n") if line] if stream else [json.loads(raw)]
            ok = objs[-1]["done"] is True and "eval_count" in objs[-1] and not any(o.get("done") for o in objs[:-1])
        except (ValueError, KeyError) as ex:
            ok = False
            raw = repr(ex).encode() + raw[-200:]
        results[i] = ("ok" if ok else "broken", raw[-200:])
    elif st == 503:
        try:
            ok = "error" in json.loads(raw)
        except ValueError:
            ok = False
        results[i] = ("busy" if ok else "broken", raw[-200:])
    else:
        results[i] = ("status %d" % st, raw[-200:])


def server_idle(srv):
    """No request running or queued (/metrics): what came before has let go of its slot."""
    st, _, raw = request(srv, "GET", "/metrics")
    if st != 200:
        return False
    vals = {}
    for line in raw.decode().splitlines():
        parts = line.split()   # name{labels} value
        name = parts[0].split("{")[0] if parts else ""
        if len(parts) == 2 and name in ("anvil_requests_in_flight", "anvil_queue_length"):
            vals[name] = float(parts[1])
    return vals.get("anvil_requests_in_flight") == 0 and vals.get("anvil_queue_length") == 0


def load_round(srv, model, n=64):
    # The capacity check below is about an idle server: a slot the disconnect tests' cancelled
    # generations still hold (slow under ASan) would count as one request fewer.
    check(wait_until(lambda: server_idle(srv), 60), "server idle before the load round (/metrics)")
    results = [None] * n
    threads = [threading.Thread(target=one_request, args=(srv, model, i, results)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    kinds = {}
    for r in results:
        k = r[0] if r else "no answer"
        kinds[k] = kinds.get(k, 0) + 1
    print("64 concurrent requests:", kinds, flush=True)
    bad = [r for r in results if not r or r[0] not in ("ok", "busy")]
    check(not bad, "every request got a complete answer or a well-formed 503: %s" % bad[:3])
    check(kinds.get("ok", 0) >= 12, "at least NUM_PARALLEL + MAX_QUEUE answers complete (%d)" % kinds.get("ok", 0))
    check(srv.alive(), "server up after the load round")
    return kinds


def sigterm_while_busy(anvil, model):
    """SIGTERM while 4 long generations run: each is cancelled and its client still gets
    a well-formed end (a final NDJSON line or one JSON object); the server exits 0."""
    srv = Server(anvil, env={"ANVIL_NUM_PARALLEL": "2"})
    body = {"model": model, "prompt": "A long story", "format": {"type": "string", "minLength": 1000000},
            "options": {"num_predict": 100000, "temperature": 0, "num_ctx": 16384}}
    results = []

    def client(stream):
        try:
            st, _, raw = request(srv, "POST", "/api/generate", dict(body, stream=stream), timeout=120)
            last = json.loads(raw.decode().strip().split("\n")[-1])
            results.append((st, last.get("done") is True or "error" in last))
        except Exception as ex:  # noqa: BLE001
            results.append((repr(ex), False))
    threads = [threading.Thread(target=client, args=(i % 2 == 0,)) for i in range(4)]
    for t in threads:
        t.start()
    time.sleep(2.0)
    running = srv.log().count("status=")  # requests finished before the signal
    rc, _ = srv.stop(timeout=60)
    for t in threads:
        t.join(60)
    print("SIGTERM with 4 running requests: exit %d; %d had finished before; clients saw %s" % (rc, running, results))
    check(running == 0, "the 4 generations were still running at SIGTERM")
    check(len(results) == 4 and all(ok for _, ok in results), "every client got a well-formed end after SIGTERM: %s" % results)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("anvil")
    ap.add_argument("model")
    ap.add_argument("--sanitize", action="store_true", help="ASan build: skip the RSS comparison")
    a = ap.parse_args()
    model = os.path.abspath(a.model)
    srv = Server(a.anvil, env={"ANVIL_NUM_PARALLEL": "4", "ANVIL_MAX_QUEUE": "8"})
    try:
        bad_requests(srv, model)
        one_wording(srv, model)
        big_bodies(srv)
        disconnects(srv, model)
        load_round(srv, model)
        rss1 = srv.rss_kb()
        load_round(srv, model)
        bad_requests(srv, model)
        rss2 = srv.rss_kb()
        print("RSS after round 1: %d KiB, after round 2: %d KiB" % (rss1, rss2), flush=True)
        if not a.sanitize:
            check(rss2 <= rss1 * 1.25 + 32 * 1024, "RSS returns near the baseline after a second round (%d -> %d KiB)" % (rss1, rss2))
        check(srv.alive(), "server up at the end")
    finally:
        srv.stop()
    sigterm_while_busy(a.anvil, model)
    finish()


if __name__ == "__main__":
    main()
