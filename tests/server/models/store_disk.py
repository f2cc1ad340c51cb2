#!/usr/bin/env python3
"""store_disk: what the server does for the store's disk. Blob uploads over ANVIL_MAX_UPLOAD
are refused with 413 (declared by Content-Length, or chunked and found out while streaming)
and leave no spool file; at start-up the server removes stale temporaries (a killed upload's
.upload-*, a killed create's .anvil-tmp-*, however young: nothing but a dead writer leaves
one unlocked) but not those a live writer holds (flock), again on a timer
(ANVIL_CLEAN_INTERVAL), and prunes unreferenced blobs older than an hour (not a young one:
an upload awaiting its create), unless ANVIL_NOPRUNE. Uploads in progress together hold at
most ANVIL_MAX_UPLOAD_TOTAL bytes (507 past it).

  store_disk.py ANVIL WORKDIR"""
import fcntl
import hashlib
import http.client
import os
import shutil
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Server, check, finish  # noqa: E402


def put(path, data, age=0):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    if age:
        t = time.time() - age
        os.utime(path, (t, t))


def blob_name(data):
    return "sha256-" + hashlib.sha256(data).hexdigest()


def upload(srv, data, chunked=False):
    """POST /api/blobs/<digest of data>: (status, body text)."""
    host, port = srv.addr.rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port), timeout=60)
    path = "/api/blobs/sha256:" + hashlib.sha256(data).hexdigest()
    try:
        if chunked:
            c.request("POST", path, body=iter([data[i:i + 1024] for i in range(0, len(data), 1024)]),
                      encode_chunked=True)
        else:
            c.request("POST", path, body=data)
    except (BrokenPipeError, ConnectionResetError):
        pass  # answered before the body was all sent
    r = c.getresponse()
    body = r.read().decode(errors="replace")
    c.close()
    return r.status, body


def main():
    anvil, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    models = os.path.join(work, "models")
    blobs = os.path.join(models, "blobs")
    old_blob, young_blob = b"an old unused upload", b"a young upload"
    stale = {"root spool": os.path.join(models, ".upload-stale1"),
             "blobs temporary": os.path.join(blobs, ".anvil-tmp-999999-1"),
             "manifest temporary": os.path.join(models, "manifests", "registry.ollama.ai", ".anvil-tmp-999999-2")}
    for p in stale.values():
        put(p, b"x" * 1000)   # killed a moment ago: stale at once (it waited an hour)
    live = os.path.join(models, ".upload-live1")
    put(live, b"y" * 1000, age=7200)
    live_fd = os.open(live, os.O_RDONLY)
    fcntl.flock(live_fd, fcntl.LOCK_EX)  # a live upload of another server on the same store
    put(os.path.join(blobs, blob_name(old_blob)), old_blob, age=7200)
    put(os.path.join(blobs, blob_name(young_blob)), young_blob)

    srv = Server(anvil, work, {"ANVIL_MAX_UPLOAD": "4096"})
    try:
        for what, p in stale.items():
            check(not os.path.exists(p), "start-up removed the stale %s" % what, p)
        check(os.path.exists(live), "a live writer's (flock'd) spool file is kept")
        check(not os.path.exists(os.path.join(blobs, blob_name(old_blob))), "an unreferenced blob over an hour old is pruned")
        check(os.path.exists(os.path.join(blobs, blob_name(young_blob))), "a young unreferenced blob (an upload) is kept")

        big = os.urandom(8192)
        st, body = upload(srv, big)
        check(st == 413, "an upload over ANVIL_MAX_UPLOAD (Content-Length) is 413", (st, body))
        check("ANVIL_MAX_UPLOAD" in body and "4096" in body, "the 413 names the limit and the variable", body)
        st, body = upload(srv, big, chunked=True)
        check(st == 413, "a chunked upload over the limit is 413", (st, body))
        check("ANVIL_MAX_UPLOAD" in body, "the chunked 413 names the variable", body)
        check(not os.path.exists(os.path.join(blobs, blob_name(big))), "no blob of the refused upload")
        time.sleep(0.2)
        spools = [f for f in os.listdir(models) if f.startswith(".upload-") and f != os.path.basename(live)]
        check(not spools, "no spool file left by the refused uploads", spools)
        small = os.urandom(3000)
        st, body = upload(srv, small)
        check(st == 201, "an upload under the limit is stored (201)", (st, body))
        check(os.path.exists(os.path.join(blobs, blob_name(small))), "its blob is in the store")
    finally:
        check(srv.stop() == 0, "the server stops cleanly", "".join(srv.log[-5:]))

    # ANVIL_NOPRUNE: unused blobs stay, stale temporaries still go, also on the timer
    put(os.path.join(blobs, blob_name(old_blob)), old_blob, age=7200)
    for p in stale.values():
        put(p, b"x", age=7200)
    srv = Server(anvil, work, {"ANVIL_NOPRUNE": "1", "ANVIL_CLEAN_INTERVAL": "1"})
    try:
        check(os.path.exists(os.path.join(blobs, blob_name(old_blob))), "ANVIL_NOPRUNE keeps an unused old blob")
        check(all(not os.path.exists(p) for p in stale.values()), "ANVIL_NOPRUNE still removes stale temporaries")
        st, _ = upload(srv, os.urandom(5000))
        check(st == 201, "the default upload limit (64 GiB) takes 5000 bytes", st)
        for p in stale.values():   # another process's create or upload killed while this server runs
            put(p, b"z")
        deadline = time.time() + 10
        while time.time() < deadline and any(os.path.exists(p) for p in stale.values()):
            time.sleep(0.2)
        check(all(not os.path.exists(p) for p in stale.values()), "the timer removes temporaries killed after start-up")
        check(os.path.exists(live), "the timer keeps the live writer's spool file")
    finally:
        check(srv.stop() == 0, "the second server stops cleanly")

    # uploads in progress together: at most ANVIL_MAX_UPLOAD_TOTAL bytes
    srv = Server(anvil, work, {"ANVIL_MAX_UPLOAD": "4096", "ANVIL_MAX_UPLOAD_TOTAL": "5000"})
    try:
        first = os.urandom(4000)
        host, port = srv.addr.rsplit(":", 1)
        held = http.client.HTTPConnection(host, int(port), timeout=60)
        held.putrequest("POST", "/api/blobs/sha256:" + hashlib.sha256(first).hexdigest())
        held.putheader("Content-Length", str(len(first)))
        held.endheaders()
        held.send(first[:1000])          # in progress: it holds its 4000 bytes
        time.sleep(0.3)
        second = os.urandom(3000)
        st, body = upload(srv, second)
        check(st == 507 and "ANVIL_MAX_UPLOAD_TOTAL" in body, "a second upload past the total is 507 naming the limit",
              (st, body))
        held.send(first[1000:])
        r = held.getresponse()
        check(r.status == 201, "the upload in progress completes (201)", r.status)
        r.read()
        held.close()
        st, body = upload(srv, second)
        check(st == 201, "once it is done, the second upload is taken (201)", (st, body))
    finally:
        check(srv.stop() == 0, "the third server stops cleanly")
    os.close(live_fd)
    sys.exit(finish())


if __name__ == "__main__":
    main()
