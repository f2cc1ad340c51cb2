#!/usr/bin/env python3
"""server.py: a local model registry for the pull tests (Ollama's registry protocol).

Serves, on 127.0.0.1 (python stdlib, one thread per connection, HTTP/1.1):
  GET /v2/<ns>/<model>/manifests/<tag>   the manifest (404 when unknown)
  GET /v2/<ns>/<model>/blobs/<digest>    307 redirect to /cdn/<digest> (--no-redirect: the blob)
  GET /cdn/<digest>                      the blob, with Range support (206 + Content-Range)
  GET /_stats                            JSON: requests per path, bytes/requests/ranges per blob
  POST /_control                         JSON knobs (below); answers the new knob state

Models come from GGUF files (--model ns/model:tag=FILE: a manifest with a config blob, the
GGUF as the model layer and a small license layer, like Ollama's) and/or a folder laid out
like a store (--store DIR: DIR/manifests/<host>/<ns>/<model>/<tag>, DIR/blobs/sha256-<hex>).

Knobs (POST /_control body, or --control JSON at start; "digest" may be "*" for every blob):
  {"drop": {"digest": D, "at": OFFSET, "mode": "once"|"always", "stall": false}}
        cut the connection when a response reaches blob offset OFFSET (once: the first time);
        with "stall": true, first send nothing more for 10 s (a stalled transfer)
  {"budget": {"digest": D, "bytes": N}}   serve N more bytes of the blob in all, then cut
                                          every response (a network that dies); null clears
  {"corrupt": [D, ...]}                   serve those blobs with one byte flipped
  {"status": [{"prefix": "/v2/..", "code": 500, "count": -1}]}   answer code for paths with
                                          that prefix (count times; -1 = always)
  {"rate": BYTES_PER_SECOND}              throttle every blob response (0 = unlimited)
  {"no_range": true}                      ignore Range headers (200 + the whole blob)
  {"clear": true}                         remove every knob
  {"reset_stats": true}
Prints the port on stdout when ready.
"""
import argparse
import hashlib
import json
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MT_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
MT_CONFIG = "application/vnd.docker.container.image.v1+json"
MT_MODEL = "application/vnd.ollama.image.model"
MT_LICENSE = "application/vnd.ollama.image.license"
CHUNK = 16384


