#!/usr/bin/env python3
"""agent_apis: the agent APIs of `anvil serve` driven by the official SDKs: Anthropic's
Messages API (/v1/messages, /v1/messages/count_tokens) through the `anthropic` package and
OpenAI's Responses API (/v1/responses) through the `openai` package, plus the raw SSE
framing (event names, order, sequence numbers) and error bodies with the standard library.

Deterministic where it must be: a tiny random qwen3 model (Qwen 3 template: tools and
<think>) under ANVIL_TEST_REPLAY, so each reply is a fixed text the parsers see exactly as
a Qwen 3 model would say it; a tiny gemma3 model sampled greedily for what replay cannot
show (the json_schema grammar, a streamed reply equal to the whole one).

Checked:
- messages.create with tools: thinking and tool_use blocks (id toolu_..., input the parsed
  object), stop_reason tool_use, usage; the same through messages.stream (the SDK's own
  accumulation) and the raw event sequence (message_start, ping, content_block_start /
  delta / stop with thinking_delta and input_json_delta, message_delta, message_stop, each
  "event:" line naming its data's type); the round trip tool_use -> tool_result (and an
  is_error result) -> answer; system as a string and as text blocks (count_tokens: the same
  prompt, longer than without); count_tokens equal to a create's input + cache-read tokens;
  stop reasons end_turn, max_tokens (output_tokens = max_tokens), stop_sequence with the
  stop_sequence that matched (whole and streamed); thinking enabled / disabled; errors as
  Anthropic's envelope with the right status: bad JSON, missing max_tokens, unknown model
  (NotFoundError), an image block, a bad role, an unknown route, a bad key (x-api-key
  accepted, like Bearer);
- responses.create with tools: reasoning and function_call items (call_id, arguments JSON
  text), the stream through responses.stream (the SDK validates item identities) and the
  raw events (response.created first, sequence numbers 0.., function_call_arguments delta
  and done, response.completed last); the round trip function_call -> function_call_output;
  instructions; Codex's tools (a namespace's members, web_search left out, other server tools a
  400); include reasoning.encrypted_content (taken back as input); max_output_tokens -> status incomplete (response.incomplete streamed);
  reasoning.effort none; previous_response_id a 400; text.format json_schema output that
  validates against the schema;
- a field of the wrong type is a 400 naming it; 240 seeded random mutations of valid requests
  (both APIs, some streamed) answer 200 or a 4xx with a well-formed body, the server alive;
- Claude Code itself, when a `claude` binary is found (ANVIL_TEST_CLAUDE or PATH; the npm
  package @anthropic-ai/claude-code, not installed by tools/install-deps.sh, so skipped with
  a message otherwise): `claude -p` with only its Bash tool against the server, the replayed
  reply a Bash call that writes a file; the file must appear (Claude Code ran the tool_use)
  and a second request must carry its tool_result.

  agent_apis.py ANVIL WORKDIR"""
import copy
import json
import os
import random
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Server, check, finish, post_json, request  # noqa: E402

import anthropic  # noqa: E402
import jsonschema  # noqa: E402
import openai  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CALL_REPLY = ('<think>\nThe user wants the weather.\n</think>\n\n<tool_call>\n'
              '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>')
TEXT_REPLY = '<think>ok</think>\n\nHello world. END more text'
SCHEMA = {"type": "object", "properties": {"color": {"type": "string", "enum": ["red", "green", "blue"]},
                                           "ok": {"type": "boolean"}},
          "required": ["color", "ok"]}
