#!/usr/bin/env python3
"""The model-management API through the official `ollama` npm package
(tests/server/models/node_models.mjs, with tests/server/node/package.json `npm ci`-ed into
the build tree): version, blob upload, create, list, show, generate then ps, copy,
delete (the client sends the legacy "name" field), and the errors of missing models.
Exits 77 (skipped) only when npm is missing or cannot reach a registry.

usage: node_client.py ANVIL_BINARY WORK_DIR NODE
"""
import datetime
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402

anvil, work, node = sys.argv[1], sys.argv[2], sys.argv[3]
node_dir = os.path.join(work, "node")
os.makedirs(node_dir, exist_ok=True)
for f in ("package.json", "package-lock.json"):
    shutil.copy(os.path.join(harness.ROOT, "tests", "server", "node", f), os.path.join(node_dir, f))
if not os.path.isdir(os.path.join(node_dir, "node_modules", "ollama")):
    if not shutil.which("npm"):
        print("SKIP: npm is not installed")
        sys.exit(77)
    p = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=node_dir, capture_output=True, text=True,
                       timeout=300)
    if p.returncode != 0:
        if any(s in p.stderr for s in ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "network")):
            print("SKIP: npm cannot reach a registry:\n" + p.stderr[-800:])
            sys.exit(77)
        check(False, "npm ci", p.stderr[-2000:])
        sys.exit(harness.finish())

gguf_path = harness.make_model(os.path.join(work, "tiny-gemma3-q8_0.gguf"))
tmp = harness.workdir("models-node")
srv = harness.Server(anvil, tmp)
try:
    p = subprocess.run([node, os.path.join(harness.HERE, "node_models.mjs"), srv.url, gguf_path], cwd=node_dir,
                       capture_output=True, text=True, timeout=300)
    if check(p.returncode == 0, "the node client ran", p.stderr[-2000:]):
        r = json.loads(p.stdout)
        check(r["version"].count(".") == 2, "node version", r["version"])
        check(r["blob_status"] == 201, "node blob upload: 201", r["blob_status"])
        check(r["create_statuses"][-1:] == ["success"], "node create streams to success", r["create_statuses"])
        check([m["name"] for m in r["list"]] == ["js/tiny:1"] and r["list"][0]["digest"] == harness.manifest_hex(srv.models, "js/tiny:1")
              and r["list"][0]["details"]["family"] == "gemma3", "node list", r["list"])
        check(r["show"]["system"] == "JS system" and r["show"]["arch"] == "gemma3"
              and "temperature" in r["show"]["parameters"] and '"<x>"' in r["show"]["parameters"]
              and "completion" in r["show"]["capabilities"], "node show", r["show"])
        check(r["generate_done"], "node generate")
        ps = r["ps"]
        check(len(ps) == 1 and ps[0]["name"] == "js/tiny:1" and ps[0]["size"] > 0 and ps[0]["size_vram"] == 0,
              "node ps: the loaded model on the CPU", ps)
        if ps:
            exp = datetime.datetime.fromisoformat(ps[0]["expires_at"].replace("Z", "+00:00"))
            left = (exp - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
            check(200 < left <= 301, "node ps: expires_at in about 5 minutes", ps[0]["expires_at"])
        check(r["after_copy"] == ["js/tiny:1", "js/tiny:2"], "node copy", r["after_copy"])
        check(r["after_delete"] == ["js/tiny:1"], "node delete (legacy 'name' field)", r["after_delete"])
        check("not found" in r["delete_missing"], "node delete of a missing model: error", r["delete_missing"])
        check("not found" in r["show_missing"], "node show of a missing model: error", r["show_missing"])
finally:
    rc = srv.stop()
    check(rc == 0, "anvil serve exits 0", "".join(srv.log[-20:]))
    harness.cleanup(tmp)
sys.exit(harness.finish())
