#!/usr/bin/env python3
"""bench-request-scaling: the work one request costs must grow linearly with its size
(issue 28: a JSON schema's "required" list, /v1/embeddings token ids and /api/embed inputs were
walked in O(n^2)). Times each request at size n and 10 n against one `anvil serve` and prints
the ratio (linear: about 10; quadratic: about 100). A benchmark, not a unit test: run it by hand.

  tools/bench/bench-request-scaling.py build/anvil GEN_MODEL.gguf EMBED_MODEL.gguf [--small 10000]
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "server"))
from common import Server, post_json  # noqa: E402


def timed(server, path, body):
    t0 = time.monotonic()
    try:
        status = post_json(server, path, body, timeout=600)[0]
    except OSError as e:   # a body past the server's limit: refused before it is read
        status = "closed (%s)" % e.__class__.__name__
    return time.monotonic() - t0, status


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("anvil")
    ap.add_argument("gen_model")
    ap.add_argument("embed_model")
    ap.add_argument("--small", type=int, default=10000)
    a = ap.parse_args()
    gen, emb = os.path.abspath(a.gen_model), os.path.abspath(a.embed_model)
    srv = Server(a.anvil)
    try:
        post_json(srv, "/api/generate", {"model": gen, "prompt": "x", "options": {"num_predict": 1}}, timeout=600)
        post_json(srv, "/api/embed", {"model": emb, "input": "x"}, timeout=600)
        cases = [
            ("schema required names", "/api/generate", lambda n: {
                "model": gen, "prompt": "x", "stream": False, "options": {"num_predict": 1},
                "format": {"type": "object", "required": ["k%d" % i for i in range(n)]}}),
            ("/v1/embeddings token ids", "/v1/embeddings", lambda n: {
                "model": emb, "input": [[5] * n]}),
            ("/api/embed inputs (empty strings)", "/api/embed", lambda n: {
                "model": emb, "input": [""] * (n // 10)}),
        ]
        print("| request | n | time (s) | 10 n | time (s) | ratio (linear ~10) | statuses |")
        print("|---|---:|---:|---:|---:|---:|---|")
        for label, path, body in cases:
            t1, s1 = timed(srv, path, body(a.small))
            t2, s2 = timed(srv, path, body(10 * a.small))
            print("| %s | %d | %.3f | %d | %.3f | %.1f | %s %s |" % (label, a.small, t1, 10 * a.small, t2, t2 / max(t1, 1e-6), s1, s2))
            sys.stdout.flush()
    finally:
        srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