AN_TOOL = {"name": "get_weather", "description": "Current weather in a city",
           "input_schema": {"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}}}
RS_TOOL = {"type": "function", "name": "get_weather", "description": "Current weather in a city",
           "parameters": AN_TOOL["input_schema"]}
ASK = [{"role": "user", "content": "Weather in Paris?"}]


def make(work, family, template=None):
    out = os.path.join(work, "%s-%s.gguf" % (family, template or "default"))
    cmd = [sys.executable, os.path.join(ROOT, "tools", "make_test_model.py"), "--family", family, "--preset", "tiny",
           "--type", "q8_0", "--out", out, "--if-changed"]
    if template:
        cmd += ["--chat-template", template]
    subprocess.run(cmd, check=True, capture_output=True)
    return out


def sse_events(raw):
    """[(event name, data object)] of an SSE body."""
    out = []
    for block in raw.decode().split("\n\n"):
        name, data = None, None
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
        if data is not None:
            out.append((name, data))
    return out


def anthropic_tools(srv, model):
    cl = anthropic.Anthropic(base_url=srv.base, api_key="unused")
    r = cl.messages.create(model=model, max_tokens=200, messages=ASK, tools=[AN_TOOL])
    kinds = [b.type for b in r.content]
    check(r.id.startswith("msg_") and r.type == "message" and r.role == "assistant" and r.model == model,
          "messages: id msg_..., type message, role assistant, the model (%r %r)" % (r.id, r.model))
    check(kinds == ["thinking", "tool_use"], "messages: a thinking block, then a tool_use block (%r)" % kinds)
    use = r.content[-1]
    check(use.id.startswith("toolu_") and use.name == "get_weather" and use.input == {"city": "Paris"},
          "messages: tool_use id toolu_..., name, input the parsed object (%r)" % use)
    check(r.content[0].thinking == "The user wants the weather.\n", "messages: the thinking text (%r)" % r.content[0])
    check(r.stop_reason == "tool_use" and r.stop_sequence is None, "messages: stop_reason tool_use (%r)" % r.stop_reason)
    check(r.usage.input_tokens + (r.usage.cache_read_input_tokens or 0) > 0 and r.usage.output_tokens > 0,
          "messages: usage input and output tokens (%r)" % r.usage)

    with cl.messages.stream(model=model, max_tokens=200, messages=ASK, tools=[AN_TOOL]) as s:
        m = s.get_final_message()
    check([b.type for b in m.content] == kinds and m.content[-1].input == {"city": "Paris"} and
          m.content[0].thinking == r.content[0].thinking and m.stop_reason == "tool_use" and
          m.usage.output_tokens == r.usage.output_tokens,
          "messages.stream: the SDK accumulates the same message (%r)" % m)
    total = m.usage.input_tokens + (m.usage.cache_read_input_tokens or 0)
    check(total == r.usage.input_tokens + (r.usage.cache_read_input_tokens or 0),
          "messages.stream: input + cache-read tokens equal the whole reply's (%r)" % m.usage)

    # the raw event sequence
    st, hdrs, raw = request(srv, "POST", "/v1/messages", {"model": model, "max_tokens": 200, "messages": ASK,
                                                          "tools": [AN_TOOL], "stream": True})
    ev = sse_events(raw)
    names = [n for n, _ in ev]
    check(st == 200 and hdrs.get("content-type", "").startswith("text/event-stream"), "stream: 200 text/event-stream")
    check(all(n == d.get("type") for n, d in ev), "stream: every event line names its data's type")
    squeezed = [n for i, n in enumerate(names) if i == 0 or n != names[i - 1] or n != "content_block_delta"]
    want = ["message_start", "ping", "content_block_start", "content_block_delta", "content_block_stop",
            "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"]
    check(squeezed == want, "stream: the event order of a thinking block then a tool_use block (%r)" % squeezed)
    deltas = [d["delta"]["type"] for n, d in ev if n == "content_block_delta"]
    check(set(deltas) == {"thinking_delta", "input_json_delta"}, "stream: thinking_delta and input_json_delta (%r)" % deltas)
    starts = [d for n, d in ev if n == "content_block_start"]
    check([s["index"] for s in starts] == [0, 1] and starts[1]["content_block"]["input"] == {},
          "stream: block indexes 0, 1; tool_use starts with input {} (%r)" % starts)
    md = [d for n, d in ev if n == "message_delta"][0]
    check(md["delta"]["stop_reason"] == "tool_use" and md["usage"]["output_tokens"] > 0,
          "stream: message_delta stop_reason tool_use and usage (%r)" % md)
    check(not raw.rstrip().endswith(b"[DONE]"), "stream: no OpenAI [DONE] line")

    # the round trip: the tool_use and its result go back, an error result too
    back = ASK + [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in r.content]},
                  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "18C and sunny"}]}]
    r2 = cl.messages.create(model=model, max_tokens=200, messages=back, tools=[AN_TOOL])
    check(r2.stop_reason == "tool_use" and r2.usage.output_tokens > 0, "round trip: the tool_result is answered (%r)" % r2)
    n_plain = cl.messages.count_tokens(model=model, messages=back, tools=[AN_TOOL]).input_tokens
    err = [dict(back[-1]["content"][0], is_error=True)]
    n_err = cl.messages.count_tokens(model=model, messages=back[:-1] + [{"role": "user", "content": err}],
                                     tools=[AN_TOOL]).input_tokens
    n_before = cl.messages.count_tokens(model=model, messages=ASK, tools=[AN_TOOL]).input_tokens
    check(n_plain > n_before and n_err > n_plain,
          "round trip: the call and result reach the prompt; is_error adds to it (%d < %d < %d)" % (n_before, n_plain, n_err))
    blocks = [{"type": "tool_result", "tool_use_id": use.id, "content": [{"type": "text", "text": "18C and sunny"}]}]
    n_blocks = cl.messages.count_tokens(model=model, messages=back[:-1] + [{"role": "user", "content": blocks}],
                                        tools=[AN_TOOL]).input_tokens
    check(n_blocks == n_plain, "round trip: a tool_result's text blocks render as its string (%d, %d)" % (n_blocks, n_plain))

    # system: a string and text blocks are the same prompt; count_tokens matches a reply's usage
    n_sys = cl.messages.count_tokens(model=model, messages=ASK, system="Be brief.").input_tokens
    n_sys_blocks = cl.messages.count_tokens(model=model, messages=ASK,
                                            system=[{"type": "text", "text": "Be brief."}]).input_tokens
    n_none = cl.messages.count_tokens(model=model, messages=ASK).input_tokens
    check(n_sys == n_sys_blocks > n_none, "system: a string and text blocks count the same, more than none (%d %d %d)"
          % (n_sys, n_sys_blocks, n_none))
    n_sys_msg = cl.messages.count_tokens(model=model, messages=[{"role": "system", "content": "Be brief."}] + ASK).input_tokens
    check(n_sys_msg == n_sys, "a role system message (Claude Code sends them) is the system turn (%d, %d)" % (n_sys_msg, n_sys))
    r3 = cl.messages.create(model=model, max_tokens=200, messages=ASK, system="Be brief.")
    check(r3.usage.input_tokens + r3.usage.cache_read_input_tokens == n_sys,
          "count_tokens equals a reply's input + cache-read tokens (%d, %r)" % (n_sys, r3.usage))
    r4 = cl.messages.create(model=model, max_tokens=200, messages=ASK, tools=[AN_TOOL], tool_choice={"type": "none"})
    check(not any(b.type == "tool_use" for b in r4.content) and r4.stop_reason == "end_turn",
          "tool_choice none: no tools offered, the call stays text (%r)" % r4.content)


