#!/usr/bin/env python3
"""agents: tool calls and thinking through the real clients (ollama and openai Python
packages) against `anvil serve`, deterministic: the server runs with ANVIL_TEST_REPLAY, so
every reply is a fixed text (tokenized with special tokens) instead of sampled, and the
parsing path sees exactly what a Qwen 3 model would say. The model is a tiny random qwen3
GGUF with a Qwen 3-style chat template (tools and <think> in it: both capabilities).

Checked, field by field against Ollama's and OpenAI's documented shapes:
- /api/chat with tools (whole and streamed): message.thinking, message.tool_calls
  [{id, function: {index, name, arguments: {...}}}], empty content; a round trip that sends
  the call and a role "tool" result back;
- /v1/chat/completions with tools (whole and streamed): finish_reason "tool_calls",
  tool_calls [{id "call_...", type "function", function {name, arguments: JSON text}}],
  reasoning_content; the round trip with tool_call_id;
- /api/generate: thinking split out of the response; without tools a <tool_call> stays text;
- `anvil run` (through the server): "Thinking...", the trace, "...done thinking.", the
  answer; --hidethinking only the answer;
- /api/show capabilities; a model without them (gemma3) answers 400 "... does not support
  tools" / "... does not support thinking"; a malformed tools entry is a 400 naming it;
- the ollama npm package (tests/server/node_agents.mjs, `npm ci` of tests/server/node into
  WORKDIR/node; skipped with a message only when npm cannot reach a registry): the tool
  call, its stream, the round trip and /api/generate's thinking, on both models;
- Llama 3.x and Mistral Nemo (qwen3-shaped models with those templates' markers): a bare
  {"name", "parameters"} reply and a [TOOL_CALLS][...] reply as tool_calls through both
  clients, and the round trip rendered by those families' tool prompts;
- a Go TEMPLATE with .Tools / .ToolCalls (a store model made by `anvil create` with a
  Modelfile TEMPLATE): the tools reach the prompt, the reply after the template's own tool
  tag (<function_calls>, Ollama's parseTag) comes back as tool_calls, the text before it as
  content, the round trip renders the call and the result, capabilities say tools;
- gpt-oss's harmony (a tiny gpt-oss model, make_test_model --family gptoss, with the
  harmony special tokens and a harmony template, --chat-template gpt-oss): the analysis channel as thinking /
  reasoning_content, a commentary call to=functions.NAME as tool_calls (the reply stops at
  <|call|>, an end-of-generation token), the final channel as content, think levels and
  reasoning_effort accepted, the round trip, `anvil run` printing the trace.

  agents.py ANVIL WORKDIR"""
import json
import os
import shutil
import subprocess
import sys
import urllib.request

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Server, check, finish, post_json  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city",
                                         "parameters": {"type": "object", "required": ["city"],
                                                        "properties": {"city": {"type": "string"}}}}}
CALL_REPLY = ('<think>\nThe user wants the weather.\n</think>\n\n<tool_call>\n'
              '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>')
THINK_REPLY = '<think>hmm, a greeting</think>\n\nHello! <tool_call>{"name": "x"}</tool_call>'


def make(work, family, template=None):
    out = os.path.join(work, "%s-%s.gguf" % (family, template or "default"))
    cmd = [sys.executable, os.path.join(ROOT, "tools", "make_test_model.py"), "--family", family, "--preset", "tiny",
           "--type", "q8_0", "--out", out, "--if-changed"]
    if template:
        cmd += ["--chat-template", template]
    subprocess.run(cmd, check=True, capture_output=True)
    return out


