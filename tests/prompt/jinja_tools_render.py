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
"out": text}; "templates" holds each template's text (Anvil reads the Llama 3.2 date rule from it).
Llama 3 and Mistral cases all have tools or calls (their plain turns are llama.cpp's built-in
formats, test_chat_llamacpp)."""
import datetime
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
    ("llama3", "meta-llama-Llama-3.1-8B-Instruct.jinja"),
    ("llama3", "meta-llama-Llama-3.2-3B-Instruct.jinja"),
    ("mistral-v3-tekken", "mistralai-Mistral-Nemo-Instruct-2407.jinja"),
    ("ministral3", "mistralai-Ministral-3-14B-Reasoning-2512.jinja"),
    ("ministral3", "unsloth-mistral-Devstral-Small-2507.jinja"),
    ("ministral3", "Mistral-Small-3.2-24B-Instruct-2506.jinja"),
]
# formats whose plain turns stay llama.cpp's built-in rendering: only cases with tools or calls
TOOLS_ONLY = {"llama3", "mistral-v3-tekken"}
THINK = {"gpt-oss": [None, "low", "high"]}


def tojson(x, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(msg):
    raise jinja2.exceptions.TemplateError(msg)


def env():
    e = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    e.filters["tojson"] = tojson
    e.globals["raise_exception"] = raise_exception
    e.globals["strftime_now"] = lambda fmt: datetime.date.fromisoformat(DATE).strftime(fmt)
    return e


def hf_messages(conv):
    """Ollama's shape -> the Hugging Face messages the template reads (calls typed, no empty keys).
    Mistral wants 9-character ids: calls are numbered 000000001.. in order and each tool result
    takes the oldest unanswered one (what Anvil's renderer does for Ollama's id-less messages)."""
    out, n_ids, answered = [], 0, 0
    for m in conv:
        h = {"role": m["role"], "content": m["content"]}
        if m.get("thinking"):
            h["thinking"] = m["thinking"]
        if m.get("tool_calls"):
            h["tool_calls"] = []
            for c in m["tool_calls"]:
                n_ids += 1
                h["tool_calls"].append({"type": "function", "function": c["function"], "id": "%09d" % n_ids})
        if m["role"] == "tool":
            answered += 1
            h["tool_call_id"] = "%09d" % answered
        out.append(h)
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
                if fmt in TOOLS_ONLY and not with_tools and not any(m.get("tool_calls") for m in conv):
                    continue
                for think in THINK.get(fmt, [None]):
                    kw = {"messages": hf_messages(conv), "add_generation_prompt": True,
                          "bos_token": "", "eos_token": "</s>"}   # Anvil's prompt text has no BOS
                    if with_tools:
                        kw["tools"] = TOOLS
                    if think:
                        kw["reasoning_effort"] = think
                    cases.append({"format": fmt, "template": fname, "conv": ci, "tools": with_tools, "think": think,
                                  "out": t.render(**kw)})
    json.dump({"date": DATE, "tools": TOOLS, "conversations": CONVERSATIONS, "templates": texts, "cases": cases},
              sys.stdout,
              indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
