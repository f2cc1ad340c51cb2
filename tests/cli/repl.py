#!/usr/bin/env python3
"""repl: `anvil run MODEL`'s interactive chat as Ollama users know it (issue 31), driven
through a pseudo-terminal with pexpect, in this process (--local) and through a running
`anvil serve`. Each command's effect is observed:
- an unknown /command is answered "Unknown command '/foo'. Type /? for help" and never
  reaches the model (no reply, no eval count under /set verbose);
- /set parameter num_predict 3 + /set verbose: a 3-token reply, its eval count printed;
- /set parameter num_ctx: a new context (a prompt longer than it fails with an error and
  the chat goes on; a larger num_ctx takes it);
- /set system (one line, and between \"\"\" lines) changes /show system;
- /save NAME: `anvil show NAME --modelfile` has the session's SYSTEM, PARAMETERs and
  MESSAGEs; /load NAME switches (its SYSTEM, nothing of the old conversation);
  /load of a missing model keeps the old one;
- /? and its topics, /set format json, /set think, /exit, Ctrl+D;
- with libedit: arrow-up recalls the last line, the lines go to ~/.anvil/history
  (ANVIL_NOHISTORY: not written); Ctrl+C at an empty prompt says how to leave;
- Ctrl+C during a long reply stops it (the partial reply is not kept, the user's message
  is, as Ollama) and the next prompt still works.

usage: repl.py ANVIL_BINARY MODEL.gguf
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
from common import Server, check, finish  # noqa: E402

try:
    import pexpect
except ImportError:
    print("SKIP: python pexpect is not installed (tools/install-deps.sh installs it)")
    sys.exit(0)

anvil, model = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
tmp = tempfile.mkdtemp(prefix="anvil-repl-")
PROMPT = ">>> "
T = float(os.environ.get("REPL_TEST_TIMEOUT", "60"))   # seconds per expected output (shorter: checking old binaries)
LONG = "count to one thousand"


def base_env(home, extra=None):
    # no ANVIL_HOST: the in-process runs say --local; with it (extra), the CLI uses that server
    e = dict(os.environ, HOME=home, ANVIL_MODELS=os.path.join(home, "store"), ANVIL_BACKEND="cpu", TERM="xterm")
    for k in ("OLLAMA_MODELS", "OLLAMA_HOST", "ANVIL_HOST", "ANVIL_NOHISTORY", "OLLAMA_NOHISTORY"):
        e.pop(k, None)
    e.update(extra or {})
    return e


def anvil_cli(args, env):
    return subprocess.run([anvil] + args, capture_output=True, text=True, env=env, timeout=120)


class Chat:
    """One `anvil run` session on a pty; every step waits for its output, then the prompt."""

    def __init__(self, label, args, env):
        self.label = label
        self.p = pexpect.spawn(anvil, ["run"] + args, env=env, encoding="utf-8", codec_errors="replace",
                               timeout=60, dimensions=(50, 200))
        self.ok = self.wait(PROMPT, "starts with the prompt") is not None

    def wait(self, pattern, what, timeout=T):
        """Waits for pattern (a regex); returns the text before it, or None after a FAIL."""
        try:
            self.p.expect(pattern, timeout=timeout or T)
            return self.p.before
        except (pexpect.TIMEOUT, pexpect.EOF) as e:
            check(False, "%s: %s" % (self.label, what),
                  "%s; the output ended with: %r" % (type(e).__name__, (self.p.before or "")[-800:]))
            return None

    def step(self, line, pattern, what, timeout=T):
        """Sends a line; waits for pattern then the next prompt. Returns (before pattern, after it)."""
        self.p.sendline(line)
        before = self.wait(pattern, what, timeout)
        if before is None:
            return None, None
        matched = self.p.after
        after = self.wait(PROMPT, what + " (then the prompt)", timeout)
        return before + matched, after

    def close(self):
        self.p.sendline("/bye")
        try:
            self.p.expect(pexpect.EOF, timeout=30)
        except pexpect.TIMEOUT:
            self.p.terminate(force=True)
        self.p.close()
        return self.p.exitstatus


def eval_count(text):
    m = re.search(r"(?<!prompt )eval count:\s+(\d+) token", text or "")
    return int(m.group(1)) if m else None


def session_commands(label, args, env, remote):
    """The commands every path has; /save checked with `anvil show` in env's store."""
    c = Chat(label, args, env)
    if not c.ok:
        return
    # an unknown command is answered and not sent to the model
    c.step("/set verbose", re.escape("Set 'verbose' mode."), "/set verbose")
    out, after = c.step("/foo bar", re.escape("Unknown command '/foo'. Type /? for help"), "/foo is an unknown command")
    check(out is not None and "eval count" not in (out or "") + (after or ""),
          "%s: /foo is not sent to the model (no reply, no eval count)" % label, repr(out))
    # num_predict 3: a 3-token reply
    c.step("/set parameter num_predict 3", re.escape("Set parameter 'num_predict' to '3'"), "/set parameter num_predict")
    out, _ = c.step("hello there", r"(?<!prompt )eval count:\s+\d+ token", "a reply with verbose timings")
    check(eval_count(out) == 3, "%s: /set parameter num_predict 3 gives a 3-token reply (eval count %s)"
          % (label, eval_count(out)), repr(out))
    # /set system, /show system
    out, _ = c.step("/show system", r"No system message was specified for this model\.", "/show system before")
    c.step("/set system You are Zörblax the quiet.", re.escape("Set system message."), "/set system")
    out, _ = c.step("/show system", re.escape("You are Zörblax the quiet."), "/show system has the new system (UTF-8 typed)")
    c.p.sendline('/set system """You are Zorblax.')
    c.wait(r"\.\.\. ", 'a multi-line /set system waits for """')
    c.step('Second line."""', re.escape("Set system message."), "multi-line /set system ends")
    out, _ = c.step("/show system", r"You are Zorblax\.\r?\nSecond line\.", "/show system has both lines")
    # parameters and the other /set commands
    c.step("/set parameter temperature 0.25", re.escape("Set parameter 'temperature' to '0.25'"), "/set parameter temperature")
    c.step("/set parameter stop zz yy", re.escape("Set parameter 'stop' to 'zz, yy'"), "/set parameter stop (several)")
    c.step("/set parameter bogus 1", r"Couldn't set parameter: \".*bogus", "an unknown parameter is refused")
    out, _ = c.step("/show parameters", r"User defined parameters:", "/show parameters")
    c.step("/set think", re.escape("Set 'think' mode."), "/set think")
    c.step("/set think high", re.escape("Set 'think' mode to 'high'."), "/set think high")
    c.step("/set nothink", re.escape("Set 'nothink' mode."), "/set nothink")
    c.step("/set nowordwrap", re.escape("Set 'nowordwrap' mode."), "/set nowordwrap")
    c.step("/set format xml", re.escape("Invalid or missing format. For 'json' mode use '/set format json'"),
           "/set format needs json")
    c.step("/set format json", re.escape("Set format to 'json' mode."), "/set format json")
    c.step("/set parameter num_predict 12", re.escape("Set parameter 'num_predict' to '12'"), "num_predict 12")
    out, _ = c.step("give me json", r"total duration", "a reply in JSON mode")
    reply = (out or "").split("give me json", 1)[-1].split("total duration")[0].strip()
    check(reply.startswith("{"), "%s: /set format json: the reply is a JSON object (%r)" % (label, reply), repr(out))
    c.step("/set noformat", re.escape("Disabled format."), "/set noformat")
    c.step("/set parameter num_predict 3", re.escape("Set parameter 'num_predict' to '3'"), "num_predict 3 again")
    c.step("/set quiet", re.escape("Set 'quiet' mode."), "/set quiet")
    c.step("/set bogus", re.escape("Unknown command '/set bogus'. Type /? for help"), "/set bogus")
    c.step("/show bogus", re.escape("Unknown command '/show bogus'. Type /? for help"), "/show bogus")
    c.step("/show template", r"start_of_turn|\{\{", "/show template")
    c.step("/show license", r"No license was specified for this model\.", "/show license")
    c.step("/show modelfile", r"SYSTEM", "/show modelfile")
    c.step("/show info", r"architecture\s+gemma3", "/show info")
    # help
    c.step("/?", r"Available Commands:[\s\S]*/bye\s+Exit", "/? lists the commands")
    c.step("/? set", r"/set parameter \.\.\.\s+Set a parameter", "/? set")
    c.step("/help show", r"/show modelfile\s+Show Modelfile", "/help show")
    c.step("/? shortcuts", r"Ctrl \+ c\s+Stop the model from responding", "/? shortcuts")
    # /save: the session as a store model
    c.step("/save -bad", r"error: The model name '-bad' is invalid", "/save refuses a bad name")
    c.step("/save zorb", re.escape("Created new model 'zorb'"), "/save zorb")
    show = anvil_cli(["show", "zorb", "--modelfile"], env)
    mf = show.stdout
    check(show.returncode == 0 and "You are Zorblax.\nSecond line." in mf, "%s: /save: the Modelfile has the SYSTEM" % label,
          show.stderr + mf)
    check(re.search(r"PARAMETER num_predict 3\b", mf) and re.search(r"PARAMETER temperature 0\.25\b", mf)
          and re.search(r'PARAMETER stop "?zz"?', mf) and re.search(r'PARAMETER stop "?yy"?', mf),
          "%s: /save: the Modelfile has the PARAMETERs" % label, mf)
    check(re.search(r"MESSAGE user .*hello there", mf) and re.search(r"MESSAGE assistant", mf),
          "%s: /save: the Modelfile has the conversation's MESSAGEs" % label, mf)
    # /load: another model (its SYSTEM), nothing of the old conversation
    c.step("/load no-such-model", re.escape("Couldn't find model 'no-such-model'"), "/load of a missing model")
    c.step("/clear", re.escape("Cleared session context"), "/clear")
    c.step("/save zorb2", re.escape("Created new model 'zorb2'"), "/save after /clear")
    mf2 = anvil_cli(["show", "zorb2", "--modelfile"], env).stdout
    check("FROM" in mf2 and "MESSAGE" not in mf2, "%s: /clear forgets the conversation" % label, mf2)
    status = c.close()
    check(status == 0, "%s: /bye exits 0 (%s)" % (label, status))

    # a fresh session: /load switches to the saved model with its system and messages gone
    c = Chat(label + " /load", args, env)
    if not c.ok:
        return
    c.step("/set parameter num_predict 3", re.escape("Set parameter 'num_predict' to '3'"), "num_predict 3")
    c.step("hi", r"\r\n\r\n", "a first turn")
    c.step("/load other", re.escape("Loading model 'other'"), "/load other")
    out, _ = c.step("/show system", re.escape("I am the other model."), "/load: the other model's SYSTEM applies")
    c.step("/save loaded", re.escape("Created new model 'loaded'"), "/save after /load")
    mf3 = anvil_cli(["show", "loaded", "--modelfile"], env).stdout
    check("I am the other model." in mf3 and "MESSAGE user hi" not in mf3,
          "%s: /load keeps nothing of the old conversation" % label, mf3)
    c.p.sendline("/exit")
    try:
        c.p.expect(pexpect.EOF, timeout=30)
        c.p.close()
        check(c.p.exitstatus == 0, "%s: /exit exits 0" % label)
    except pexpect.TIMEOUT:
        check(False, "%s: /exit exits" % label, repr(c.p.before))
        c.p.terminate(force=True)