class Registry:
    def __init__(self):
        self.lock = threading.Lock()
        self.manifests = {}   # (ns, model, tag) -> bytes
        self.blobs = {}       # digest -> ("file", path, size) | ("bytes", data, size)
        self.knobs = {}
        self.reset_stats()

    def reset_stats(self):
        with self.lock:
            self.stats = {"requests": {}, "blobs": {}}

    def add_blob_bytes(self, data):
        d = "sha256:" + hashlib.sha256(data).hexdigest()
        self.blobs[d] = ("bytes", data, len(data))
        return d, len(data)

    def add_blob_file(self, path):
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        d = "sha256:" + h.hexdigest()
        size = os.path.getsize(path)
        self.blobs[d] = ("file", path, size)
        return d, size

    def add_gguf(self, name, path):
        ns_model, _, tag = name.partition(":")
        ns, _, model = ns_model.rpartition("/")
        ns = ns or "library"
        tag = tag or "latest"
        mdigest, msize = self.add_blob_file(path)
        family = "unknown"
        try:
            import gguf
            r = gguf.GGUFReader(path)
            fld = r.fields.get("general.architecture")
            if fld is not None:
                family = bytes(fld.parts[fld.data[0]]).decode()
        except Exception:  # the architecture is cosmetic here
            pass
        config = json.dumps({"model_format": "gguf", "model_family": family, "model_families": [family],
                             "model_type": "test", "file_type": "unknown",
                             "rootfs": {"type": "layers", "diff_ids": [mdigest]}}).encode()
        cdigest, csize = self.add_blob_bytes(config)
        ldigest, lsize = self.add_blob_bytes(b"Test license for " + name.encode() + b"\n")
        manifest = {"schemaVersion": 2, "mediaType": MT_MANIFEST,
                    "config": {"mediaType": MT_CONFIG, "digest": cdigest, "size": csize},
                    "layers": [{"mediaType": MT_MODEL, "digest": mdigest, "size": msize},
                               {"mediaType": MT_LICENSE, "digest": ldigest, "size": lsize}]}
        self.manifests[(ns, model, tag)] = json.dumps(manifest, indent=2).encode()

    def add_store(self, root):
        mroot = os.path.join(root, "manifests")
        for host in sorted(os.listdir(mroot)):
            for ns in sorted(os.listdir(os.path.join(mroot, host))):
                for model in sorted(os.listdir(os.path.join(mroot, host, ns))):
                    for tag in sorted(os.listdir(os.path.join(mroot, host, ns, model))):
                        with open(os.path.join(mroot, host, ns, model, tag), "rb") as f:
                            self.manifests.setdefault((ns, model, tag), f.read())
        broot = os.path.join(root, "blobs")
        for fn in sorted(os.listdir(broot)):
            if fn.startswith("sha256-") and len(fn) == 71:
                p = os.path.join(broot, fn)
                self.blobs["sha256:" + fn[7:]] = ("file", p, os.path.getsize(p))

    def control(self, k):
        with self.lock:
            if k.get("clear"):
                self.knobs = {}
            for key in ("drop", "budget", "status", "rate", "no_range"):
                if key in k:
                    if k[key] is None:
                        self.knobs.pop(key, None)
                    else:
                        self.knobs[key] = json.loads(json.dumps(k[key]))
            if "corrupt" in k:
                self.knobs["corrupt"] = list(k["corrupt"] or [])
            if k.get("reset_stats"):
                self.stats = {"requests": {}, "blobs": {}}
            return dict(self.knobs)

    def count_request(self, path):
        with self.lock:
            self.stats["requests"][path] = self.stats["requests"].get(path, 0) + 1

    def forced_status(self, path):
        with self.lock:
            for rule in self.knobs.get("status", []):
                if path.startswith(rule["prefix"]) and rule.get("count", -1) != 0:
                    if rule.get("count", -1) > 0:
                        rule["count"] -= 1
                    return int(rule["code"])
        return None


REG = Registry()


