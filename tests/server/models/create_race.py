#!/usr/bin/env python3
"""create_race: the store's create/delete race through the server, 200 rounds. Each round
creates model A (a GGUF plus a SYSTEM layer), then at once creates B FROM A (sharing A's
model blob) and deletes A, over HTTP. Whichever wins, a create that answered success must
leave B whole: /api/show answers, every blob its manifest names is on disk, and (every
20th round) it generates. At the end every manifest names only blobs that exist. Before
the store lock (issue 12) the delete's prune removed the shared blob in 15 of 20 rounds.

  create_race.py ANVIL WORKDIR [ROUNDS]"""
import json
import os
import sys
import threading
import urllib.error
import urllib.request

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Server, check, cleanup, finish, make_model  # noqa: E402


def call(srv, method, path, body):
    req = urllib.request.Request(srv.url + path, data=json.dumps(body).encode(), method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def manifest_blobs(models_dir, name):
    path = os.path.join(models_dir, "manifests", "registry.ollama.ai", "library", name, "latest")
    with open(path) as f:
        m = json.load(f)
    return [l["digest"] for l in m["layers"]] + [m["config"]["digest"]]


def blob_exists(models_dir, digest):
    return os.path.exists(os.path.join(models_dir, "blobs", digest.replace(":", "-")))


def all_manifests_whole(models_dir):
    missing = []
    root = os.path.join(models_dir, "manifests")
    for d, _, files in os.walk(root):
        for fn in files:
            with open(os.path.join(d, fn)) as f:
                m = json.load(f)
            for l in m["layers"] + [m["config"]]:
                if not blob_exists(models_dir, l["digest"]):
                    missing.append((os.path.relpath(os.path.join(d, fn), root), l["digest"]))
    return missing


def main():
    anvil, work = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    cleanup(work)
    os.makedirs(work)
    gguf = make_model(os.path.join(work, "tiny.gguf"))
    srv = Server(anvil, os.path.join(work, "srv"))
    lost = created = deleted_first = 0
    try:
        for i in range(rounds):
            st, body = call(srv, "POST", "/api/create", {"model": "race-a", "from": gguf,
                                                         "system": "A %d" % i, "stream": False})
            if st != 200:
                check(False, "round %d: create race-a (%d %s)" % (i, st, body[:200]))
                break
            res = {}

            def create_b():
                res["create"] = call(srv, "POST", "/api/create", {"model": "race-b", "from": "race-a",
                                                                  "system": "B %d" % i, "stream": False})

            def delete_a():
                res["delete"] = call(srv, "DELETE", "/api/delete", {"model": "race-a"})
            ts = [threading.Thread(target=create_b), threading.Thread(target=delete_a)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            cst, cbody = res["create"]
            dst, dbody = res["delete"]
            if dst not in (200, 404):
                check(False, "round %d: delete race-a answered %d %s" % (i, dst, dbody[:200]))
            if cst != 200:
                # B's FROM found A already gone: a clean 404/400 naming it, never a 500.
                if cst not in (400, 404) or "race-a" not in cbody:
                    check(False, "round %d: create race-b failed unclearly: %d %s" % (i, cst, cbody[:200]))
                deleted_first += 1
                continue
            created += 1
            blobs = manifest_blobs(srv.models, "race-b")
            gone = [b for b in blobs if not blob_exists(srv.models, b)]
            sst, _ = call(srv, "POST", "/api/show", {"model": "race-b"})
            if gone or sst != 200:
                lost += 1
                print("round %d: race-b answered success but lost %s (show %d)" % (i, gone, sst), flush=True)
            if i % 20 == 0:
                gst, gbody = call(srv, "POST", "/api/generate", {"model": "race-b", "prompt": "hi", "stream": False,
                                                                  "options": {"num_predict": 2}})
                check(gst == 200, "round %d: race-b generates (%d %s)" % (i, gst, gbody[:160]))
            dst, dbody = call(srv, "DELETE", "/api/delete", {"model": "race-b"})
            if dst != 200:
                check(False, "round %d: delete race-b (%d %s)" % (i, dst, dbody[:200]))
        print("%d rounds: B created %d times (A deleted first %d times), B lost a blob %d times"
              % (rounds, created, deleted_first, lost), flush=True)
        check(lost == 0, "%d create/delete races through the server: zero lost blobs (%d lost)" % (rounds, lost))
        check(created > 0, "at least one round created B (%d)" % created)
        missing = all_manifests_whole(srv.models)
        check(not missing, "every manifest names only blobs that exist (%r)" % missing[:4])
    finally:
        rc = srv.stop()
    check(rc == 0, "server exit status after SIGTERM is 0 (%s)" % rc)
    log = "".join(srv.log)
    check("Sanitizer" not in log and "runtime error:" not in log, "no sanitizer report in the server's log")
    cleanup(work)
    finish()


if __name__ == "__main__":
    main()