def ollama_side(srv, model):
    import ollama
    cl = ollama.Client(host=srv.base)
    msgs = [{"role": "user", "content": "Weather in Paris?"}]
    r = cl.chat(model=model, messages=msgs, tools=[TOOL])
    m = r.message
    calls = m.tool_calls or []
    check(len(calls) == 1 and calls[0].function.name == "get_weather" and dict(calls[0].function.arguments) ==
          {"city": "Paris"}, "ollama chat: one tool call get_weather(city=Paris) (%r)" % calls)
    check(m.thinking == "The user wants the weather.\n", "ollama chat: message.thinking (%r)" % m.thinking)
    check(m.content == "", "ollama chat: no content besides the call (%r)" % m.content)
    check(r.done and r.done_reason == "stop", "ollama chat: done, done_reason stop (%r)" % r.done_reason)

    thinking, got_calls, n_chunks, last = "", [], 0, None
    for ch in cl.chat(model=model, messages=msgs, tools=[TOOL], stream=True):
        n_chunks += 1
        thinking += ch.message.thinking or ""
        got_calls += ch.message.tool_calls or []
        last = ch
    check(thinking == "The user wants the weather.\n" and len(got_calls) == 1 and
          got_calls[0].function.name == "get_weather" and last.done,
          "ollama chat stream: thinking pieces add up, the call arrives in a chunk, then done (%d chunks, %r, %r)"
          % (n_chunks, thinking, got_calls))

    # the round trip: the call and its result go back
    msgs2 = msgs + [{"role": "assistant", "content": "", "tool_calls": [c.model_dump(exclude_none=True) for c in calls]},
                    {"role": "tool", "content": "18C and sunny", "tool_name": "get_weather"}]
    r2 = cl.chat(model=model, messages=msgs2, tools=[TOOL])
    check(r2.done and (r2.message.tool_calls or []) and r2.prompt_eval_count,
          "ollama chat round trip: the call and its result sent back are answered (%r)" % r2.done_reason)

    # the raw shape, field by field
    st, _, o, raw = post_json(srv, "/api/chat", {"model": model, "messages": msgs, "tools": [TOOL], "stream": False})
    msg = o.get("message", {}) if isinstance(o, dict) else {}
    call = (msg.get("tool_calls") or [{}])[0]
    check(st == 200 and set(msg) == {"role", "content", "thinking", "tool_calls"} and msg["role"] == "assistant",
          "/api/chat message fields: role, content, thinking, tool_calls (%r)" % sorted(msg))
    check(set(call) == {"id", "function"} and set(call.get("function", {})) == {"index", "name", "arguments"} and
          call["function"]["index"] == 0 and isinstance(call["function"]["arguments"], dict),
          "/api/chat tool_calls[0]: id, function {index 0, name, arguments object} (%r)" % call)

    info = cl.show(model)
    caps = list(info.capabilities or [])
    check(caps == ["completion", "tools", "thinking"], "show: capabilities completion, tools, thinking (%r)" % caps)