def anthropic_text(srv, model):
    cl = anthropic.Anthropic(base_url=srv.base, api_key="unused")
    r = cl.messages.create(model=model, max_tokens=200, messages=ASK)
    check([b.type for b in r.content] == ["thinking", "text"] and r.content[1].text == "Hello world. END more text" and
          r.stop_reason == "end_turn" and r.stop_sequence is None,
          "end_turn: thinking and text blocks (%r)" % r)
    r = cl.messages.create(model=model, max_tokens=200, messages=ASK, stop_sequences=["NEVER", "END"])
    check(r.stop_reason == "stop_sequence" and r.stop_sequence == "END" and r.content[-1].text == "Hello world. ",
          "stop_sequence: the reason, the sequence that matched, the text before it (%r)" % r)
    with cl.messages.stream(model=model, max_tokens=200, messages=ASK, stop_sequences=["END"]) as s:
        m = s.get_final_message()
    check(m.stop_reason == "stop_sequence" and m.stop_sequence == "END" and m.content[-1].text == "Hello world. ",
          "stop_sequence streamed: message_delta carries it (%r)" % m)
    r = cl.messages.create(model=model, max_tokens=3, messages=ASK)
    check(r.stop_reason == "max_tokens" and r.usage.output_tokens == 3, "max_tokens: the reason, 3 output tokens (%r)" % r)
    with cl.messages.stream(model=model, max_tokens=3, messages=ASK) as s:
        m = s.get_final_message()
    check(m.stop_reason == "max_tokens" and m.usage.output_tokens == 3, "max_tokens streamed (%r)" % m)
    r = cl.messages.create(model=model, max_tokens=200, messages=ASK, thinking={"type": "enabled", "budget_tokens": 1024})
    check(r.content[0].type == "thinking" and r.content[0].thinking == "ok", "thinking enabled: the block (%r)" % r.content)
    r = cl.messages.create(model=model, max_tokens=200, messages=ASK, thinking={"type": "disabled"})
    check([b.type for b in r.content] == ["text"] and r.content[0].text.startswith("<think>"),
          "thinking disabled: nothing split out (%r)" % r.content)
    # a multi-turn conversation with an assistant thinking block sent back
    conv = ASK + [{"role": "assistant", "content": [{"type": "thinking", "thinking": "ok", "signature": ""},
                                                    {"type": "text", "text": "Hello world."}]},
                  {"role": "user", "content": "And tomorrow?"}]
    r = cl.messages.create(model=model, max_tokens=200, messages=conv, metadata={"user_id": "x"},
                           extra_body={"temperature": 0.5, "top_p": 0.9, "top_k": 20})
    check(r.stop_reason == "end_turn", "a conversation with thinking sent back, sampling fields, metadata (%r)" % r)


