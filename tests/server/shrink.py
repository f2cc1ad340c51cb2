#!/usr/bin/env python3
"""shrink: a loaded model's GGUF truncated in place must not kill `anvil serve` (SIGBUS on the
lost pages of the mapping). The next request finds the file shorter than its mapping (one fstat
at admission), the model is unloaded and reloaded, and the still-short file is a clean error;
the server keeps answering, and once the file is whole again the model loads and generates.

usage: shrink.py ANVIL_BINARY MODEL.gguf
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Server, check, finish, post_json, request  # noqa: E402

anvil, model = sys.argv[1], os.path.abspath(sys.argv[2])
work = tempfile.mkdtemp(prefix="anvil-shrink-")
copy = os.path.join(work, "m.gguf")
shutil.copy(model, copy)
whole = open(copy, "rb").read()
GEN = {"model": copy, "prompt": "hi", "stream": False, "options": {"num_predict": 4, "temperature": 0}}



def gen():
    try:
        return post_json(srv, "/api/generate", GEN)
    except OSError as e:  # the server died (SIGBUS) mid-request
        return 0, None, None, repr(e).encode()


srv = Server(anvil, env={"ANVIL_NUM_PARALLEL": "1", "ANVIL_KEEP_ALIVE": "10m"})
try:
    st, _, o, raw = gen()
    check(st == 200 and o and o.get("done"), "the model loads and generates (%d %r)" % (st, raw[:200]))
    first = o.get("response") if o else None
    os.truncate(copy, len(whole) // 2)  # in place: the same inode the server has mapped
    st, _, o, raw = gen()
    check(srv.alive(), "the server survives a request after its model file was truncated")
    check(st == 500 and b"past end of file" in raw, "that request is a clean error (%d %r)" % (st, raw[:300]))
    check("shrank" in srv.log() and "unloading it" in srv.log(), "the log says the file shrank and the model is unloaded")
    try:
        st = request(srv, "GET", "/api/version")[0]
    except OSError:
        st = 0
    check(st == 200, "the server keeps answering (%d)" % st)
    with open(copy, "r+b") as f:  # whole again
        f.write(whole)
    st, _, o, raw = gen()
    check(st == 200 and o and o.get("response") == first, "the restored file loads and gives the same text (%d %r)" % (st, raw[:200]))
finally:
    if srv.alive():
        srv.stop()
    else:
        check(False, "server died (exit status %s): %s" % (srv.proc.returncode, srv.log()[-1000:]))
    shutil.rmtree(work, ignore_errors=True)
finish()