def full_reply_tokens(args, env):
    """The greedy reply to LONG, whole (one-shot): how long the interrupted one would be."""
    p = anvil_cli(["run"] + args[:1] + [LONG] + args[1:] + ["--verbose"], env)
    check(p.returncode == 0, "%s: the one-shot run of %r" % (args, LONG), p.stderr[-2000:])
    return eval_count(p.stderr), p.stdout


def session_ctrl_c(label, args, env):
    full, full_text = full_reply_tokens(args, env)
    check(full is not None and full > 500, "%s: the greedy reply to %r is long (%s tokens)" % (label, LONG, full))
    c = Chat(label + " Ctrl+C", args, env)
    if not c.ok:
        return
    # Ctrl+C at an empty prompt: how to leave, and the chat goes on
    c.p.sendcontrol("c")
    c.wait(re.escape("Use Ctrl + d or /bye to exit."), "Ctrl+C at the prompt says how to leave")
    c.wait(PROMPT, "the prompt after Ctrl+C")
    # Ctrl+C during a long reply: stopped, the prompt comes back at once
    c.p.sendline(LONG)
    c.wait(re.escape(LONG) + r"\r\n.{8}", "the long reply starts")
    t0 = time.time()
    c.p.sendcontrol("c")
    partial = c.wait(PROMPT, "Ctrl+C stops the reply and the prompt comes back", timeout=30)
    check(partial is not None and len(partial) < len(full_text) / 2,
          "%s: the reply stopped early (%d of %d characters, %.1f s)" % (label, len(partial or ""), len(full_text),
                                                                       time.time() - t0))
    c.step("/set verbose", re.escape("Set 'verbose' mode."), "/set verbose after Ctrl+C")
    c.step("/set parameter num_predict 3", re.escape("Set parameter 'num_predict' to '3'"), "num_predict after Ctrl+C")
    out, _ = c.step("and now?", r"(?<!prompt )eval count:\s+\d+ token", "a reply after Ctrl+C")
    check(eval_count(out) == 3, "%s: the next prompt still works (eval count %s)" % (label, eval_count(out)), repr(out))
    c.step("/save afterc", re.escape("Created new model 'afterc'"), "/save after Ctrl+C")
    mf = anvil_cli(["show", "afterc", "--modelfile"], env).stdout
    msgs = re.findall(r"^MESSAGE (\w+) (.*)$", mf, re.M)
    check([r for r, _ in msgs] == ["user", "user", "assistant"] and LONG in msgs[0][1],
          "%s: the stopped reply is dropped, the user's message kept (as Ollama)" % label, mf)
    # Ctrl+D at an empty prompt exits
    c.p.sendcontrol("d")
    try:
        c.p.expect(pexpect.EOF, timeout=30)
        c.p.close()
        check(c.p.exitstatus == 0, "%s: Ctrl+D exits 0 (%s)" % (label, c.p.exitstatus))
    except pexpect.TIMEOUT:
        check(False, "%s: Ctrl+D exits" % label, repr(c.p.before))
        c.p.terminate(force=True)