def anthropic_errors(srv, model):
    cl = anthropic.Anthropic(base_url=srv.base, api_key="unused", max_retries=0)

    def raw(body, path="/v1/messages", want=400, etype="invalid_request_error", what=""):
        st, _, o, data = post_json(srv, path, body)
        ok = st == want and isinstance(o, dict) and o.get("type") == "error" and \
            o.get("error", {}).get("type") == etype and isinstance(o["error"].get("message"), str)
        check(ok, "error %s: %d %s in Anthropic's envelope (%d %r)" % (what, want, etype, st, data[:200]))
        return o["error"]["message"] if ok else ""

    raw(b'{"model": ', what="bad JSON")
    msg = raw({"model": model, "messages": ASK}, what="missing max_tokens")
    check("max_tokens" in msg, "missing max_tokens: the message names it (%r)" % msg)
    msg = raw({"model": model, "max_tokens": 5, "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]}]}, what="image")
    check("text-only" in msg, "image: refused clearly (%r)" % msg)
    raw({"model": model, "max_tokens": 5, "messages": [{"role": "tool", "content": "x"}]}, what="bad role")
    raw({"model": model, "max_tokens": 5, "messages": []}, what="empty messages")
    raw({"model": model, "max_tokens": 5, "messages": ASK, "tool_choice": {"type": "tool", "name": "nope"},
         "tools": [AN_TOOL]}, what="tool_choice naming no tool")
    raw({"model": model, "max_tokens": 5, "messages": ASK, "tools": [{"type": "web_search_20250305", "name": "ws"}]},
        what="a server tool")
    raw({"model": model, "max_tokens": 5, "messages": ASK}, path="/v1/messages/nope", want=404, etype="not_found_error",
        what="unknown route")
    try:
        cl.messages.create(model="no-such-model", max_tokens=5, messages=ASK)
        check(False, "unknown model: NotFoundError")
    except anthropic.NotFoundError as e:
        check(e.status_code == 404 and e.body["error"]["type"] == "not_found_error",
              "unknown model: NotFoundError, not_found_error (%r)" % e.body)
    try:
        with cl.messages.stream(model="no-such-model", max_tokens=5, messages=ASK) as s:
            s.get_final_message()
        check(False, "unknown model streamed: NotFoundError")
    except anthropic.NotFoundError:
        check(True, "unknown model streamed: NotFoundError before the stream begins")
    try:
        cl.messages.create(model=model, max_tokens=0, messages=ASK)
        check(False, "max_tokens 0: BadRequestError")
    except anthropic.BadRequestError as e:
        check("max_tokens" in str(e), "max_tokens 0: BadRequestError naming it (%s)" % e)


def wrong_types(srv, model):
    """Every field of the wrong type is a 400 naming it; random mutations of valid requests never
    crash the server (status 200 or 4xx, a JSON or SSE body; the sanitizers watch the rest)."""
    m = model
    cases = [
        ("/v1/messages", {"model": m, "max_tokens": "5", "messages": ASK}, "max_tokens"),
        ("/v1/messages", {"model": m, "max_tokens": 5, "messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
        ("/v1/messages", {"model": m, "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "text"}]}]},
         "messages[0].content[0].text"),
        ("/v1/messages", {"model": m, "max_tokens": 5, "messages": [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": 5}]}]}, "messages[0].content[0].tool_use_id"),
        ("/v1/messages", {"model": m, "max_tokens": 5, "messages": [{"role": "assistant", "content": [
            {"type": "tool_use", "id": "t", "name": "x", "input": "{}"}]}]}, "messages[0].content[0].input"),
        ("/v1/messages", {"model": m, "max_tokens": 5, "messages": ASK, "system": 5}, "system"),
        ("/v1/messages", {"model": m, "max_tokens": 5, "messages": ASK, "stop_sequences": ["a", 5]}, "stop_sequences[1]"),
        ("/v1/messages", {"model": m, "max_tokens": 5, "messages": ASK, "tools": [{"name": "x"}]}, "tools[0].input_schema"),
        ("/v1/messages", {"model": m, "max_tokens": 5, "messages": ASK, "thinking": {"type": "sometimes"}}, "thinking.type"),
        ("/v1/messages", {"model": m, "max_tokens": 5, "messages": ASK, "tool_choice": {"type": "all"}}, "tool_choice.type"),
        ("/v1/messages/count_tokens", {"model": m, "messages": "hi"}, "messages"),
        ("/v1/responses", {"model": m, "input": 5}, "input"),
        ("/v1/responses", {"model": m, "input": [{"type": "function_call", "name": "x", "arguments": "[1]"}]},
         "input[0].arguments"),
        ("/v1/responses", {"model": m, "input": [{"role": "critic", "content": "x"}]}, "input[0].role"),
        ("/v1/responses", {"model": m, "input": "hi", "max_output_tokens": 0}, "max_output_tokens"),
        ("/v1/responses", {"model": m, "input": "hi", "tools": [{"type": "function"}]}, "tools[0].name"),
        ("/v1/responses", {"model": m, "input": "hi", "text": {"format": {"type": "yaml"}}}, "text.format.type"),
        ("/v1/responses", {"model": m, "input": [{"type": "item_reference", "id": "x"}]}, "input[0].type"),
    ]
    for path, body, field in cases:
        st, _, o, raw = post_json(srv, path, body)
        msg = json.dumps(o) if o is not None else ""
        check(st == 400 and field in msg, "%s: a bad '%s' is a 400 naming it (%d %r)" % (path, field, st, raw[:200]))
    rng = random.Random(31)
    values = [None, 5, -1, 1e300, "", "x", True, [], {}, [5], {"type": 5}, "\u00e9\ud83d\ude00", [{"type": "text"}]]
    seeds = [("/v1/messages", {"model": m, "max_tokens": 20, "system": [{"type": "text", "text": "s"}], "stream": False,
                               "messages": ASK + [{"role": "assistant", "content": [
                                   {"type": "thinking", "thinking": "t"},
                                   {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "P"}}]},
                                   {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                                 "content": [{"type": "text", "text": "ok"}]}]}],
                               "tools": [AN_TOOL], "tool_choice": {"type": "auto"}, "stop_sequences": ["zz"]}),
             ("/v1/responses", {"model": m, "max_output_tokens": 20, "instructions": "i", "stream": False,
                                "input": [{"role": "user", "content": [{"type": "input_text", "text": "q"}]},
                                          {"type": "reasoning", "summary": [{"type": "summary_text", "text": "r"}]},
                                          {"type": "function_call", "call_id": "c", "name": "get_weather",
                                           "arguments": "{}"},
                                          {"type": "function_call_output", "call_id": "c", "output": "o"}],
                                "tools": [RS_TOOL], "text": {"format": {"type": "text"}}})]

    def paths(o, pre=()):
        yield pre
        if isinstance(o, dict):
            for k, v in o.items():
                yield from paths(v, pre + (k,))
        elif isinstance(o, list):
            for i, v in enumerate(o):
                yield from paths(v, pre + (i,))

    bad, statuses = [], {}
    for n in range(240):
        route, seed = seeds[n % 2]
        body = copy.deepcopy(seed)
        for _ in range(rng.randint(1, 3)):
            p = rng.choice([p for p in paths(body) if p and p[0] != "model"])
            parent = body
            for k in p[:-1]:
                parent = parent[k]
            parent[p[-1]] = copy.deepcopy(rng.choice(values))
        if n % 5 == 0:
            body["stream"] = True
        st, hdrs, raw = request(srv, "POST", route, body)
        statuses[st] = statuses.get(st, 0) + 1
        ok = st in (200, 400, 404) and raw
        if ok and hdrs.get("content-type", "").startswith("text/event-stream"):
            ok = all(e for e in sse_events(raw))
        elif ok:
            try:
                json.loads(raw)
            except ValueError:
                ok = False
        if not ok:
            bad.append((route, st, json.dumps(body)[:200], raw[:200]))
    check(not bad and srv.alive() and statuses.get(200, 0) >= 24 and statuses.get(400, 0) >= 24,
          "240 mutated requests: 200 or a 4xx, well-formed bodies, the server alive (statuses %r; %r)" % (statuses, bad[:3]))


def auth(anvil, model):
    srv = Server(anvil, env={"ANVIL_API_KEY": "sekret", "ANVIL_TEST_REPLAY": TEXT_REPLY})
    try:
        r = anthropic.Anthropic(base_url=srv.base, api_key="sekret").messages.create(model=model, max_tokens=50,
                                                                                      messages=ASK)
        check(r.stop_reason == "end_turn", "auth: x-api-key with the key is accepted")
        try:
            anthropic.Anthropic(base_url=srv.base, api_key="wrong", max_retries=0).messages.create(
                model=model, max_tokens=5, messages=ASK)
            check(False, "auth: a wrong x-api-key is refused")
        except anthropic.AuthenticationError as e:
            check(e.status_code == 401 and e.body["error"]["type"] == "authentication_error",
                  "auth: a wrong x-api-key is a 401 authentication_error (%r)" % e.body)
        r = openai.OpenAI(base_url=srv.base + "/v1", api_key="sekret").responses.create(model=model, input="hi")
        check(r.status == "completed", "auth: Bearer still accepted (Responses)")
    finally:
        srv.stop()


def responses_tools(srv, model):
    cl = openai.OpenAI(base_url=srv.base + "/v1", api_key="unused", max_retries=0)
    r = cl.responses.create(model=model, input="Weather in Paris?", tools=[RS_TOOL])
    kinds = [o.type for o in r.output]
    check(r.id.startswith("resp_") and r.object == "response" and r.status == "completed",
          "responses: id resp_..., object response, status completed (%r)" % r.id)
    check(kinds == ["reasoning", "function_call"], "responses: a reasoning item and a function_call (%r)" % kinds)
    fc = r.output[-1]
    check(fc.call_id.startswith("call_") and fc.name == "get_weather" and json.loads(fc.arguments) == {"city": "Paris"},
          "responses: function_call call_id, name, arguments JSON text (%r)" % fc)
    check(r.output[0].summary[0].text == "The user wants the weather.\n", "responses: the reasoning summary (%r)" % r.output[0])
    check(r.usage.input_tokens > 0 and r.usage.output_tokens > 0 and
          r.usage.total_tokens == r.usage.input_tokens + r.usage.output_tokens, "responses: usage (%r)" % r.usage)

    with cl.responses.stream(model=model, input="Weather in Paris?", tools=[RS_TOOL]) as s:
        f = s.get_final_response()
    check([o.type for o in f.output] == kinds and json.loads(f.output[-1].arguments) == {"city": "Paris"} and
          f.usage.input_tokens == r.usage.input_tokens, "responses.stream: the SDK assembles the same response (%r)" % f)

    st, _, raw = request(srv, "POST", "/v1/responses", {"model": model, "input": "Weather in Paris?", "tools": [RS_TOOL],
                                                        "stream": True})
    ev = sse_events(raw)
    names = [n for n, _ in ev]
    check(st == 200 and all(n == d.get("type") for n, d in ev), "responses stream: event lines name their types")
    check([d["sequence_number"] for _, d in ev] == list(range(len(ev))), "responses stream: sequence numbers 0, 1, ...")
    check(names[:2] == ["response.created", "response.in_progress"] and names[-1] == "response.completed",
          "responses stream: created, in_progress first, completed last (%r)" % names[:3])
    for want in ("response.output_item.added", "response.function_call_arguments.delta",
                 "response.function_call_arguments.done", "response.output_item.done"):
        check(want in names, "responses stream: %s" % want)

    # the round trip: the call and its output go back
    back = [{"role": "user", "content": "Weather in Paris?"}, r.output[0].model_dump(exclude_none=True),
            {"type": "function_call", "call_id": fc.call_id, "name": fc.name, "arguments": fc.arguments},
            {"type": "function_call_output", "call_id": fc.call_id, "output": "18C and sunny"}]
    r2 = cl.responses.create(model=model, input=back, tools=[RS_TOOL])
    check(r2.status == "completed" and r2.usage.input_tokens > r.usage.input_tokens,
          "responses round trip: the call and its output reach the prompt (%d > %d)"
          % (r2.usage.input_tokens, r.usage.input_tokens))
    r3 = cl.responses.create(model=model, input="Weather in Paris?", tools=[RS_TOOL], instructions="Be brief.")
    check(r3.usage.input_tokens > r.usage.input_tokens and r3.instructions == "Be brief.",
          "responses: instructions reach the prompt (%d > %d)" % (r3.usage.input_tokens, r.usage.input_tokens))
    # Codex's tools: a namespace's members are "namespace.name", web_search is left out
    ns = {"type": "namespace", "name": "agents", "description": "d",
          "tools": [{"type": "function", "name": "spawn", "parameters": {"type": "object", "properties": {}}}]}
    r5 = cl.responses.create(model=model, input="hi", tools=[RS_TOOL, ns, {"type": "web_search"}],
                             tool_choice={"type": "function", "name": "agents.spawn"})
    check(r5.status == "completed", "responses: a namespace's function is agents.spawn, web_search is dropped")
    try:
        cl.responses.create(model=model, input="hi", tools=[ns], tool_choice={"type": "function", "name": "spawn"})
        check(False, "responses: a namespace member is not offered under its bare name")
    except openai.BadRequestError:
        check(True, "responses: a namespace member is not offered under its bare name")
    try:
        cl.responses.create(model=model, input="hi", tools=[{"type": "file_search", "vector_store_ids": ["x"]}])
        check(False, "responses: file_search is a 400")
    except openai.BadRequestError as e:
        check("file_search" in str(e), "responses: file_search is a 400 naming it (%s)" % e)
    # include reasoning.encrypted_content: the reasoning text, which reads back as the summary does
    r6 = cl.responses.create(model=model, input="Weather in Paris?", tools=[RS_TOOL], include=["reasoning.encrypted_content"])
    rs = r6.output[0]
    check(rs.encrypted_content == rs.summary[0].text, "responses include: encrypted_content is the reasoning (%r)" % rs)
    enc_only = {"type": "reasoning", "id": rs.id, "summary": [], "encrypted_content": rs.encrypted_content}
    # (Anvil's Qwen 3 prompt drops earlier turns' thinking, so this checks acceptance only)
    r7 = cl.responses.create(model=model, input=[back[0], enc_only] + back[2:], tools=[RS_TOOL])
    check(r7.status == "completed", "responses: a reasoning item with only encrypted_content is taken back")
    try:
        cl.responses.create(model=model, input="hi", previous_response_id=r.id)
        check(False, "previous_response_id: a 400")
    except openai.BadRequestError as e:
        check("previous_response_id" in str(e), "previous_response_id: a 400 naming it (%s)" % e)
    try:
        cl.responses.create(model="no-such-model", input="hi")
        check(False, "responses unknown model: NotFoundError")
    except openai.NotFoundError:
        check(True, "responses unknown model: NotFoundError")


def responses_text(srv, model):
    cl = openai.OpenAI(base_url=srv.base + "/v1", api_key="unused", max_retries=0)
    r = cl.responses.create(model=model, input=[{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}])
    check(r.output_text == "Hello world. END more text" and [o.type for o in r.output] == ["reasoning", "message"],
          "responses text: output_text and a reasoning item (%r)" % r.output)
    r = cl.responses.create(model=model, input="hi", reasoning={"effort": "none"})
    check([o.type for o in r.output] == ["message"] and r.output_text.startswith("<think>"),
          "responses reasoning.effort none: nothing split out (%r)" % r.output)
    r = cl.responses.create(model=model, input="hi", max_output_tokens=3)
    check(r.status == "incomplete" and r.incomplete_details.reason == "max_output_tokens" and r.usage.output_tokens == 3,
          "responses max_output_tokens: status incomplete (%r %r)" % (r.status, r.incomplete_details))
    st, _, raw = request(srv, "POST", "/v1/responses", {"model": model, "input": "hi", "max_output_tokens": 3, "stream": True})
    names = [n for n, _ in sse_events(raw)]
    check(names[-1] == "response.incomplete", "responses max_output_tokens streamed: response.incomplete (%r)" % names[-1:])
    with cl.responses.stream(model=model, input="hi") as s:
        text = "".join(e.delta for e in s if e.type == "response.output_text.delta")
        f = s.get_final_response()
    check(text == f.output_text == "Hello world. END more text", "responses.stream: text deltas add up (%r)" % text)


def greedy_side(anvil, work):
    """Sampled (greedy) on a gemma3 model: the json_schema grammar, a streamed reply equal to the whole."""
    gemma = make(work, "gemma3")
    srv = Server(anvil)
    try:
        cl = openai.OpenAI(base_url=srv.base + "/v1", api_key="unused", max_retries=0)
        r = cl.responses.create(model=gemma, input="A color?", temperature=0, max_output_tokens=256,
                                text={"format": {"type": "json_schema", "name": "c", "schema": SCHEMA}})
        try:
            jsonschema.validate(json.loads(r.output_text), SCHEMA)
            check(True, "responses json_schema: the output validates")
        except (ValueError, jsonschema.ValidationError) as e:
            check(False, "responses json_schema: the output validates (%r: %s)" % (r.output_text, e))
        an = anthropic.Anthropic(base_url=srv.base, api_key="unused")
        w = an.messages.create(model=gemma, max_tokens=8, messages=ASK, extra_body={"temperature": 0})
        with an.messages.stream(model=gemma, max_tokens=8, messages=ASK, extra_body={"temperature": 0}) as s:
            m = s.get_final_message()
        text = lambda msg: "".join(b.text for b in msg.content if b.type == "text")  # noqa: E731
        check(text(w) == text(m) and w.usage.output_tokens == m.usage.output_tokens and
              w.stop_reason == m.stop_reason, "messages greedy: streamed equals whole (%r, %r)" % (text(w), text(m)))
        check(1 <= w.usage.output_tokens <= 8, "messages greedy: output_tokens within max_tokens (%r)" % w.usage)
        o = an.messages.create(model=gemma, max_tokens=256, messages=ASK, extra_body={"temperature": 0},
                               output_config={"format": {"type": "json_schema", "schema": SCHEMA}})
        try:
            jsonschema.validate(json.loads(text(o)), SCHEMA)
            check(True, "messages output_config.format json_schema: the output validates")
        except (ValueError, jsonschema.ValidationError) as e:
            check(False, "messages output_config.format json_schema: the output validates (%r: %s)" % (text(o), e))
    finally:
        srv.stop()


def claude_code_side(anvil, work, model):
    claude = os.environ.get("ANVIL_TEST_CLAUDE") or shutil.which("claude")
    if not claude:
        print("skip Claude Code: no `claude` binary (set ANVIL_TEST_CLAUDE or npm install @anthropic-ai/claude-code)")
        return
    home = os.path.join(work, "claude-home")
    shutil.rmtree(home, ignore_errors=True)
    os.makedirs(home)
    marker = os.path.join(home, "ran.txt")
    call = {"name": "Bash", "arguments": {"command": "echo anvil > %s" % marker, "description": "write a file"}}
    srv = Server(anvil, env={"ANVIL_TEST_REPLAY": "<tool_call>%s</tool_call>" % json.dumps(call),
                             "ANVIL_CONTEXT_LENGTH": "32768"})
    try:
        env = dict(os.environ, HOME=home, ANTHROPIC_BASE_URL=srv.base, ANTHROPIC_API_KEY="", ANTHROPIC_AUTH_TOKEN="anvil",
                   CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1",
                   ANTHROPIC_DEFAULT_HAIKU_MODEL=model, CLAUDE_CODE_SUBAGENT_MODEL=model)
        p = subprocess.run([claude, "-p", "Write the file", "--model", model, "--tools", "Bash", "--allowedTools", "Bash",
                            "--max-turns", "2", "--output-format", "json"], env=env, cwd=home, capture_output=True,
                           text=True, timeout=240)
        try:
            out = json.loads(p.stdout)
        except ValueError:
            out = {}
        check(os.path.exists(marker), "Claude Code: it ran the Bash tool_use (%r %r)" % (p.stdout[-400:], p.stderr[-400:]))
        check(out.get("num_turns", 0) >= 2 and out.get("stop_reason") == "tool_use",
              "Claude Code: the tool_result went back for another turn (%r)" % p.stdout[-400:])
    finally:
        srv.stop()
    posts = [l for l in srv.lines if 'path="/v1/messages"' in l]
    check(len(posts) >= 2 and all("status=200" in l for l in posts), "Claude Code: every /v1/messages answered 200 (%r)"
          % posts[-3:])


def main():
    anvil, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    qwen = make(work, "qwen3", "qwen3")
    srv = Server(anvil, env={"ANVIL_TEST_REPLAY": CALL_REPLY})
    try:
        anthropic_tools(srv, qwen)
        anthropic_errors(srv, qwen)
        responses_tools(srv, qwen)
        wrong_types(srv, qwen)
    finally:
        srv.stop()
    srv = Server(anvil, env={"ANVIL_TEST_REPLAY": TEXT_REPLY})
    try:
        anthropic_text(srv, qwen)
        responses_text(srv, qwen)
    finally:
        srv.stop()
    auth(anvil, qwen)
    greedy_side(anvil, work)
    claude_code_side(anvil, work, qwen)
    finish()


if __name__ == "__main__":
    main()