def openai_side(srv, model):
    import openai
    cl = openai.OpenAI(base_url=srv.base + "/v1", api_key="unused")
    msgs = [{"role": "user", "content": "Weather in Paris?"}]
    r = cl.chat.completions.create(model=model, messages=msgs, tools=[TOOL])
    ch = r.choices[0]
    calls = ch.message.tool_calls or []
    check(ch.finish_reason == "tool_calls", "openai: finish_reason tool_calls (%r)" % ch.finish_reason)
    check(len(calls) == 1 and calls[0].id.startswith("call_") and calls[0].type == "function" and
          calls[0].function.name == "get_weather" and json.loads(calls[0].function.arguments) == {"city": "Paris"},
          "openai: tool_calls[0] id call_*, type function, name, arguments JSON text (%r)" % calls)
    check(ch.message.content is None, "openai: content null beside the call (%r)" % ch.message.content)
    reasoning = (ch.message.model_extra or {}).get("reasoning_content")
    check(reasoning == "The user wants the weather.\n", "openai: reasoning_content (%r)" % reasoning)

    acc, finish_reason, ids = {}, None, set()
    for chunk in cl.chat.completions.create(model=model, messages=msgs, tools=[TOOL], stream=True):
        if not chunk.choices:
            continue
        c = chunk.choices[0]
        for tc in c.delta.tool_calls or []:
            a = acc.setdefault(tc.index, {"name": "", "arguments": ""})
            if tc.id:
                ids.add(tc.id)
            if tc.function and tc.function.name:
                a["name"] += tc.function.name
            if tc.function and tc.function.arguments:
                a["arguments"] += tc.function.arguments
        finish_reason = c.finish_reason or finish_reason
    check(finish_reason == "tool_calls" and list(acc) == [0] and acc[0]["name"] == "get_weather" and
          json.loads(acc[0]["arguments"]) == {"city": "Paris"} and len(ids) == 1,
          "openai stream: the call in a delta with index 0, finish_reason tool_calls (%r, %r)" % (acc, finish_reason))

    msgs2 = msgs + [{"role": "assistant", "content": None, "tool_calls": [
        {"id": calls[0].id, "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": calls[0].id, "content": "18C and sunny"}]
    r2 = cl.chat.completions.create(model=model, messages=msgs2, tools=[TOOL])
    check(r2.choices[0].finish_reason == "tool_calls" and r2.usage.prompt_tokens > r.usage.prompt_tokens,
          "openai round trip: answered, the prompt longer by the call and result (%d > %d)"
          % (r2.usage.prompt_tokens, r.usage.prompt_tokens))
    try:
        cl.chat.completions.create(model=model, messages=msgs2[:2] + [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{not json"}}]}],
            tools=[TOOL])
        check(False, "openai: tool call arguments that are not JSON: 400")
    except openai.BadRequestError as ex:
        check("arguments" in str(ex), "openai: tool call arguments that are not JSON: 400 naming them (%s)" % ex)


def refusals(srv, gemma, qwen):
    st, _, o, raw = post_json(srv, "/api/chat", {"model": gemma, "messages": [{"role": "user", "content": "hi"}],
                                                 "tools": [TOOL], "stream": False})
    check(st == 400 and "does not support tools" in raw.decode(), "gemma with tools: 400 does not support tools (%d %r)"
          % (st, raw[:160]))
    st, _, o, raw = post_json(srv, "/api/chat", {"model": gemma, "messages": [{"role": "user", "content": "hi"}],
                                                 "think": True, "stream": False})
    check(st == 400 and "does not support thinking" in raw.decode(),
          "gemma with think: 400 does not support thinking (%d %r)" % (st, raw[:160]))
    st, _, o, raw = post_json(srv, "/api/chat", {"model": qwen, "messages": [{"role": "user", "content": "hi"}],
                                                 "tools": [{"type": "function", "function": {}}], "stream": False})
    check(st == 400 and "tools[0].function.name" in raw.decode(), "a tool without a name: 400 naming it (%d %r)"
          % (st, raw[:160]))
    st, _, o, raw = post_json(srv, "/api/chat", {"model": qwen, "messages": [{"role": "user", "content": "hi"}],
                                                 "think": "sometimes", "stream": False})
    check(st == 400 and "think" in raw.decode(), "think 'sometimes': 400 naming think (%d %r)" % (st, raw[:160]))
    with urllib.request.urlopen(srv.base + "/api/tags", timeout=30) as r:
        tags = json.loads(r.read())
    check(all("capabilities" in m for m in tags.get("models", [])), "tags entries carry capabilities")


def node_install(node_dir):
    """npm ci of tests/server/node into node_dir; False (after saying why) when it cannot run."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node")
    os.makedirs(node_dir, exist_ok=True)
    for f in ("package.json", "package-lock.json"):
        shutil.copy(os.path.join(src, f), os.path.join(node_dir, f))
    if os.path.isdir(os.path.join(node_dir, "node_modules", "ollama")):
        return True
    if not shutil.which("npm") or not shutil.which("node"):
        print("SKIP node agents: node/npm are not installed")
        return False
    p = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=node_dir, capture_output=True, text=True,
                       timeout=300)
    if p.returncode != 0:
        if any(s in p.stderr for s in ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "network")):
            print("SKIP node agents: npm cannot reach a registry:\n" + p.stderr[-800:])
            return False
        check(False, "npm ci failed:\n" + p.stderr[-2000:])
        return False
    return True


def node_side(srv, node_dir, model, think, want_thinking, want_generate, what):
    """The npm client's tool round trip and thinking against a server replaying a get_weather call."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node_agents.mjs")
    p = subprocess.run(["node", script, srv.base, model, json.dumps(TOOL), json.dumps(think)], cwd=node_dir,
                       capture_output=True, text=True, timeout=300)
    if not check(p.returncode == 0, "node agents (%s) ran (rc %d): %s" % (what, p.returncode, p.stderr[-2000:])):
        return
    res = json.loads(p.stdout)
    m = res["message"]
    calls = m.get("tool_calls") or []
    check(m.get("role") == "assistant" and m.get("content") == "" and m.get("thinking") == want_thinking and
          len(calls) == 1 and set(calls[0]) == {"id", "function"} and calls[0]["function"]["name"] == "get_weather"
          and calls[0]["function"]["arguments"] == {"city": "Paris"} and calls[0]["function"]["index"] == 0 and
          res["done"] and res["done_reason"] == "stop",
          "node (%s) chat: message {role, content '', thinking, tool_calls [{id, function {index 0, name, "
          "arguments}}]}, done stop (%r)" % (what, res))
    st = res["stream"]
    check(st["thinking"] == want_thinking and st["content"] == "" and len(st["calls"]) == 1 and
          st["calls"][0]["function"]["arguments"] == {"city": "Paris"} and res["stream_done"] and st["chunks"] >= 2,
          "node (%s) chat stream: thinking pieces, the call in a chunk, done (%r)" % (what, st))
    rt = res["round_trip"]
    check(rt["done"] and rt["prompt_eval_count"] > 0 and len(rt["tool_calls"]) == 1,
          "node (%s) round trip: the call and the tool result sent back are answered (%r)" % (what, rt))
    g = res["generate"]
    check(g["done"] and g["thinking"] == want_thinking and g["response"] == want_generate,
          "node (%s) generate (no tools): thinking split out, the call's text stays the response (%r)" % (what, g))


HARMONY_CALL = ('<|channel|>analysis<|message|>The user wants the weather.<|end|><|start|>assistant<|channel|>'
                'commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>')
HARMONY_ANSWER = ('<|channel|>analysis<|message|>hmm, a greeting<|end|><|start|>assistant<|channel|>final'
                  '<|message|>Hello!<|return|>')


def harmony_side(anvil, work, node_dir):
    import ollama
    import openai
    model = make(work, "gptoss", "gpt-oss")   # the gpt-oss family: o200k_harmony's special tokens
    srv = Server(anvil, env={"ANVIL_TEST_REPLAY": HARMONY_CALL})
    try:
        cl = ollama.Client(host=srv.base)
        msgs = [{"role": "user", "content": "Weather in Paris?"}]
        r = cl.chat(model=model, messages=msgs, tools=[TOOL], think="high")
        calls = r.message.tool_calls or []
        check(len(calls) == 1 and calls[0].function.name == "get_weather" and
              dict(calls[0].function.arguments) == {"city": "Paris"} and r.message.content == "" and
              r.message.thinking == "The user wants the weather." and r.done_reason == "stop",
              "harmony ollama chat: analysis -> thinking, commentary to=functions.get_weather -> one call, "
              "no content, stopped at <|call|> (%r)" % (r.message,))
        thinking, content, got, last = "", "", [], None
        for ch in cl.chat(model=model, messages=msgs, tools=[TOOL], stream=True):
            thinking += ch.message.thinking or ""
            content += ch.message.content or ""
            got += ch.message.tool_calls or []
            last = ch
        check(thinking == "The user wants the weather." and content == "" and len(got) == 1 and
              got[0].function.name == "get_weather" and last.done,
              "harmony ollama stream: thinking pieces, no marker in content, the call, done (%r, %r, %r)"
              % (thinking, content, got))
        msgs2 = msgs + [{"role": "assistant", "content": "", "thinking": "The user wants the weather.",
                         "tool_calls": [c.model_dump(exclude_none=True) for c in calls]},
                        {"role": "tool", "content": "18C and sunny", "tool_name": "get_weather"}]
        r2 = cl.chat(model=model, messages=msgs2, tools=[TOOL])
        check(r2.done and (r2.message.tool_calls or []) and r2.prompt_eval_count,
              "harmony round trip: the call, its thinking and its result sent back are answered (%r)" % r2.done_reason)
        for level in ("low", "medium", "high", True, False):
            st, _, o, raw = post_json(srv, "/api/chat", {"model": model, "messages": msgs, "think": level,
                                                         "stream": False})
            check(st == 200 and (o.get("message") or {}).get("thinking") == "The user wants the weather.",
                  "harmony think %r: accepted, the analysis still split out (%d %r)" % (level, st, raw[:200]))
        info = cl.show(model)
        check(list(info.capabilities or []) == ["completion", "tools", "thinking"],
              "harmony show: capabilities completion, tools, thinking (%r)" % info.capabilities)
        oc = openai.OpenAI(base_url=srv.base + "/v1", api_key="unused")
        r = oc.chat.completions.create(model=model, messages=msgs, tools=[TOOL], reasoning_effort="low")
        ch = r.choices[0]
        tc = ch.message.tool_calls or []
        st, _, o, raw = post_json(srv, "/v1/chat/completions", {"model": model, "messages": msgs,
                                                                "reasoning": {"effort": "high"}})
        check(st == 200 and o["choices"][0]["message"].get("reasoning_content") == "The user wants the weather.",
              "harmony /v1 reasoning.effort (the newer spelling) accepted (%d %r)" % (st, raw[:200]))
        st, _, o, raw = post_json(srv, "/v1/chat/completions", {"model": model, "messages": msgs,
                                                                "reasoning": {"effort": "extreme"}})
        check(st == 400 and "reasoning.effort" in raw.decode(), "reasoning.effort 'extreme': 400 naming it (%d %r)"
              % (st, raw[:200]))
        check(ch.finish_reason == "tool_calls" and len(tc) == 1 and tc[0].id.startswith("call_") and
              tc[0].function.name == "get_weather" and json.loads(tc[0].function.arguments) == {"city": "Paris"} and
              (ch.message.model_extra or {}).get("reasoning_content") == "The user wants the weather.",
              "harmony openai: finish_reason tool_calls, the call, reasoning_content (%r)" % (ch.message,))
        if node_dir:
            node_side(srv, node_dir, model, "medium", "The user wants the weather.", '{"city": "Paris"}', "harmony")
    finally:
        srv.stop()
    srv = Server(anvil, env={"ANVIL_TEST_REPLAY": HARMONY_ANSWER})
    try:
        st, _, o, raw = post_json(srv, "/api/generate", {"model": model, "prompt": "hi", "stream": False})
        check(st == 200 and o.get("thinking") == "hmm, a greeting" and o.get("response") == "Hello!",
              "harmony generate: thinking and the final channel's response (%r)" % raw[:300])
        env = dict(os.environ, ANVIL_HOST=srv.host, HOME=srv.env["HOME"], ANVIL_MODELS=srv.env["ANVIL_MODELS"])
        r = subprocess.run([anvil, "run", model, "hi", "--think=low"], env=env, capture_output=True, text=True,
                           timeout=120)
        check((r.returncode, r.stdout) == (0, "Thinking...\nhmm, a greeting\n...done thinking.\n\nHello!\n"),
              "harmony anvil run --think=low: the trace, then the answer (%r)" % ((r.returncode, r.stdout, r.stderr[-300:]),))
    finally:
        srv.stop()


FAMILY_REPLIES = {
    "llama3": '{"name": "get_weather", "parameters": {"city": "Paris"}}',
    "mistral-nemo": '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "a1b2c3d4e"}]',
}


def families_side(anvil, work):
    import ollama
    import openai
    for family, reply in FAMILY_REPLIES.items():
        model = make(work, "qwen3", family)
        srv = Server(anvil, env={"ANVIL_TEST_REPLAY": reply})
        try:
            cl = ollama.Client(host=srv.base)
            check(list(cl.show(model).capabilities or []) == ["completion", "tools"],
                  "%s: capabilities completion, tools" % family)
            msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"}]
            r = cl.chat(model=model, messages=msgs, tools=[TOOL])
            calls = r.message.tool_calls or []
            check(len(calls) == 1 and calls[0].function.name == "get_weather" and
                  dict(calls[0].function.arguments) == {"city": "Paris"} and r.message.content == "",
                  "%s ollama chat: the reply is one tool call, no content (%r)" % (family, r.message))
            msgs2 = msgs + [{"role": "assistant", "content": "", "tool_calls": [c.model_dump(exclude_none=True) for c in calls]},
                            {"role": "tool", "content": "18C", "tool_name": "get_weather"}]
            r2 = cl.chat(model=model, messages=msgs2, tools=[TOOL])
            check(r2.done and r2.prompt_eval_count > 0 and len(r2.message.tool_calls or []) == 1,
                  "%s round trip: the call and the result rendered by the family's tool prompt (%r)" % (family, r2.done_reason))
            oc = openai.OpenAI(base_url=srv.base + "/v1", api_key="unused")
            o = oc.chat.completions.create(model=model, messages=msgs, tools=[TOOL])
            tc = o.choices[0].message.tool_calls or []
            check(o.choices[0].finish_reason == "tool_calls" and len(tc) == 1 and
                  json.loads(tc[0].function.arguments) == {"city": "Paris"},
                  "%s openai: finish_reason tool_calls, the call (%r)" % (family, o.choices[0].message))
            st, _, _, raw = post_json(srv, "/api/chat", {"model": model, "stream": False, "tools": [TOOL], "messages": [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "x", "arguments": {}}},
                                                                    {"function": {"name": "y", "arguments": {}}}]},
                {"role": "user", "content": "b"}]})
            if family == "llama3":
                check(st == 400 and "one tool call" in raw.decode(),
                      "llama3: two calls in one turn, which its template refuses: 400 saying so (%d %r)" % (st, raw[:200]))
        finally:
            srv.stop()


