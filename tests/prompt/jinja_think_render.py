#!/usr/bin/env python3
"""jinja_think_render: writes tests/prompt/jinja_think_goldens.json, the goldens of the chat
formats whose prompts switch thinking on and off: Gemma 4 (google-gemma-4-31B-it.jinja and
the older -interleaved.jinja) and Qwen 3.5 (Qwen3.5-4B.jinja), the copies llama.cpp ships in
models/templates/, rendered by jinja2 set up as jinja_tools_render.py sets it up (Hugging
Face's apply_chat_template). test_chat_jinja_tools.c renders the same cases with Anvil's
formats and compares byte for byte. Regenerate:

  python3 tests/prompt/jinja_think_render.py ~/.cache/llamacpp-current/src/llama.cpp/models/templates \
      > tests/prompt/jinja_think_goldens.json

"think" is null (the request leaves it unset: enable_thinking undefined), "on" or "off"
(enable_thinking true / false). Messages are Ollama's shape (role, content, thinking,
tool_calls, tool_name); the templates read an assistant turn's thinking as reasoning_content
(Gemma 4's also as reasoning), a tool result's function from the call whose id it answers
(ids 000000001.. in order, as jinja_tools_render.hf_messages numbers them) or its name.
The interleaved Gemma 4 template gets the messages as llama.cpp gives them to it
(common/parsers/gemma4.cpp, convert_tool_responses_gemma4: an assistant turn with calls takes
the tool results after it as tool_responses [{name, response: the content parsed as JSON
if it is JSON}] and the next assistant turn's content, when that turn has no calls)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jinja_tools_render import DATE, TOOLS, env, hf_messages  # noqa: E402

CALL = {"function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}
RICH = {"function": {"name": "get_weather", "arguments": {
    "city": "New York", "hourly": True, "tags": ["a", "b c"], "where": {"lon": -2, "lat": 1.5}, "note": None}}}
NOW = {"function": {"name": "now", "arguments": {}}}
CONVERSATIONS = [
    [{"role": "user", "content": "Weather in Paris?"}],
    [{"role": "system", "content": " Be brief.\n"}, {"role": "user", "content": "Weather in Paris?"}],
    [{"role": "user", "content": "Weather in Paris?"},
     {"role": "assistant", "content": "", "thinking": "I should call the tool.", "tool_calls": [CALL]},
     {"role": "tool", "content": "18C and \"sunny\"", "tool_name": "get_weather"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"},
     {"role": "assistant", "content": "", "thinking": "Call it.", "tool_calls": [CALL]},
     {"role": "tool", "content": "18C", "tool_name": "get_weather"},
     {"role": "assistant", "content": "It is 18C.", "thinking": "Answer now."},
     {"role": "user", "content": "And tomorrow?"}],
    [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi!", "thinking": "greet"},
     {"role": "user", "content": "Bye"}],
    [{"role": "user", "content": "Weather and time?"},
     {"role": "assistant", "content": "Let me check.", "tool_calls": [CALL, NOW]},
     {"role": "tool", "content": "18C", "tool_name": "get_weather"},
     {"role": "tool", "content": "12:00", "tool_name": "now"}],
    [{"role": "user", "content": "  Weather in New York?  \n"},
     {"role": "assistant", "content": "", "thinking": "Rich call.", "tool_calls": [RICH]},
     {"role": "tool", "content": "{\"temp\": 18, \"sky\": \"sunny\", \"ok\": true}", "tool_name": "get_weather"},
     {"role": "assistant", "content": "Sunny, 18C."}],
    [{"role": "user", "content": "Hi"},
     {"role": "assistant", "content": "<|channel>thought\nold<channel|> Hello! "},
     {"role": "user", "content": "Again"},
     {"role": "assistant", "content": "<think>\nold thought\n</think>\n\nHello again."},
     {"role": "user", "content": "Bye"}],
    [{"role": "user", "content": "Plan"},
     {"role": "assistant", "content": "", "tool_calls": [NOW]},
     {"role": "tool", "content": "12:00", "tool_name": "now"},
     {"role": "assistant", "content": "", "thinking": "Second step.", "tool_calls": [CALL]},
     {"role": "tool", "content": "18C", "tool_name": "get_weather"}],
]
TEMPLATES = [
    ("gemma4", "google-gemma-4-31B-it.jinja"),
    ("gemma4", "google-gemma-4-31B-it-interleaved.jinja"),
    ("qwen35", "Qwen3.5-4B.jinja"),
]
THINK = [None, "on", "off"]


def messages_for(conv):
    out = hf_messages(conv)
    for h, m in zip(out, conv):
        if m.get("thinking"):
            h["reasoning_content"] = m["thinking"]
        if m["role"] == "tool" and m.get("tool_name"):
            h["name"] = m["tool_name"]
    return out


def gemma4_tool_responses(msgs):
    """llama.cpp's convert_tool_responses_gemma4 for the older (interleaved) template."""
    out, i = [], 0
    while i < len(msgs):
        m = msgs[i]
        if m["role"] != "assistant" or not m.get("tool_calls"):
            out.append(m)
            i += 1
            continue
        calls, responses = list(m["tool_calls"]), []
        i += 1
        while i < len(msgs) and msgs[i]["role"] == "tool":
            try:
                resp = json.loads(msgs[i]["content"])
            except ValueError:
                resp = msgs[i]["content"]
            name = ""
            if len(responses) < len(calls):
                name = calls[len(responses)]["function"].get("name", "")
            responses.append({"name": name or msgs[i].get("tool_call_id", ""), "response": resp})
            i += 1
        merged = {"role": "assistant", "tool_calls": calls}
        if responses:
            merged["tool_responses"] = responses
        if i < len(msgs) and msgs[i]["role"] == "assistant" and not msgs[i].get("tool_calls") and msgs[i]["content"]:
            merged["content"] = msgs[i]["content"]
            i += 1
        if "reasoning_content" in m:
            merged["reasoning_content"] = m["reasoning_content"]
        out.append(merged)
    return out


def main():
    tdir = sys.argv[1]
    e = env()
    cases, texts = [], {}
    for fmt, fname in TEMPLATES:
        with open(os.path.join(tdir, fname)) as f:
            texts[fname] = f.read()
        t = e.from_string(texts[fname])
        for ci, conv in enumerate(CONVERSATIONS):
            for with_tools in (False, True):
                for think in THINK:
                    msgs = messages_for(conv)
                    if "interleaved" in fname:
                        msgs = gemma4_tool_responses(msgs)
                    kw = {"messages": msgs, "add_generation_prompt": True, "bos_token": "", "eos_token": "</s>"}
                    if with_tools:
                        kw["tools"] = TOOLS
                    if think:
                        kw["enable_thinking"] = think == "on"
                    try:
                        out = t.render(**kw)
                    except Exception as ex:   # the template's own refusals
                        out = None
                        err = str(ex)
                    case = {"format": fmt, "template": fname, "conv": ci, "tools": with_tools, "think": think}
                    if out is None:
                        case["error"] = err
                    else:
                        case["out"] = out
                    cases.append(case)
    json.dump({"date": DATE, "tools": TOOLS, "conversations": CONVERSATIONS, "templates": texts, "cases": cases},
              sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
