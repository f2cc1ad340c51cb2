#!/usr/bin/env python3
"""hybrid_parallel: a hybrid (recurrent + attention) model served to several clients at once:
4 parallel streams of a qwen35 model (4 slots batched in one forward pass, each with its own
recurrent state) give the same text as the same 4 requests one after another (temperature 0),
and a follow-up that extends one conversation (prefix reuse through a state checkpoint) gives
the same text as a fresh server (issue 33). Ollama forces one sequence at a time for these
models; Anvil batches them.

usage: hybrid_parallel.py ANVIL_BINARY QWEN35_MODEL.gguf
"""
import json
import os
import sys
import threading

from common import Server, check, finish, post_json

anvil, model = sys.argv[1], os.path.abspath(sys.argv[2])
PROMPTS = ["The quick brown fox", "Every layer has attention", "A small language model reads",
           "the experts of a mixture each see"]
OPTS = {"num_predict": 24, "temperature": 0, "seed": 1}


def generate(srv, prompt, out, i):
    st, _, obj, raw = post_json(srv, "/api/generate", {"model": model, "prompt": prompt, "raw": True, "stream": False,
                                                       "options": OPTS}, timeout=600)
    out[i] = obj.get("response") if st == 200 and obj else "HTTP %d %s" % (st, raw[-200:])


srv = Server(anvil, env={"ANVIL_NUM_PARALLEL": "4"})
try:
    sequential = [None] * 4
    for i, p in enumerate(PROMPTS):
        generate(srv, p, sequential, i)
    parallel = [None] * 4
    threads = [threading.Thread(target=generate, args=(srv, p, parallel, i)) for i, p in enumerate(PROMPTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        check(parallel[i] == sequential[i] and parallel[i] and not parallel[i].startswith("HTTP"),
              "stream %d: the same %d characters in parallel as alone" % (i, len(sequential[i] or "")),
              (parallel[i], sequential[i]))
    check(len(set(sequential)) > 1, "the four prompts give different texts (the slots are not mixed up)", sequential)
    # a longer prompt that starts with an earlier one: the slot's cache is reused up to a state checkpoint
    longer = [None]
    generate(srv, PROMPTS[0] + sequential[0], longer, 0)
finally:
    srv.stop()
srv = Server(anvil, env={"ANVIL_NUM_PARALLEL": "4"})
try:
    fresh = [None]
    generate(srv, PROMPTS[0] + sequential[0], fresh, 0)
    check(longer[0] == fresh[0] and fresh[0], "a follow-up after prefix reuse equals a fresh server's", (longer[0], fresh[0]))
finally:
    srv.stop()
finish()