GO_TEMPLATE = (
    '{{- range $i, $_ := .Messages }}{{- if eq .Role "user" }}{{ if $.Tools }}Tools: {{ $.Tools }}\n{{ end }}'
    'User: {{ .Content }}\n{{ else if eq .Role "assistant" }}Assistant: {{ if .ToolCalls }}<function_calls>'
    '{{ range .ToolCalls }}{"name": "{{ .Function.Name }}", "arguments": {{ .Function.Arguments }}}{{ end }}'
    '{{ else }}{{ .Content }}{{ end }}\n{{ else if eq .Role "tool" }}Result({{ .ToolName }}): {{ .Content }}\n'
    '{{ end }}{{ end }}Assistant: ')
GO_REPLY = 'Let me check. <function_calls>{"name": "get_weather", "arguments": {"city": "Paris"}}'


def go_template_side(anvil, work, gguf):
    import ollama
    store = os.path.join(work, "go-store")
    os.makedirs(store, exist_ok=True)
    mf = os.path.join(store, "Modelfile")
    with open(mf, "w") as f:
        f.write('FROM %s\nTEMPLATE """%s"""\n' % (gguf, GO_TEMPLATE))
    p = subprocess.run([anvil, "create", "gotools", "-f", mf], env=dict(os.environ, ANVIL_MODELS=store, HOME=store),
                       capture_output=True, text=True, timeout=120)
    if not check(p.returncode == 0, "anvil create with a tools TEMPLATE (%s)" % p.stderr[-300:]):
        return
    with open(mf, "w") as f:   # fill-in-the-middle: Ollama's "insert" capability
        f.write('FROM %s\nTEMPLATE """<|fim_prefix|>{{ .Prompt }}<|fim_suffix|>{{ .Suffix }}<|fim_middle|>"""\n' % gguf)
    env = dict(os.environ, ANVIL_MODELS=store, HOME=store)
    p = subprocess.run([anvil, "create", "gofim", "-f", mf], env=env, capture_output=True, text=True, timeout=120)
    out = subprocess.run([anvil, "show", "gofim"], env=env, capture_output=True, text=True, timeout=120).stdout
    check(p.returncode == 0 and out.split("Capabilities", 1)[-1].split()[:2] == ["completion", "insert"],
          "anvil show: a TEMPLATE with .Suffix lists insert (%r)" % out[-200:])
    srv = Server(anvil, env={"ANVIL_TEST_REPLAY": GO_REPLY}, models_dir=store)
    try:
        cl = ollama.Client(host=srv.base)
        check(list(cl.show("gotools").capabilities or []) == ["completion", "tools"],
              "go template: capabilities completion, tools (.Tools in the TEMPLATE)")
        check(list(cl.show("gofim").capabilities or []) == ["completion", "insert"],
              "go template: capabilities completion, insert (.Suffix in the TEMPLATE)")
        msgs = [{"role": "user", "content": "Weather in Paris?"}]
        r = cl.chat(model="gotools", messages=msgs, tools=[TOOL])
        calls = r.message.tool_calls or []
        check(r.message.content == "Let me check. " and len(calls) == 1 and calls[0].function.name == "get_weather" and
              dict(calls[0].function.arguments) == {"city": "Paris"},
              "go template: the text before the template's tag is content, the call after it a tool call (%r)"
              % (r.message,))
        content, got = "", []
        for ch in cl.chat(model="gotools", messages=msgs, tools=[TOOL], stream=True):
            content += ch.message.content or ""
            got += ch.message.tool_calls or []
        check(content == "Let me check. " and len(got) == 1, "go template stream: same split (%r, %r)" % (content, got))
        r0 = cl.chat(model="gotools", messages=msgs)
        check(r0.message.content == GO_REPLY and not r0.message.tool_calls,
              "go template without tools: the tag stays text (%r)" % (r0.message,))
        msgs2 = msgs + [{"role": "assistant", "content": "", "tool_calls": [c.model_dump(exclude_none=True) for c in calls]},
                        {"role": "tool", "content": "18C", "tool_name": "get_weather"}]
        r2 = cl.chat(model="gotools", messages=msgs2, tools=[TOOL])
        check(r2.done and r2.prompt_eval_count > 0 and len(r2.message.tool_calls or []) == 1,
              "go template round trip: the call and Result(get_weather) rendered back, answered (%r)" % r2.done_reason)
    finally:
        srv.stop()


