#!/usr/bin/env python3
"""http_hardening: `anvil serve` against three remote attacks on its HTTP layer.

- Request text in fixed buffers: a 5,000-character and a 2 MB PARAMETER name through
  /api/create, then /api/show: a correct answer or a 400, never a crash (the show text
  used to go through a 1,200-byte stack buffer).
- DNS rebinding: on a loopback listener a Host that is not localhost / a loopback IP /
  this machine's name is a 403 (a page on evil.example that resolves to 127.0.0.1
  must not delete a model); localhost, 127.0.0.1, [::1], *.localhost pass. Bound to
  0.0.0.0 without ANVIL_API_KEY the server warns at start that the API is open.
- Slowloris: 1,100 half-sent requests hold no thread each (the thread count stays
  small) while /api/version and a generation are answered; a half-sent request is
  closed after ANVIL_HTTP_TIMEOUT seconds of silence, yet a stream that runs longer than
  that timeout is not cut.
- Trickle: headers, a body or an upload sent one byte per second (never idle long enough
  for the idle timeout) are cut after ANVIL_HTTP_HEADER_TIMEOUT / ANVIL_HTTP_BODY_TIMEOUT
  (an upload once it averages under 64 KiB/s), while other requests are answered; a
  request waiting in the queue is dropped as soon as its client goes.

  http_hardening.py ANVIL MODEL.gguf [STAGE...]   (stages: params host warning slowloris stream trickle)"""
import json
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Server, check, finish, post_json, request  # noqa: E402

TIMEOUT_S = 2  # ANVIL_HTTP_TIMEOUT for this test
HEADER_TIMEOUT_S = 3  # ANVIL_HTTP_HEADER_TIMEOUT
BODY_TIMEOUT_S = 3  # ANVIL_HTTP_BODY_TIMEOUT