def session_history(label, args, env, home):
    """Arrow-up recalls the last line; the lines are written to ~/.anvil/history."""
    c = Chat(label + " history", args, env)
    if not c.ok:
        return
    if "built without libedit" in anvil_cli(["run", "--help"], env).stdout:
        check(True, "%s: this build reads plain lines (no libedit): no history to test" % label)
        c.close()
        return
    c.step("/set parameter seed 41", re.escape("Set parameter 'seed' to '41'"), "seed 41")
    c.step("/set parameter seed 42", re.escape("Set parameter 'seed' to '42'"), "seed 42")
    c.p.send("\x1b[A")   # arrow up, then Enter: the last line again
    c.p.send("\r")
    out = c.wait(re.escape("Set parameter 'seed' to '42'"), "arrow-up + Enter runs the last line again")
    c.wait(PROMPT, "the prompt after the recalled line")
    c.p.send("\x1b[A\x1b[A\r")   # twice: the line before it
    c.wait(re.escape("Set parameter 'seed' to '41'"), "arrow-up twice recalls the line before")
    c.wait(PROMPT, "the prompt after it")
    c.p.sendline("/set nohistory")   # Ollama prints nothing for it
    c.wait(PROMPT, "/set nohistory")
    c.step("/set parameter seed 55", re.escape("Set parameter 'seed' to '55'"), "seed 55 (not saved)")
    c.close()
    path = os.path.join(home, ".anvil", "history")
    # libedit's file format: a _HiStOrY_V2_ line, then each line strvis-encoded (a space is \\040)
    text = open(path).read().replace("\\040", " ") if os.path.exists(path) else ""
    check("seed 42" in text and "seed 41" in text, "%s: the lines are in ~/.anvil/history" % label, text)
    check("seed 55" not in text, "%s: /set nohistory: the lines after it are not written" % label, text)
    # ANVIL_NOHISTORY: nothing written (the file stays as it was)
    env2 = dict(env, ANVIL_NOHISTORY="1")
    c = Chat(label + " nohistory", args, env2)
    if c.ok:
        c.step("/set parameter seed 77", re.escape("Set parameter 'seed' to '77'"), "seed 77")
        c.close()
    text = open(path).read().replace("\\040", " ") if os.path.exists(path) else ""
    check("seed 77" not in text, "%s: ANVIL_NOHISTORY: the line is not written" % label, text)


