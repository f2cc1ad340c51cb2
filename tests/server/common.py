"""common: what the `anvil serve` tests share: a Server that starts the binary on a free
port (ANVIL_HOST=127.0.0.1:0, the real port read from its "listening on" line) with a
temporary model store, collects its stderr, and stops it with SIGTERM, checking the exit
status and that no sanitizer (ASan/LSan/UBSan) report was printed; small HTTP helpers
on the standard library; and a check() that counts failures like tests/testutil.c."""
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from checks import check, finish  # noqa: E402,F401 (re-exported to the scripts)


HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SUPPRESSIONS = os.path.join(ROOT, "tests", "lsan.supp")



class Server:
    """One `anvil serve` process. env: extra variables."""

    def __init__(self, anvil, env=None, models_dir=None):
        self.tmp = tempfile.TemporaryDirectory(prefix="anvil-serve-")
        e = dict(os.environ)
        e["HOME"] = self.tmp.name
        e["ANVIL_MODELS"] = models_dir or os.path.join(self.tmp.name, "models")
        e.pop("OLLAMA_MODELS", None)
        e["ANVIL_HOST"] = "127.0.0.1:0"
        e.setdefault("ANVIL_BACKEND", "cpu")
        e.setdefault("ANVIL_NUM_THREADS", "2")
        # The tests name their GGUF by path; the server refuses paths unless the operator
        # allows them (hardening.py starts servers without, passing ANVIL_ALLOW_PATHS=None).
        e.setdefault("ANVIL_ALLOW_PATHS", "1")
        lsan = e.get("LSAN_OPTIONS", "")
        if "suppressions" not in lsan and os.path.exists(SUPPRESSIONS):
            e["LSAN_OPTIONS"] = (lsan + ":" if lsan else "") + "suppressions=%s:print_suppressions=0" % SUPPRESSIONS
        # Full malloc stacks, as tools/test.sh sets them: tests/lsan.supp can only name
        # Mesa lavapipe's one leak (inside pthread_once) through the slow unwinder.
        asan = e.get("ASAN_OPTIONS", "detect_leaks=1")
        if "fast_unwind_on_malloc" not in asan:
            asan += ":fast_unwind_on_malloc=0"
        e["ASAN_OPTIONS"] = asan
        for k, v in (env or {}).items():
            if v is None:
                e.pop(k, None)
            else:
                e[k] = v
        self.env = e
        self.lines = []
        self.proc = subprocess.Popen([anvil, "serve"], env=e, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, errors="replace")
        self._ready = threading.Event()
        self.port = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._ready.wait(60) or self.port is None:
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError("anvil serve did not start:\n" + "".join(self.lines))
        self.base = "http://127.0.0.1:%d" % self.port
        self.host = "127.0.0.1:%d" % self.port

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line)
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
            if m and self.port is None:
                self.port = int(m.group(1))
                self._ready.set()
        self._ready.set()

    def log(self):
        return "".join(self.lines)

    def alive(self):
        return self.proc.poll() is None

    def rss_kb(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self, timeout=60):
        """SIGTERM; returns (exit status, stderr). Checks the clean exit and no sanitizer report."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
            check(False, "server did not stop within %ds of SIGTERM" % timeout)
        self._reader.join(10)
        log = self.log()
        check(rc == 0, "server exit status after SIGTERM is %s (want 0)" % rc)
        for marker in ("LeakSanitizer", "AddressSanitizer", "runtime error:", "ThreadSanitizer"):
            check(marker not in log, "no '%s' report in the server's stderr" % marker)
        if rc != 0 or any(m in log for m in ("Sanitizer", "runtime error:")):
            print(log[-6000:])
        self.tmp.cleanup()
        return rc, log


def request(server, method, path, body=None, headers=None, timeout=120):
    """One request; returns (status, headers dict (lower-case), body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    h = dict(headers or {})
    if body is not None and not isinstance(body, (bytes, str)):
        body = json.dumps(body)
        h.setdefault("Content-Type", "application/json")
    conn.request(method, path, body=body, headers=h)
    resp = conn.getresponse()
    data = resp.read()
    hdrs = {k.lower(): v for k, v in resp.getheaders()}
    conn.close()
    return resp.status, hdrs, data


def post_json(server, path, body, headers=None, timeout=120):
    status, hdrs, data = request(server, "POST", path, body, headers, timeout)
    try:
        obj = json.loads(data)
    except ValueError:
        obj = None
    return status, hdrs, obj, data


def wait_until(pred, timeout=30, step=0.05):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()
