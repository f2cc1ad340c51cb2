"""harness: what the server model-management tests share: pass/fail counting, a tiny
test model, and an `anvil serve` on a free port with a private store and home folder."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "pylib"))
from checks import check, finish  # noqa: E402,F401 (re-exported to the scripts)


HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))



def make_model(out, family="gemma3", qtype="q8_0"):
    """A deterministic random-weight GGUF (tools/make_test_model.py), written once."""
    if not os.path.exists(out):
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_test_model.py"), "--family", family,
                        "--preset", "tiny", "--type", qtype, "--out", out], check=True, capture_output=True)
    return out


def n_params(path):
    """Parameter count of a GGUF (sum of tensor elements), read with gguf-py."""
    import gguf
    r = gguf.GGUFReader(path)
    return sum(int(t.n_elements) for t in r.tensors)


def human_number(n):
    """Ollama's format.HumanNumber."""
    if n >= 1_000_000_000:
        v = n / 1e9
        return "%.0fB" % v if v == int(v) else "%.1fB" % v
    if n >= 1_000_000:
        v = n / 1e6
        return "%.0fM" % v if v == int(v) else "%.2fM" % v
    if n >= 1000:
        return "%.0fK" % (n / 1e3)
    return str(n)


class Server:
    """`anvil serve` on 127.0.0.1 with a free port (ANVIL_HOST port 0), its own store
    (ANVIL_MODELS) and home, no Ollama store; stderr is collected in self.log."""

    def __init__(self, anvil, workdir, extra_env=None):
        self.workdir = workdir
        self.models = os.path.join(workdir, "models")
        home = os.path.join(workdir, "home")
        os.makedirs(home, exist_ok=True)
        env = dict(os.environ)
        env.update({"ANVIL_HOST": "127.0.0.1:0", "ANVIL_MODELS": self.models, "HOME": home,
                    "OLLAMA_MODELS": os.path.join(workdir, "no-ollama-store"), "ANVIL_NUM_THREADS": "2",
                    "ANVIL_BACKEND": "cpu", "ANVIL_NUM_PARALLEL": "1", "ANVIL_CONTEXT_LENGTH": "512",
                    "ANVIL_ALLOW_PATHS": "1"})
        env.pop("ANVIL_API_KEY", None)
        if extra_env:
            env.update(extra_env)
        self.log = []
        self.proc = subprocess.Popen([anvil, "serve"], env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        self.addr = None
        deadline = time.time() + 120
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.log.append(line)
            m = re.search(r"listening on (\S+)", line)
            if m:
                self.addr = m.group(1)
                break
        if not self.addr:
            self.proc.kill()
            raise SystemExit("anvil serve did not start:\n" + "".join(self.log))
        threading.Thread(target=self._drain, daemon=True).start()
        self.url = "http://" + self.addr

    def _drain(self):
        for line in self.proc.stderr:
            self.log.append(line)

    def get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=60) as r:
            return r.status, r.read().decode()

    def stop(self):
        """SIGTERM and wait; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def manifest_hex(models_dir, name):
    """sha256 of a model's manifest file: Ollama's model ID (tags/ps digest, `list` ID)."""
    import hashlib
    tag = "latest"
    if ":" in name.rsplit("/", 1)[-1]:
        name, tag = name.rsplit(":", 1)
    parts = name.split("/")
    if len(parts) == 1:
        parts = ["registry.ollama.ai", "library"] + parts
    elif len(parts) == 2:
        parts = ["registry.ollama.ai"] + parts
    with open(os.path.join(models_dir, "manifests", *parts, tag), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def workdir(name):
    d = tempfile.mkdtemp(prefix=f"anvil-{name}-")
    return d


def cleanup(d):
    shutil.rmtree(d, ignore_errors=True)