def threads_of(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return -1


def long_parameter_names(srv, model):
    for n in (5000, 2 * 1000 * 1000):
        name = "p" * n
        try:
            st, _, o, raw = post_json(srv, "/api/create", {"model": "longparam:%d" % n, "from": model,
                                                           "parameters": {name: 1, "temperature": 0.5}, "stream": False})
        except OSError as ex:
            st, raw = -1, repr(ex).encode()
        check(st in (200, 400), "create with a %d-character PARAMETER name: 200 or 400 (%d %r)" % (n, st, raw[:120]))
        check(srv.alive(), "server alive after create with a %d-character PARAMETER name" % n)
        if st != 200 or not srv.alive():
            continue
        try:
            st, _, o, raw = post_json(srv, "/api/show", {"model": "longparam:%d" % n})
        except OSError as ex:
            st, o, raw = -1, None, repr(ex).encode()
        try:
            up = request(srv, "GET", "/api/version", timeout=10)[0] == 200
        except OSError:
            up = False
        check(up and srv.alive(), "server alive after show of a %d-character PARAMETER name" % n)
        if not up:
            return
        params = o.get("parameters", "") if isinstance(o, dict) else ""
        check(st == 400 or (st == 200 and (name + " ") in params and "temperature" in params),
              "show with a %d-character PARAMETER name: the whole name in 'parameters' or a 400 (%d, %d chars)"
              % (n, st, len(params)))
        st = request(srv, "DELETE", "/api/delete", {"model": "longparam:%d" % n})[0]
        check(st == 200, "delete longparam:%d (%d)" % (n, st))


def raw_request(port, head, timeout=10):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(head.encode())
    data = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
            if b"\r\n\r\n" in data:
                hdr, _, body = data.partition(b"\r\n\r\n")
                m = re.search(rb"content-length: *(\d+)", hdr, re.I)
                if m and len(body) >= int(m.group(1)):
                    break
    except socket.timeout:
        pass
    s.close()
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0
    return status, data


def host_check(srv, model):
    st, _, o, raw = post_json(srv, "/api/create", {"model": "victim:latest", "from": model, "stream": False})
    check(st == 200, "create victim:latest (%d %r)" % (st, raw[:120]))
    p = srv.port
    body = json.dumps({"model": "victim:latest"})
    for host, origin in (("evil.example:%d" % p, "http://evil.example:%d" % p), ("evil.example", None),
                         ("127.0.0.1.evil.example:%d" % p, None), ("localhost.evil.example:%d" % p, None),
                         ("[::2]:%d" % p, None)):
        head = "DELETE /api/delete HTTP/1.1\r\nHost: %s\r\n%sContent-Type: application/json\r\n" \
               "Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (
                   host, "Origin: %s\r\n" % origin if origin else "", len(body), body)
        st, data = raw_request(p, head)
        check(st == 403, "DELETE with Host: %s%s: 403 (%d %r)" % (host, " and a matching Origin" if origin else "",
                                                                 st, data[-160:]))
    st, _, o, _ = post_json(srv, "/api/show", {"model": "victim:latest"})
    check(st == 200, "victim:latest is still there after the rebinding attempts (%d)" % st)
    for host in ("localhost:%d" % p, "127.0.0.1:%d" % p, "localhost", "127.0.0.1", "[::1]:%d" % p,
                 "LOCALHOST:%d" % p, "app.localhost:%d" % p, "127.0.0.2:%d" % p, socket.gethostname()):
        st, data = raw_request(p, "GET /api/version HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host)
        check(st == 200, "GET /api/version with Host: %s: 200 (%d %r)" % (host, st, data[-120:]))
    st, data = raw_request(p, "GET /api/version HTTP/1.0\r\n\r\n")
    check(st == 200, "HTTP/1.0 without Host: 200 (%d)" % st)
    # RFC 9112 3.2: more than one Host is a 400, whichever comes first (the first was allowed)
    for hosts in (("localhost", "evil.example"), ("evil.example", "localhost"), ("localhost", "localhost")):
        st, data = raw_request(p, "GET /api/version HTTP/1.1\r\nHost: %s\r\nHost: %s\r\nConnection: close\r\n\r\n" % hosts)
        check(st == 400 and b"Host" in data, "two Host headers %s: 400 (%d %r)" % (hosts, st, data[-120:]))
    head = "DELETE /api/delete HTTP/1.1\r\nHost: localhost:%d\r\nOrigin: http://localhost:%d\r\n" \
           "Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (p, p, len(body), body)
    st, data = raw_request(p, head)
    check(st == 200, "DELETE with Host: localhost:PORT: 200 (%d %r)" % (st, data[-120:]))


def open_warning(anvil):
    import tempfile
    with tempfile.TemporaryDirectory(prefix="anvil-open-") as home:
        env = dict(os.environ, HOME=home, ANVIL_MODELS=os.path.join(home, "models"), ANVIL_HOST="0.0.0.0:0",
                   ANVIL_BACKEND="cpu")
        for with_key in (False, True):
            e = dict(env)
            e.pop("ANVIL_API_KEY", None)
            if with_key:
                e["ANVIL_API_KEY"] = "k3y"
            proc = subprocess.Popen([anvil, "serve"], env=e, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    text=True)
            lines = []
            end = time.time() + 30
            while time.time() < end:
                line = proc.stderr.readline()
                if not line:
                    break
                lines.append(line)
                if "listening on" in line:
                    break
            port = int(re.search(r"listening on [^ ]*:(\d+)", "".join(lines)).group(1)) if lines else 0
            # Non-loopback listener: the Host check is off.
            st = raw_request(port, "GET /api/tags HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n")[0] \
                if port else 0
            proc.send_signal(signal.SIGTERM)
            rest = proc.stderr.read()
            proc.wait(30)
            text = "".join(lines) + rest
            warned = "warning: listening on 0.0.0.0" in text and "open to the network" in text
            if with_key:
                check(not warned, "ANVIL_HOST=0.0.0.0 with ANVIL_API_KEY: no warning")
                check(st == 401, "0.0.0.0 with a key: any Host, the key decides (401: %d)" % st)
            else:
                check(warned, "ANVIL_HOST=0.0.0.0 without ANVIL_API_KEY: a warning that the API is open (%r)" % text[-300:])
                check(st == 200, "0.0.0.0 listener: the Host check is off (Host: evil.example -> %d)" % st)


def slowloris(srv, model):
    n_half = 1100
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n_half + 200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n_half + 400), hard))
    pid = srv.proc.pid
    t_before = threads_of(pid)
    socks = []
    t0 = time.time()
    for i in range(n_half):
        try:
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        except OSError as ex:
            check(False, "open half-sent connection %d: %r" % (i, ex))
            break
        s.sendall(b"POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n{\"model\"")
        socks.append(s)
    time.sleep(0.3)
    t_during = threads_of(pid)
    print("threads before: %d, with %d half-sent requests: %d (opened in %.2fs)" % (t_before, len(socks), t_during,
                                                                                   time.time() - t0), flush=True)
    check(len(socks) == n_half, "%d half-sent requests open" % n_half)
    check(t_during <= t_before + 8, "the half-sent requests hold no threads (%d -> %d)" % (t_before, t_during))
    t1 = time.time()
    try:
        st, _, raw = request(srv, "GET", "/api/version", timeout=10)
    except OSError as ex:
        st, raw = -1, repr(ex).encode()
    check(st == 200, "/api/version answered while %d half-sent requests are open (%d, %.2fs)" % (n_half, st, time.time() - t1))
    try:
        st, _, o, raw = post_json(srv, "/api/generate", {"model": model, "prompt": "hi", "stream": False,
                                                         "options": {"num_predict": 8}}, timeout=60)
    except OSError as ex:
        st, o, raw = -1, None, repr(ex).encode()
    check(st == 200 and isinstance(o, dict) and o.get("done"), "a generation answered meanwhile (%d %r)" % (st, raw[:120]))
    # After ANVIL_HTTP_TIMEOUT seconds of silence every half-sent request is closed.
    deadline = t0 + TIMEOUT_S + 8
    closed = 0
    for s in socks:
        s.settimeout(max(0.01, deadline - time.time()))
        try:
            closed += s.recv(4096) == b""
        except ConnectionResetError:
            closed += 1
        except OSError:
            pass
        s.close()
    print("half-sent requests closed by the server within %ds: %d/%d (%.1fs after the first)" % (
        TIMEOUT_S + 8, closed, n_half, time.time() - t0), flush=True)
    check(closed == n_half, "every half-sent request closed after the %ds idle timeout (%d/%d)" % (TIMEOUT_S, closed, n_half))
    check(threads_of(pid) <= t_before + 8, "threads back near the baseline (%d)" % threads_of(pid))


