#!/usr/bin/env python3
"""soak-serve: a soak run of `anvil serve` (not a test: a benchmark-style report).

Starts `anvil serve` on a free port with ANVIL_NUM_PARALLEL=2 and the given model, then
for --seconds (default 120) runs --clients (8) streaming /api/generate clients, each of
which disconnects at a random point in about a third of its requests, while --half-open
(500) connections sit on half-sent requests (re-opened as the server's idle timeout
closes them). Prints the legitimate requests sent / answered (complete streams, and
deliberate disconnects), and the server's RSS, open descriptors and threads (from
/proc/PID) before, at the peak and after.

  tools/bench/soak-serve.py MODEL.gguf [--anvil build/anvil] [--seconds 120] [--clients 8]
                      [--half-open 500] [--timeout 30]"""
import argparse
import json
import os
import random
import re
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def proc_stats(pid):
    rss = threads = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    fds = len(os.listdir("/proc/%d/fd" % pid))
    return {"rss_kib": rss, "fds": fds, "threads": threads}


def fmt(st):
    return "RSS %6d KiB  fds %5d  threads %3d" % (st["rss_kib"], st["fds"], st["threads"])


class Counts:
    def __init__(self):
        self.lock = threading.Lock()
        self.c = {"sent": 0, "answered": 0, "disconnected": 0, "busy": 0, "failed": 0, "half_open_opened": 0}
        self.fail_examples = []

    def add(self, k, why=None):
        with self.lock:
            self.c[k] += 1
            if why and len(self.fail_examples) < 5:
                self.fail_examples.append(why)


def stream_client(port, model, end, counts, seed):
    rnd = random.Random(seed)
    while time.time() < end:
        body = json.dumps({"model": model, "prompt": "Story %d: once upon a time" % rnd.randrange(10 ** 6),
                           "options": {"num_predict": rnd.randrange(8, 96), "seed": rnd.randrange(1000)}})
        disconnect_after = rnd.randrange(1, 12) if rnd.random() < 0.33 else None
        counts.add("sent")
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=60)
            s.sendall(("POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                       "Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)).encode())
            got = b""
            while True:
                b = s.recv(65536)
                if not b:
                    break
                got += b
                if disconnect_after is not None and got.count(b"\n") >= disconnect_after + 8:
                    break
            s.close()
        except OSError as ex:
            counts.add("failed", repr(ex))
            continue
        head = got.split(b"\r\n", 1)[0]
        if disconnect_after is not None and b" 200 " in head:
            counts.add("disconnected")
        elif b" 200 " in head and b'"done":true' in got:
            counts.add("answered")
        elif b" 503 " in head:
            counts.add("busy")
        else:
            counts.add("failed", got[:200] + b"..." + got[-200:])


def half_open(port, n, end, counts):
    socks = []
    while time.time() < end:
        socks = [s for s in socks if not closed_by_peer(s)]
        while len(socks) < n and time.time() < end:
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                s.sendall(b"POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 4096\r\n\r\n{\"mo")
                s.setblocking(False)
                socks.append(s)
                counts.add("half_open_opened")
            except OSError:
                time.sleep(0.05)
                break
        time.sleep(0.5)
    for s in socks:
        s.close()


def closed_by_peer(s):
    try:
        b = s.recv(4096)
        if b == b"":
            s.close()
            return True
        return False
    except BlockingIOError:
        return False
    except OSError:
        s.close()
        return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--anvil", default=os.path.join(ROOT, "build", "anvil"))
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--half-open", type=int, default=500)
    ap.add_argument("--timeout", type=int, default=30, help="ANVIL_HTTP_TIMEOUT for the server")
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < a.half_open + 256:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, a.half_open + 512), hard))
    model = os.path.abspath(a.model)
    tmp = tempfile.TemporaryDirectory(prefix="anvil-soak-")
    env = dict(os.environ, HOME=tmp.name, ANVIL_MODELS=os.path.join(tmp.name, "models"), ANVIL_HOST="127.0.0.1:0",
               ANVIL_NUM_PARALLEL="2", ANVIL_ALLOW_PATHS="1", ANVIL_HTTP_TIMEOUT=str(a.timeout))
    env.setdefault("ANVIL_BACKEND", "cpu")
    log = open(os.path.join(tmp.name, "serve.log"), "w+")
    proc = subprocess.Popen([a.anvil, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=log)
    port = None
    for _ in range(600):
        log.seek(0)
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", log.read())
        if m:
            port = int(m.group(1))
            break
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    if not port:
        log.seek(0)
        sys.exit("anvil serve did not start:\n" + log.read())
    # Warm up: the model is loaded before the "before" numbers.
    warm = Counts()
    stream_client(port, model, time.time() + 0.01, warm, 0)
    before = proc_stats(proc.pid)
    print("server pid %d on port %d; %d streaming clients, %d half-open connections, %.0f s, ANVIL_HTTP_TIMEOUT=%d"
          % (proc.pid, port, a.clients, a.half_open, a.seconds, a.timeout), flush=True)
    print("before: " + fmt(before), flush=True)
    counts = Counts()
    end = time.time() + a.seconds
    ts = [threading.Thread(target=stream_client, args=(port, model, end, counts, i + 1)) for i in range(a.clients)]
    ts.append(threading.Thread(target=half_open, args=(port, a.half_open, end, counts)))
    for t in ts:
        t.start()
    peak = dict(before)
    while any(t.is_alive() for t in ts):
        time.sleep(1)
        if proc.poll() is not None:
            break
        st = proc_stats(proc.pid)
        peak = {k: max(peak[k], st[k]) for k in st}
    for t in ts:
        t.join()
    time.sleep(1.0)
    alive = proc.poll() is None
    after = proc_stats(proc.pid) if alive else None
    print("peak:   " + fmt(peak))
    print("after:  " + (fmt(after) if after else "server DIED (exit %s)" % proc.returncode))
    c = counts.c
    print("legitimate requests: sent %d, answered %d (complete streams) + %d deliberate disconnects, "
          "503 busy %d, failed %d" % (c["sent"], c["answered"], c["disconnected"], c["busy"], c["failed"]))
    print("half-open connections opened: %d" % c["half_open_opened"])
    for ex in counts.fail_examples:
        print("  failure: %r" % (ex,))
    if alive:
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(60)
        print("server exit status after SIGTERM: %d" % rc)
    log.seek(0)
    text = log.read()
    print("server log: %d request lines, %d aborted" % (text.count(" status="), text.count("aborted=true")))
    ok = alive and c["failed"] == 0 and c["answered"] > 0
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