MINISTRAL_REPLY = '[THINK]Need the weather.[/THINK][TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}'


def ministral_side(anvil, work):
    """Ministral 3 (mistral3): [THINK], [TOOL_CALLS] and [ARGS] are control tokens that the reply
    must show (prompt_shown_specials) for the parser to split thinking and the call."""
    import ollama
    model = os.path.join(work, "mistral3.gguf")
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_test_model.py"), "--family", "mistral3", "--preset",
                    "tiny", "--type", "q8_0", "--out", model, "--if-changed"], check=True, capture_output=True)
    srv = Server(anvil, env={"ANVIL_TEST_REPLAY": MINISTRAL_REPLY})
    try:
        cl = ollama.Client(host=srv.base)
        check(list(cl.show(model).capabilities or []) == ["completion", "tools", "thinking"],
              "ministral3: capabilities completion, tools, thinking")
        r = cl.chat(model=model, messages=[{"role": "user", "content": "Weather in Paris?"}], tools=[TOOL])
        calls = r.message.tool_calls or []
        check(len(calls) == 1 and calls[0].function.name == "get_weather" and
              dict(calls[0].function.arguments) == {"city": "Paris"} and r.message.content == "" and
              r.message.thinking == "Need the weather.",
              "ministral3 chat: the thinking and the [TOOL_CALLS]name[ARGS] call (%r)" % (r.message,))
    finally:
        srv.stop()


