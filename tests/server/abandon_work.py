#!/usr/bin/env python3
"""abandon_work: work nobody waits for stops (issue 28). A client that hangs up in the middle of
a long /api/embed (200k inputs: seconds of work) ends it within a second, so the next request is
not queued behind it; a SIGTERM during such a request stops the server within seconds with
status 0 (it took over 120 s). More inputs than ANVIL_MAX_EMBED_INPUTS is a 400.

usage: abandon_work.py ANVIL_BINARY EMBED_MODEL.gguf
"""
import json
import os
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Server, check, finish, post_json, wait_until  # noqa: E402

anvil, model = sys.argv[1], os.path.abspath(sys.argv[2])
N_INPUTS = 200000


def send_big(server):
    """Sends the long request on a raw socket and returns the socket (the answer unread)."""
    body = json.dumps({"model": model, "input": [""] * N_INPUTS}).encode()
    s = socket.create_connection(("127.0.0.1", server.port))
    s.sendall(b"POST /api/embed HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body) + body)
    return s


srv = Server(anvil, env={"ANVIL_MAX_EMBED_INPUTS": "300000"})
st = post_json(srv, "/api/embed", {"model": model, "input": "warm up"}, timeout=300)[0]
check(st == 200, "warm-up embed answers 200 (got %s)" % st)
# the per-request budget: more inputs than ANVIL_MAX_EMBED_INPUTS is a 400 naming it, at once
t0 = time.monotonic()
st, _, o, raw = post_json(srv, "/api/embed", {"model": model, "input": [""] * 300001}, timeout=300)
check(st == 400 and b"ANVIL_MAX_EMBED_INPUTS" in raw and time.monotonic() - t0 < 5,
      "300001 inputs over a budget of 300000: 400 naming it (%s %r)" % (st, raw[:200]))
t0 = time.monotonic()
post_json(srv, "/api/embed", {"model": model, "input": [""] * 2000}, timeout=300)
per_input = (time.monotonic() - t0) / 2000
print("one empty input costs %.3f ms: the long request is about %.1f s of work" % (1e3 * per_input, per_input * N_INPUTS))

# 1. the client hangs up: the next request does not wait for the abandoned one's inputs
sock = send_big(srv)
time.sleep(0.5)
sock.close()
time.sleep(0.2)
t0 = time.monotonic()
st = post_json(srv, "/api/embed", {"model": model, "input": "after the hang-up"}, timeout=300)[0]
waited = time.monotonic() - t0
check(st == 200, "the next request answers 200 (got %s)" % st)
check(waited < 1.5, "the next request waited %.2f s (< 1.5 s: the abandoned work stopped)" % waited)
check(wait_until(lambda: "status=499" in srv.log(), timeout=10), "the abandoned request is logged with status 499")

# 2. SIGTERM in the middle of the long request: the server exits within seconds, status 0
sock = send_big(srv)
time.sleep(0.5)
t0 = time.monotonic()
srv.proc.send_signal(signal.SIGTERM)
try:
    rc = srv.proc.wait(30)
except Exception:
    rc = None
took = time.monotonic() - t0
check(rc == 0 and took < 3.0, "SIGTERM during a long request: exit %s after %.2f s (< 3 s)" % (rc, took))
sock.close()
srv.stop()
finish()
