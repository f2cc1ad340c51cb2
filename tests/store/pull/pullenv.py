"""pullenv: what the pull tests share: a temporary home and model store, the local registry
(tests/pylib/registry_server.py) on a free port, `anvil` runs with that environment, the
registry's statistics and knobs, and a small pass/fail counter."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "..", "..", "pylib", "registry_server.py")


class Env:
    def __init__(self, anvil, models, redirect=True):
        """models: {"ns/model:tag": gguf path} served by the registry."""
        self.anvil = anvil
        self.tmp = tempfile.mkdtemp(prefix="anvil-pull-")
        self.store = os.path.join(self.tmp, "models")
        self.env = dict(os.environ)
        self.env.update({
            "HOME": os.path.join(self.tmp, "home"),
            "ANVIL_MODELS": self.store,
            "OLLAMA_MODELS": os.path.join(self.tmp, "no-ollama"),
            "ANVIL_PULL_PART_SIZE": "131072",   # the ~800 KB test model splits into 7 parts
            "ANVIL_PULL_RETRY_BASE_MS": "5",
        })
        self.env.pop("ANVIL_REGISTRY_INSECURE", None)
        self.env.pop("ANVIL_HF_ENDPOINT", None)
        os.makedirs(self.env["HOME"])
        cmd = [sys.executable, SERVER]
        for name, path in models.items():
            cmd += ["--model", "%s=%s" % (name, path)]
        if not redirect:
            cmd.append("--no-redirect")
        self.server = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        self.port = int(self.server.stdout.readline())
        self.host = "127.0.0.1:%d" % self.port
        self.passed = self.failed = 0

    # ---- registry
    def url(self, path):
        return "http://%s%s" % (self.host, path)

    def get(self, path):
        with urllib.request.urlopen(self.url(path)) as r:
            return r.read()

    def stats(self):
        return json.loads(self.get("/_stats"))

    def control(self, **knobs):
        req = urllib.request.Request(self.url("/_control"), data=json.dumps(knobs).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req) as r:
            return json.loads(r.read())

    def manifest(self, ns, model, tag):
        return self.get("/v2/%s/%s/manifests/%s" % (ns, model, tag))

    def layers(self, ns, model, tag):
        m = json.loads(self.manifest(ns, model, tag))
        return [m["config"]] + m["layers"]

    # ---- store
    def blob_path(self, digest):
        return os.path.join(self.store, "blobs", digest.replace(":", "-"))

    def manifest_path(self, host, ns, model, tag):
        return os.path.join(self.store, "manifests", host, ns, model, tag)

    def store_files(self):
        out = []
        for root, _, files in os.walk(self.store):
            out += [os.path.relpath(os.path.join(root, f), self.store) for f in files]
        return sorted(out)

    # ---- anvil
    def anvil_run(self, *args, env=None, timeout=300):
        e = dict(self.env)
        e.update(env or {})
        p = subprocess.run([self.anvil] + list(args), env=e, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr

    def start_anvil(self, *args, env=None):
        e = dict(self.env)
        e.update(env or {})
        return subprocess.Popen([self.anvil] + list(args), env=e, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    # ---- checks
    def check(self, cond, what, detail=""):
        if cond:
            self.passed += 1
            print("ok   %s" % what)
        else:
            self.failed += 1
            print("FAIL %s%s" % (what, (": " + str(detail)) if detail != "" else ""))
        return cond

    def finish(self):
        self.server.terminate()
        self.server.wait()
        if not self.failed:
            shutil.rmtree(self.tmp, ignore_errors=True)
        else:
            print("(files kept in %s)" % self.tmp)
        print("%d passed, %d failed" % (self.passed, self.failed))
        return 1 if self.failed or not self.passed else 0


def one_line_error(stderr):
    """The error lines of a failed command ('anvil: ...'), ignoring nothing else."""
    return [l for l in stderr.splitlines() if l.strip()]


def overlap(a, b):
    """Bytes shared by two lists of [start, end) ranges."""
    total = 0
    for s1, e1 in a:
        for s2, e2 in b:
            total += max(0, min(e1, e2) - max(s1, s2))
    return total