QWEN35_REPLY = ("Need the weather.\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
                "</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>")
GEMMA4_REPLY = ('<|channel>thought\nNeed the weather.<channel|><|tool_call>call:get_weather{city:<|"|>Paris<|"|>,'
                'days:3}<tool_call|>')


def think_formats_side(anvil, work):
    """Gemma 4 and Qwen 3.5: a tiny qwen3-shaped model carrying the official template (the copy
    in tests/prompt/jinja_think_goldens.json) is detected as the format; /api/show and `anvil
    show` list tools and thinking; a replayed reply's thinking and call come back split, whole
    and streamed (Qwen 3.5: the prompt opened <think>, the XML call's days typed by the
    schema); the call and its result render back; without tools the markers stay text."""
    import ollama
    with open(os.path.join(ROOT, "tests", "prompt", "jinja_think_goldens.json"), encoding="utf-8") as f:
        templates = json.load(f)["templates"]
    tool = {"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city",
                                             "parameters": {"type": "object", "required": ["city"], "properties": {
                                                 "city": {"type": "string"}, "days": {"type": "integer"}}}}}
    for fmt, fname, reply, think in (("qwen35", "Qwen3.5-4B.jinja", QWEN35_REPLY, None),
                                     ("gemma4", "google-gemma-4-31B-it.jinja", GEMMA4_REPLY, True)):
        tfile = os.path.join(work, fname)
        with open(tfile, "w", encoding="utf-8") as f:
            f.write(templates[fname])
        model = os.path.join(work, "%s-template.gguf" % fmt)
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_test_model.py"), "--family", "qwen3",
                        "--preset", "tiny", "--type", "q8_0", "--chat-template-file", tfile, "--out", model,
                        "--if-changed"], check=True, capture_output=True)
        out = subprocess.run([anvil, "show", model], capture_output=True, text=True, timeout=120).stdout
        caps = out.split("Capabilities", 1)[1].split() if "Capabilities" in out else []
        check(("chat format          %s" % fmt) in out and caps[:3] == ["completion", "tools", "thinking"],
              "%s: anvil show names the format and lists completion, tools, thinking (%r)" % (fmt, caps[:3]))
        srv = Server(anvil, env={"ANVIL_TEST_REPLAY": reply})
        try:
            cl = ollama.Client(host=srv.base)
            check(list(cl.show(model).capabilities or []) == ["completion", "tools", "thinking"],
                  "%s /api/show: capabilities completion, tools, thinking" % fmt)
            r = cl.chat(model=model, messages=[{"role": "user", "content": "Weather in Paris?"}], tools=[tool],
                        think=think)
            calls = r.message.tool_calls or []
            check(len(calls) == 1 and calls[0].function.name == "get_weather" and
                  dict(calls[0].function.arguments) == {"city": "Paris", "days": 3} and r.message.content == "" and
                  (r.message.thinking or "").strip() == "Need the weather.",
                  "%s chat: the thinking and the call get_weather(city=Paris, days=3) (%r)" % (fmt, r.message))
            thinking, content, got = "", "", []
            for ch in cl.chat(model=model, messages=[{"role": "user", "content": "Weather in Paris?"}], tools=[tool],
                              think=think, stream=True):
                thinking += ch.message.thinking or ""
                content += ch.message.content or ""
                got += ch.message.tool_calls or []
            check(thinking.strip() == "Need the weather." and content == "" and len(got) == 1 and
                  dict(got[0].function.arguments) == {"city": "Paris", "days": 3},
                  "%s chat streamed: the same thinking and call (%r, %r, %r)" % (fmt, thinking, content, got))
            msgs = [{"role": "user", "content": "Weather in Paris?"},
                    {"role": "assistant", "content": "", "thinking": "Need the weather.",
                     "tool_calls": [c.model_dump(exclude_none=True) for c in calls]},
                    {"role": "tool", "content": "18C", "tool_name": "get_weather"}]
            r2 = cl.chat(model=model, messages=msgs, tools=[tool], think=think)
            check(r2.done and r2.prompt_eval_count > 0, "%s round trip: the call and its result rendered back (%r)"
                  % (fmt, r2.done_reason))
            if fmt == "gemma4":   # think unset: Ollama drops the thought channel
                r = cl.chat(model=model, messages=[{"role": "user", "content": "Weather in Paris?"}], tools=[tool])
                check(not r.message.thinking and len(r.message.tool_calls or []) == 1,
                      "gemma4 chat, think unset: the channel dropped, the call kept (%r)" % (r.message,))
            r = cl.chat(model=model, messages=[{"role": "user", "content": "Weather in Paris?"}], think=think)
            check(not r.message.tool_calls and r.message.content,
                  "%s chat without tools: the call markers stay text (%r)" % (fmt, r.message.content[:80]))
        finally:
            srv.stop()


