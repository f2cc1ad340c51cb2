#!/usr/bin/env python3
"""jinja_tools_render: writes tests/prompt/jinja_tools_goldens.json, the official Jinja chat
templates (the copies llama.cpp ships in models/templates/ and renders with --jinja) applied
to conversations with tools, tool calls, tool results, thinking and reasoning levels, by
Python's jinja2 set up as Hugging Face's apply_chat_template sets it up (trim_blocks,
lstrip_blocks, loopcontrols, tojson = json.dumps(ensure_ascii=False) keeping key order,
raise_exception, strftime_now pinned to 2026-01-02). test_chat_jinja_tools.c renders the
same cases with Anvil's formats (chat_apply_ex) and compares byte for byte. Regenerate:

  python3 tests/prompt/jinja_tools_render.py ~/.cache/llamacpp-current/src/llama.cpp/models/templates \
      > tests/prompt/jinja_tools_goldens.json

Each case: {"format": Anvil's format name, "template": the file, "messages": [...] in
Ollama's shape (what chat_message carries), "tools": bool, "think": "low"|..|null,
"out": text}."""
import json
import os
import sys

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

DATE = "2026-01-02"
TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather in a city",
        "parameters": {"type": "object", "required": ["city"], "properties": {
            "city": {"type": "string", "description": "The city name"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
            "days": {"type": "integer", "default": 1},
            "hourly": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "where": {"type": "object", "required": ["lat"], "properties": {
                "lat": {"type": "number"}, "lon": {"type": "number"}}},
            "note": {"type": "string", "nullable": True},
            "mode": {"type": ["string", "number"]},
            "points": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "number"}}}},
        }}}},
    {"type": "function", "function": {"name": "now", "description": "The time now",
                                      "parameters": {"type": "object", "properties": {}}}},
]
CALL = {"function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}
# Ollama's message shape: role, content, thinking, tool_calls, tool_name
CONVERSATIONS = [
    [{"role": "user", "content": "Weather in Paris?"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"}],
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
]
# (Anvil format name, template file, its extra kwargs per think level)
TEMPLATES = [
    ("gpt-oss", "openai-gpt-oss-120b.jinja"),
]
THINK = {"gpt-oss": [None, "low", "high"]}


def tojson(x, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(msg):
    raise jinja2.exceptions.TemplateError(msg)


def env():
    e = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    e.filters["tojson"] = tojson
    e.globals["raise_exception"] = raise_exception
    e.globals["strftime_now"] = lambda fmt: DATE if fmt == "%Y-%m-%d" else fmt
    return e


def hf_messages(conv):
    """Ollama's shape -> the Hugging Face messages the template reads (calls typed, no empty keys)."""
    out = []
    for m in conv:
        h = {"role": m["role"], "content": m["content"]}
        if m.get("thinking"):
            h["thinking"] = m["thinking"]
        if m.get("tool_calls"):
            h["tool_calls"] = [{"type": "function", "function": c["function"]} for c in m["tool_calls"]]
        out.append(h)
    return out


def main():
    tdir = sys.argv[1]
    e = env()
    cases = []
    for fmt, fname in TEMPLATES:
        with open(os.path.join(tdir, fname)) as f:
            t = e.from_string(f.read())
        for ci, conv in enumerate(CONVERSATIONS):
            for with_tools in (False, True):
                for think in THINK.get(fmt, [None]):
                    kw = {"messages": hf_messages(conv), "add_generation_prompt": True,
                          "bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"}
                    if with_tools:
                        kw["tools"] = TOOLS
                    if think:
                        kw["reasoning_effort"] = think
                    cases.append({"format": fmt, "template": fname, "conv": ci, "tools": with_tools, "think": think,
                                  "out": t.render(**kw)})
    json.dump({"date": DATE, "tools": TOOLS, "conversations": CONVERSATIONS, "cases": cases}, sys.stdout,
              indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
