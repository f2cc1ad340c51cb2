#!/usr/bin/env python3
"""llamacpp_render: writes tests/prompt/llamacpp_chat_goldens.json, llama.cpp's own rendering
of a fixed set of conversations in every built-in chat template it lists (libllama's public
llama_chat_builtin_templates + llama_chat_apply_template, called through ctypes; no model is
loaded). test_chat_llamacpp.c renders the same conversations with Anvil's formats and
compares byte for byte. Regenerate after a llama.cpp update:

  python3 tests/prompt/llamacpp_render.py \
      ~/.cache/llamacpp-current/src/llama.cpp/build-cpu/bin/libllama.so \
      > tests/prompt/llamacpp_chat_goldens.json

Each golden: {"template": name, "conv": index into "conversations", "add_ass": bool,
"out": text} or "error": true where llama.cpp refuses (e.g. a role the format lacks)."""
import ctypes
import json
import sys

# The conversations. Whitespace around some contents shows which formats trim.
CONVERSATIONS = [
    [["system", "You are a helpful assistant"], ["user", "Hello"], ["assistant", "  Hi there  "],
     ["user", "Who are you"]],
    [["user", "Hello"]],
    [["system", "Be brief."], ["user", " What is 2+2? "]],
    [["user", "Hello"], ["assistant", "Hi!"], ["user", "Tell me a joke\n"], ["assistant", "No."],
     ["user", "Please"]],
    # llama.cpp's own tests/test-chat-template.cpp conversation
    [["system", "You are a helpful assistant"], ["user", "Hello"], ["assistant", "Hi there"],
     ["user", "Who are you"], ["assistant", "   I am an assistant   "], ["user", "Another question"]],
]


class Msg(ctypes.Structure):
    _fields_ = [("role", ctypes.c_char_p), ("content", ctypes.c_char_p)]


def main():
    lib = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else "libllama.so")
    lib.llama_chat_builtin_templates.restype = ctypes.c_int32
    lib.llama_chat_builtin_templates.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t]
    lib.llama_chat_apply_template.restype = ctypes.c_int32
    lib.llama_chat_apply_template.argtypes = [ctypes.c_char_p, ctypes.POINTER(Msg), ctypes.c_size_t,
                                              ctypes.c_bool, ctypes.c_char_p, ctypes.c_int32]
    n = lib.llama_chat_builtin_templates(None, 0)
    names_arr = (ctypes.c_char_p * n)()
    lib.llama_chat_builtin_templates(names_arr, n)
    names = [names_arr[i].decode() for i in range(n)]
    goldens = []
    for name in names:
        for ci, conv in enumerate(CONVERSATIONS):
            msgs = (Msg * len(conv))(*[Msg(r.encode(), c.encode()) for r, c in conv])
            for add_ass in (True, False):
                buf = ctypes.create_string_buffer(1 << 16)
                r = lib.llama_chat_apply_template(name.encode(), msgs, len(conv), add_ass, buf, len(buf))
                g = {"template": name, "conv": ci, "add_ass": add_ass}
                if r < 0:
                    g["error"] = True
                else:
                    g["out"] = buf.raw[:r].decode("utf-8")
                goldens.append(g)
    json.dump({"generator": "tests/prompt/llamacpp_render.py", "templates": names,
               "conversations": CONVERSATIONS, "goldens": goldens},
              sys.stdout, ensure_ascii=False, indent=0)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