def main():
    anvil, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    qwen = make(work, "qwen3", "qwen3")
    gemma = make(work, "gemma3")
    node_dir = os.path.join(work, "node") if node_install(os.path.join(work, "node")) else None
    srv = Server(anvil, env={"ANVIL_TEST_REPLAY": CALL_REPLY})
    try:
        check("ANVIL_TEST_REPLAY is set" in srv.log(), "the server warns that replies are replayed")
        ollama_side(srv, qwen)
        openai_side(srv, qwen)
        refusals(srv, gemma, qwen)
        if node_dir:
            node_side(srv, node_dir, qwen, True, "The user wants the weather.\n",
                      '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>', "qwen3")
    finally:
        srv.stop()
    srv = Server(anvil, env={"ANVIL_TEST_REPLAY": THINK_REPLY})
    try:
        st, _, o, raw = post_json(srv, "/api/generate", {"model": qwen, "prompt": "hi", "stream": False})
        check(st == 200 and o.get("thinking") == "hmm, a greeting" and
              o.get("response") == 'Hello! <tool_call>{"name": "x"}</tool_call>',
              "generate: thinking split out; without tools a <tool_call> stays text (%r)" % raw[:300])
        st, _, o, raw = post_json(srv, "/api/generate", {"model": qwen, "prompt": "hi", "stream": False, "think": False})
        check(st == 200 and "thinking" not in o and o.get("response", "").startswith("<think>"),
              "generate think false: nothing is split (%r)" % raw[:200])
        # `anvil run` through the server: Ollama's CLI shape for the trace, --hidethinking
        env = dict(os.environ, ANVIL_HOST=srv.host, HOME=srv.env["HOME"], ANVIL_MODELS=srv.env["ANVIL_MODELS"])
        runs = {}
        for flag in ("", "--hidethinking"):
            r = subprocess.run([anvil, "run", qwen, "hi"] + ([flag] if flag else []), env=env, capture_output=True,
                               text=True, timeout=120)
            runs[flag] = (r.returncode, r.stdout)
        want = 'Thinking...\nhmm, a greeting\n...done thinking.\n\nHello! <tool_call>{"name": "x"}</tool_call>\n'
        check(runs[""] == (0, want), "anvil run prints the trace as Ollama does (%r)" % (runs[""],))
        check(runs["--hidethinking"] == (0, 'Hello! <tool_call>{"name": "x"}</tool_call>\n'),
              "anvil run --hidethinking prints only the answer (%r)" % (runs["--hidethinking"],))
    finally:
        srv.stop()
    harmony_side(anvil, work, node_dir)
    go_template_side(anvil, work, qwen)
    families_side(anvil, work)
    ministral_side(anvil, work)
    think_formats_side(anvil, work)
    finish()


if __name__ == "__main__":
    main()