def long_stream(srv, model):
    # A stream slower than the idle timeout between its start and end is not cut: the
    # connection waits on its handler, which is not idleness.
    body = {"model": model, "prompt": "Tell me a long story", "format": {"type": "string", "minLength": 1000000},
            "options": {"num_predict": 100000, "temperature": 0, "num_ctx": 16384}}
    t0 = time.time()
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    b = json.dumps(body)
    s.sendall(("POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               "Content-Length: %d\r\n\r\n%s" % (len(b), b)).encode())
    got = b""
    alive = True
    while time.time() - t0 < TIMEOUT_S + 2:
        try:
            chunk = s.recv(65536)
        except OSError:
            chunk = b""
        if not chunk:
            alive = False
            break
        got += chunk
    s.close()
    check(alive and b"200 OK" in got and got.count(b"\n") > 20,
          "a stream runs past the %ds idle timeout (%.1fs, %d lines)" % (TIMEOUT_S, time.time() - t0, got.count(b"\n")))
    st, _, o, raw = post_json(srv, "/api/generate", {"model": model, "prompt": "hi", "stream": False,
                                                     "options": {"num_predict": 30}}, timeout=60)
    check(st == 200 and o.get("done"), "a non-streamed generation after it (%d)" % st)


def trickle_one(port, first, drip, out, key):
    """Sends `first`, then one byte of `drip` per 0.8 s (under the 2 s idle timeout) until
    the server closes the connection or 14 s pass; out[key] = seconds until it closed (None: never)."""
    t0 = time.time()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(first)
        s.settimeout(0.8)
        i = 0
        while time.time() - t0 < 14:
            try:
                b = s.recv(4096)
                if not b or b.startswith(b"HTTP/"):
                    out[key] = (time.time() - t0, b[:12])
                    s.close()
                    return
            except socket.timeout:
                pass
            s.sendall(drip[i % len(drip):i % len(drip) + 1])
            i += 1
        out[key] = None
        s.close()
    except (BrokenPipeError, ConnectionResetError):
        out[key] = (time.time() - t0, b"reset")
    except OSError as ex:
        out[key] = (time.time() - t0, repr(ex).encode())


def trickle(srv, model):
    p = srv.port
    kinds = {
        "headers": (b"GET /api/version HTTP/1.1\r\nHost: 127.0.0.1\r\n", b"X-Slow: aaaaaaaaaaaaaaaaaaaaaaaa\r\n",
                    HEADER_TIMEOUT_S),
        "body": (b"POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 100000\r\n\r\n{\"model\":\"", b"x", BODY_TIMEOUT_S),
        "upload": (b"POST /api/blobs/sha256:" + b"0" * 64 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   b"Content-Length: 100000000\r\n\r\n", b"GGUF", BODY_TIMEOUT_S),
    }
    out = {}
    threads = []
    for kind in kinds:
        for i in range(8):
            first, drip, _ = kinds[kind]
            t = threading.Thread(target=trickle_one, args=(p, first, drip, out, (kind, i)))
            t.start()
            threads.append(t)
    time.sleep(1.5)
    st = request(srv, "GET", "/api/version", timeout=10)[0]
    check(st == 200, "/api/version answered while 24 clients trickle (%d)" % st)
    for t in threads:
        t.join()
    for kind, (_, _, bound) in kinds.items():
        res = [out.get((kind, i)) for i in range(8)]
        print("trickled %s: closed after %s" % (kind, [round(r[0], 1) if r else None for r in res]), flush=True)
        check(all(r is not None and r[0] <= bound + 3 for r in res),
              "a %s trickled one byte at a time is cut within %d s + 3 s slack (%r)" % (kind, bound, res))
    # A kept-alive connection that trickles its second request is bounded too.
    s = socket.create_connection(("127.0.0.1", p), timeout=5)
    s.sendall(b"GET /api/version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    first = s.recv(4096)
    check(first.startswith(b"HTTP/1.1 200"), "keep-alive: first request answered (%r)" % first[:20])
    out = {}
    s.close()
    # A request queued behind busy slots whose client goes is dropped at once (the watcher
    # polls suspended connections and the scheduler drops abandoned queued requests; before,
    # it waited for a slot, then evaluated its prompt, and only then saw its client gone).
    ends = []

    def busy_one():
        post_json(srv, "/api/generate", {"model": model, "prompt": "count", "stream": False,
                                          "format": {"type": "string", "minLength": 1000000},
                                          "options": {"num_predict": 4000, "num_ctx": 8192, "temperature": 0}}, timeout=300)
        ends.append(time.time())
    busy = [threading.Thread(target=busy_one) for _ in range(2)]
    for t in busy:
        t.start()
    time.sleep(0.5)
    log_before = srv.log().count('path="/api/generate" status=499')
    body = json.dumps({"model": model, "prompt": "queued", "stream": False, "options": {"num_predict": 4, "num_ctx": 8192}})
    q = socket.create_connection(("127.0.0.1", p), timeout=5)
    q.sendall(("POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               "Content-Length: %d\r\n\r\n%s" % (len(body), body)).encode())
    time.sleep(0.3)
    q.close()
    t_closed = time.time()
    seen = None
    while time.time() - t_closed < 20 and seen is None:
        if srv.log().count('path="/api/generate" status=499') > log_before:
            seen = time.time()
        time.sleep(0.05)
    for t in busy:
        t.join()
    print("queued request dropped %.2fs after its client left; the busy requests ended %s s after" % (
        (seen or 0) - t_closed, [round(e - t_closed, 2) for e in ends]), flush=True)
    check(seen is not None and len(ends) == 2 and seen < min(ends),
          "a queued request whose client left ends before the busy slots free (%r, %r)" % (seen, ends))
    st, _, o, raw = post_json(srv, "/api/generate", {"model": model, "prompt": "after", "stream": False,
                                                     "options": {"num_predict": 4}}, timeout=60)
    check(st == 200, "a generation after the trickles and the dropped queued request (%d)" % st)


def main():
    anvil, model = sys.argv[1], os.path.abspath(sys.argv[2])
    only = set(sys.argv[3:]) or {"params", "host", "warning", "slowloris", "stream", "trickle"}
    t0 = time.time()
    srv = Server(anvil, env={"ANVIL_HTTP_TIMEOUT": str(TIMEOUT_S), "ANVIL_ALLOW_PATHS": "1",
                             "ANVIL_NUM_PARALLEL": "2", "ANVIL_HTTP_HEADER_TIMEOUT": str(HEADER_TIMEOUT_S),
                             "ANVIL_HTTP_BODY_TIMEOUT": str(BODY_TIMEOUT_S)})
    try:
        stages = (("params", long_parameter_names), ("host", host_check), ("slowloris", slowloris),
                  ("stream", long_stream), ("trickle", trickle))
        for name, fn in stages:
            if name in only and srv.alive():
                fn(srv, model)
        check(srv.alive(), "server up at the end")
    finally:
        srv.stop()
    if "warning" in only:
        open_warning(anvil)
    print("http_hardening took %.1fs" % (time.time() - t0))
    finish()


if __name__ == "__main__":
    main()
