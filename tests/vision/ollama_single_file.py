#!/usr/bin/env python3
"""ollama_single_file: Ollama's single-file vision GGUF (text model and vision tower in one file,
Ollama's key and tensor names: gemma3, qwen25vl, qwen3vl, qwen35 or gemma4, following the fixture's files;
tools/make_test_ollama_vision.py writes it from the fixture's two files, same weights) read by
engine/vision (vision_ollama.c) and engine/model (model_ollama.c):
- vision_dump on the single file (as model and projector) gives exactly the image embeddings and
  the logits of the two-file layout (the text side read with the defaults Ollama gives the keys its
  converter leaves out: engine/model/model_ollama.c);
- `anvil run FILE "<image> Describe it."` finds the projector in the model file itself (no
  --mmproj, nothing next to it) and gives llama-mtmd-cli's greedy reply (the committed text);
- a single file with a vision tensor missing (Ollama's name for it) or a bad key (gemma3: a
  tokens_per_image that does not pool the patch grid; qwen25vl: no rope.mrope_section; qwen3vl:
  deepstack_visual_indexes out of order; qwen35: head_count_kv all 0; gemma4: no vision
  feed_forward_length) is one line naming the problem.

  ollama_single_file.py --dump VISION_DUMP --anvil ANVIL --tools TOOLS_DIR --base BASE --greedy GREEDY.txt --prompt P"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
from common import check, finish  # noqa: E402
import gguf  # noqa: E402
from PIL import Image  # noqa: E402

ap = argparse.ArgumentParser()
for a in ("--dump", "--anvil", "--tools", "--base", "--greedy", "--prompt"):
    ap.add_argument(a, required=True)
args = ap.parse_args()
tmp = tempfile.mkdtemp(prefix="anvil-ollama-vision-")
single = os.path.join(tmp, "ollama-single.gguf")
subprocess.run([sys.executable, os.path.join(args.tools, "make_test_ollama_vision.py"), "--model", args.base + ".gguf",
                "--mmproj", args.base + "-mmproj.gguf", "--out", single], check=True)


def dump(model, proj, env=None):
    r = subprocess.run([args.dump, model, proj, args.base + ".ppm", args.prompt], capture_output=True, text=True, env=env)
    return r.returncode, (json.loads(r.stdout) if r.returncode == 0 else None), r.stderr


rc2, two, err2 = dump(args.base + ".gguf", args.base + "-mmproj.gguf")
rc1, one, err1 = dump(single, single)
check(rc2 == 0 and rc1 == 0, "vision_dump runs on both layouts (%d %d: %s)" % (rc2, rc1, (err1 or err2).strip()[-300:]))
if rc1 == 0 and rc2 == 0:
    def image(d):
        return [c for c in d["chunks"] if c["type"] == "image"][0]
    ia, ib = image(two), image(one)
    check(ia["n_tokens"] == ib["n_tokens"] and ia["embd"] == ib["embd"],
          "the single file's image embeddings equal the two-file layout's (%d rows of %d floats)"
          % (ib["n_tokens"], len(ib["embd"]) // max(1, ib["n_tokens"])))
    la = [c.get("logits") for c in two["chunks"] if c["type"] == "text"]
    lb = [c.get("logits") for c in one["chunks"] if c["type"] == "text"]
    check(la == lb, "and the logits of the text around the image")

with open(args.greedy, "rb") as f:
    want = f.read().strip(b"\n").decode(errors="replace")
png = os.path.join(tmp, "picture.png")
Image.open(args.base + ".ppm").save(png)
env = dict(os.environ, HOME=tmp, ANVIL_MODELS=os.path.join(tmp, "store"), ANVIL_BACKEND="cpu")
for k in ("OLLAMA_MODELS", "OLLAMA_HOST", "ANVIL_HOST"):
    env.pop(k, None)
r = subprocess.run([args.anvil, "run", single, "--local", "%s Describe it." % png, "-n", "12", "--temp", "0"],
                   capture_output=True, env=env, timeout=300)
out = r.stdout.strip(b"\n").decode(errors="replace")
check(r.returncode == 0 and out == want, "anvil run on the single file (its own projector): llama-mtmd-cli's reply (%d %r vs %r; %s)"
      % (r.returncode, out, want, r.stderr.decode(errors="replace").strip()[-300:]))


def variant(path, drop=None, key=None, value=None):
    """The single file again, without tensor drop, with metadata key set to value (None: left out)."""
    rd = gguf.GGUFReader(single)
    arch = rd.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(path, arch)
    for fl in rd.fields.values():
        if fl.name.startswith("GGUF.") or fl.name == "general.architecture" or (fl.name == key and value is None):
            continue
        vt = fl.types[0]
        val = value if fl.name == key else fl.contents()
        w.add_key_value(fl.name, val, vt, sub_type=fl.types[-1] if vt == gguf.GGUFValueType.ARRAY else None)
    for t in rd.tensors:
        if t.name != drop:
            w.add_tensor(t.name, t.data, raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return arch


BAD = {
    "gemma3": (("a missing vision tensor", {"drop": "v.blk.1.mlp.fc1.weight"}, "tensor 'v.blk.1.mlp.fc1.weight' is missing"),
               ("tokens_per_image not a pooling of the grid", {"key": "gemma3.mm.tokens_per_image", "value": 15},
                "gemma3.mm.tokens_per_image = 15")),
    "qwen25vl": (("a missing merger norm", {"drop": "v.merger.ln_q.weight"}, "tensor 'v.merger.ln_q.weight' is missing"),
                 ("no M-RoPE sections", {"key": "qwen25vl.rope.mrope_section"}, "missing metadata key qwen25vl.rope.mrope_section")),
    "qwen3vl": (("a missing deepstack tensor", {"drop": "v.deepstack_merger.1.linear_fc1.weight"},
                 "tensor 'v.deepstack_merger.1.linear_fc1.weight' is missing"),
                ("a missing Conv3D patch kernel", {"drop": "v.patch_embed.weight"}, "tensor 'v.patch_embed.weight' is missing"),
                ("deepstack indexes out of order", {"key": "qwen3vl.vision.deepstack_visual_indexes", "value": [1, 0]},
                 "qwen3vl.vision.deepstack_visual_indexes must be increasing")),
    "qwen35": (("a missing vision MLP tensor", {"drop": "v.blk.1.mlp.linear_fc2.weight"}, "tensor 'v.blk.1.mlp.linear_fc2.weight' is missing"),
               ("no attention layer in head_count_kv", {"key": "qwen35.attention.head_count_kv", "value": [0, 0, 0, 0, 0]},
                "qwen35.attention.head_count_kv has no attention layer")),
    "gemma4": (("a missing vision FFN tensor", {"drop": "v.blk.1.ffn_gate.weight"}, "v.blk.1.ffn_gate.weight"),
               ("no vision feed_forward_length", {"key": "gemma4.vision.feed_forward_length"},
                "missing metadata key gemma4.vision.feed_forward_length")),
}
arch = gguf.GGUFReader(single).fields["general.architecture"].contents()
check(arch in BAD, "the single file's architecture %r is one of %s" % (arch, sorted(BAD)))
for what, kw, words in BAD.get(arch, ()):
    bad = os.path.join(tmp, "bad.gguf")
    variant(bad, **kw)
    # vision_dump returns from main on a load error without freeing what it loaded (a test
    # tool's exit, not the engine's): no leak report for these runs under ASan
    asan = os.environ.get("ASAN_OPTIONS", "")
    rc, _, err = dump(bad, bad, dict(os.environ, ASAN_OPTIONS=(asan + ":" if asan else "") + "detect_leaks=0"))
    lines = [ln for ln in err.splitlines() if ln.strip()]
    check(rc != 0 and len(lines) == 1 and words in lines[0], "%s: one line naming it (%d %r)" % (what, rc, err[-300:]))
shutil.rmtree(tmp, ignore_errors=True)
finish()