def applies(knob_digest, digest):
    return knob_digest in ("*", digest)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet
        pass

    def send_json(self, code, obj, content_type="application/json", head=False):
        body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def do_HEAD(self):
        self.handle_get(head=True)

    def do_GET(self):
        self.handle_get(head=False)

    def do_POST(self):
        if self.path != "/_control":
            return self.send_json(404, {"errors": [{"code": "NOT_FOUND"}]})
        n = int(self.headers.get("Content-Length", "0"))
        try:
            knobs = json.loads(self.rfile.read(n) or b"{}")
        except ValueError:
            return self.send_json(400, {"error": "bad JSON"})
        self.send_json(200, REG.control(knobs))

    def handle_get(self, head):
        path = self.path.split("?", 1)[0]
        if path == "/_stats":
            with REG.lock:
                return self.send_json(200, REG.stats)
        REG.count_request(path)
        code = REG.forced_status(path)
        if code is not None:
            return self.send_json(code, {"errors": [{"code": "FORCED", "message": "forced %d" % code}]}, head=head)
        parts = path.split("/")
        # /v2/<ns>/<model>/manifests/<tag>
        if len(parts) == 6 and parts[1] == "v2" and parts[4] == "manifests":
            m = REG.manifests.get((parts[2], parts[3], parts[5]))
            if m is None:
                return self.send_json(404, {"errors": [{"code": "MANIFEST_UNKNOWN", "message": "manifest unknown"}]},
                                      head=head)
            return self.send_json(200, m, content_type=MT_MANIFEST, head=head)
        if len(parts) == 6 and parts[1] == "v2" and parts[4] == "blobs":
            digest = parts[5]
            if digest not in REG.blobs:
                return self.send_json(404, {"errors": [{"code": "BLOB_UNKNOWN"}]}, head=head)
            if not self.server.redirect:
                return self.serve_blob(digest, head)
            self.send_response(307)
            self.send_header("Location", "/cdn/" + digest)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if len(parts) == 3 and parts[1] == "cdn" and parts[2] in REG.blobs:
            return self.serve_blob(parts[2], head)
        return self.send_json(404, {"errors": [{"code": "NOT_FOUND"}]}, head=head)

    def parse_range(self, size):
        r = self.headers.get("Range")
        if not r or REG.knobs.get("no_range"):
            return 0, size, False
        if not r.startswith("bytes=") or "," in r:
            return None
        a, _, b = r[6:].strip().partition("-")
        try:
            if a == "":
                n = int(b)
                start, end = max(0, size - n), size
            else:
                start = int(a)
                end = min(int(b) + 1, size) if b else size
        except ValueError:
            return None
        if start >= size or start >= end:
            return None
        return start, end, True

    def drop(self):
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.close_connection = True

    def serve_blob(self, digest, head):
        kind, src, size = REG.blobs[digest]
        rng = self.parse_range(size)
        if rng is None:
            self.send_response(416)
            self.send_header("Content-Range", "bytes */%d" % size)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        start, end, partial = rng
        self.send_response(206 if partial else 200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(end - start))
        self.send_header("Accept-Ranges", "bytes")
        if partial:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end - 1, size))
        self.end_headers()
        if head:
            return
        with REG.lock:
            st = REG.stats["blobs"].setdefault(digest, {"bytes": 0, "requests": 0, "ranges": []})
            st["requests"] += 1
            rec = [start, start]
            st["ranges"].append(rec)
            knobs = REG.knobs
            corrupt = any(applies(d, digest) for d in knobs.get("corrupt", []))
            rate = knobs.get("rate") or 0
            limit = end  # offset at which this response is cut
            stall = False
            drop = knobs.get("drop")
            if drop and applies(drop["digest"], digest) and start <= drop["at"] < end:
                limit = drop["at"]
                stall = bool(drop.get("stall"))
                if drop.get("mode", "once") == "once":
                    knobs.pop("drop")
        f = open(src, "rb") if kind == "file" else None
        try:
            pos = start
            while pos < end:
                n = min(CHUNK, end - pos, limit - pos)
                with REG.lock:
                    budget = REG.knobs.get("budget")
                    if budget and applies(budget["digest"], digest):
                        n = min(n, budget["bytes"])
                        budget["bytes"] -= max(n, 0)
                if n <= 0:
                    if stall and pos == limit:
                        self.wfile.flush()
                        time.sleep(10)
                    return self.drop()
                if f:
                    f.seek(pos)
                    chunk = bytearray(f.read(n))
                else:
                    chunk = bytearray(src[pos:pos + n])
                mid = size // 2
                if corrupt and pos <= mid < pos + n:
                    chunk[mid - pos] ^= 0xFF
                try:
                    self.wfile.write(chunk)
                except OSError:
                    self.close_connection = True
                    return
                pos += n
                with REG.lock:
                    st["bytes"] += n
                    rec[1] = pos
                if rate:
                    time.sleep(n / rate)
        finally:
            if f:
                f.close()


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)  # a client hanging up is not news


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", action="append", default=[], metavar="NS/MODEL:TAG=GGUF")
    ap.add_argument("--store", action="append", default=[], metavar="DIR")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--no-redirect", action="store_true", help="serve blobs without the /cdn/ redirect")
    ap.add_argument("--control", help="initial knobs (JSON, as for POST /_control)")
    args = ap.parse_args()
    for spec in args.model:
        name, sep, path = spec.partition("=")
        if not sep:
            sys.exit("server.py: --model wants NS/MODEL:TAG=GGUF, got %r" % spec)
        REG.add_gguf(name, path)
    for d in args.store:
        REG.add_store(d)
    if args.control:
        REG.control(json.loads(args.control))
    srv = Server(("127.0.0.1", args.port), Handler)
    srv.redirect = not args.no_redirect
    print(srv.server_address[1], flush=True)
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