def make_other(env):
    """A store model with a SYSTEM of its own, for /load."""
    mdir = os.path.join(env["HOME"], "mf")
    os.makedirs(mdir, exist_ok=True)
    with open(os.path.join(mdir, "Modelfile"), "w") as f:
        f.write("FROM %s\nSYSTEM I am the other model.\n" % model)
    p = anvil_cli(["create", "other", "-f", os.path.join(mdir, "Modelfile")], env)
    check(p.returncode == 0, "the /load target model is created", p.stderr)


PART = os.environ.get("REPL_TEST_PART", "")   # "local" or "remote": one half (while debugging)

# ---- in this process ----
home = os.path.join(tmp, "local")
os.makedirs(home)
env = base_env(home)
make_other(env)
if PART != "remote":
    session_commands("local", [model, "--local", "--temp", "0"], env, False)
# num_ctx makes a new context: a prompt longer than it fails (the chat goes on), a larger one takes it
c = Chat("local num_ctx", [model, "--local", "--temp", "0", "-n", "3"], env) if PART != "remote" else None
if c and c.ok:
    words = " ".join("word%d" % i for i in range(80))
    c.step("/set parameter num_ctx 64", re.escape("Set parameter 'num_ctx' to '64'"), "num_ctx 64")
    c.step(words, r"error: .*context", "a prompt longer than num_ctx 64 is refused with an error")
    c.step("/set parameter num_ctx 2048", re.escape("Set parameter 'num_ctx' to '2048'"), "num_ctx 2048")
    c.step("/set verbose", re.escape("Set 'verbose' mode."), "verbose")
    out, _ = c.step(words, r"prompt eval count:\s+\d+", "the same prompt fits num_ctx 2048")
    check(out is not None and "error" not in out, "local: num_ctx 2048 takes the prompt", repr(out))
    check(c.close() == 0, "local num_ctx: exits 0")
if PART != "remote":
    session_ctrl_c("local", [model, "--local", "--temp", "0", "-t", "1", "--ctx", "8192"], env)
    session_history("local", [model, "--local", "--temp", "0", "-n", "3"], env, home)

# ---- through a running server ----
def run_remote_sessions(srv, renv):
    make_other(renv)
    session_commands("remote", [model, "--temp", "0"], renv, True)
    session_ctrl_c("remote", [model, "--temp", "0", "--ctx", "8192"], renv)
    check(srv.alive(), "remote: the server is still up after the cancelled reply")


if PART != "local":
    shome = os.path.join(tmp, "remote")
    os.makedirs(shome)
    srv = Server(anvil, env={"HOME": shome, "ANVIL_NUM_THREADS": "1"}, models_dir=os.path.join(shome, "store"))
    try:
        run_remote_sessions(srv, base_env(shome, {"ANVIL_HOST": srv.host}))
    finally:
        srv.stop()
shutil.rmtree(tmp, ignore_errors=True)
finish()
