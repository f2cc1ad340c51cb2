"""run_client: `anvil run` as a client of a running `anvil serve` (ANVIL_HOST): one-shot
and interactive chats give exactly the text the in-process run (--local) gives with greedy
sampling, the requests show up in the server's log (/api/chat, /api/generate for --raw),
the model stays loaded (`anvil ps`), the model's PARAMETERs apply on the server side
(num_predict from the Modelfile), and a flag only the in-process path has (--kv-type)
keeps the run local. Usage: run_client.py ANVIL MODEL.gguf"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import check  # noqa: E402

anvil, gguf = sys.argv[1], os.path.abspath(sys.argv[2])
srv = common.Server(anvil)
env = dict(srv.env)
env["ANVIL_HOST"] = srv.host


def run(*args, stdin=None):
    p = subprocess.run([anvil, "run", *args], env=env, input=stdin, capture_output=True, text=True, timeout=300)
    return p


try:
    mf = os.path.join(srv.tmp.name, "Modelfile")
    with open(mf, "w") as f:
        f.write("FROM %s\nPARAMETER num_predict 5\nPARAMETER temperature 0\n" % gguf)
    p = subprocess.run([anvil, "create", "tiny:run", "-f", mf], env=env, capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, "create tiny:run: %s" % p.stderr[-500:])

    n_chat = srv.log().count('path="/api/chat"')
    remote = run("tiny:run", "Hello there", "-n", "12", "--temp", "0", "--verbose")
    local = run("tiny:run", "Hello there", "-n", "12", "--temp", "0", "--local")
    check(remote.returncode == 0 and local.returncode == 0, "both runs succeed: %s %s" % (remote.stderr[-300:], local.stderr[-300:]))
    check(remote.stdout == local.stdout and len(remote.stdout.strip()) > 0,
          "one-shot: server text == in-process text (%r vs %r)" % (remote.stdout, local.stdout))
    check(srv.log().count('path="/api/chat"') == n_chat + 1, "one-shot went through /api/chat")
    check("using the running anvil server" in remote.stderr and "eval count:           12 token(s)" in remote.stderr,
          "--verbose names the server and prints the server's statistics: %s" % remote.stderr[-800:])

    # the Modelfile's num_predict (5) applies on the server side
    five = run("tiny:run", "Hello there", "--verbose")
    check("eval count:           5 token(s)" in five.stderr, "the model's num_predict applies through the server: %s"
          % five.stderr[-400:])

    raw_remote = run("tiny:run", "abc", "--raw", "-n", "6", "--temp", "0")
    raw_local = run("tiny:run", "abc", "--raw", "-n", "6", "--temp", "0", "--local")
    check(raw_remote.stdout == raw_local.stdout, "--raw: same text (%r vs %r)" % (raw_remote.stdout, raw_local.stdout))
    check('path="/api/generate"' in srv.log(), "--raw went through /api/generate")

    convo = "Hello\nAnd again\n/bye\n"
    i_remote = run("tiny:run", "-i", "-n", "6", "--temp", "0", stdin=convo)
    i_local = run("tiny:run", "-i", "-n", "6", "--temp", "0", "--local", stdin=convo)
    check(i_remote.returncode == 0 and i_remote.stdout == i_local.stdout,
          "interactive: two turns, same text (%r vs %r)" % (i_remote.stdout, i_local.stdout))

    n_req = srv.log().count("method=POST")
    kv = run("tiny:run", "Hello there", "-n", "3", "--temp", "0", "--kv-type", "f32")
    check(kv.returncode == 0 and srv.log().count("method=POST") == n_req, "--kv-type keeps the run in this process")

    ps = subprocess.run([anvil, "ps"], env=env, capture_output=True, text=True, timeout=60)
    check("tiny:run" in ps.stdout, "the model stays loaded in the server: %s" % ps.stdout)
finally:
    srv.stop()
common.finish()
