#!/usr/bin/env python3
"""make_test_ollama_vision: one GGUF in the layout of Ollama's library vision models (the text
model and its vision tower in one file), from a text model GGUF and a projector GGUF in
llama.cpp's layout (tools/make_test_model.py, tools/make_test_mmproj.py), same weights. The
family follows the projector: gemma3, qwen2.5vl_merger (qwen25vl), qwen3vl_merger (qwen3vl).
gemma3, as Ollama's converter writes it (convert/convert_gemma3.go: KV() and Replacements()):
- the text model's metadata and tensors (general.architecture = gemma3) but the keys Ollama's
  converter does not write for a multimodal gemma3 (attention.layer_norm_rms_epsilon,
  rope.freq_base, rope.freq_base_swa): the text model's values must be the defaults Ollama gives
  them (1e-6, 1e6, 1e4), as real gemma3 models have;
- gemma3.vision.{block_count, embedding_length, feed_forward_length, image_size, patch_size,
  num_channels, attention.head_count, attention.layer_norm_epsilon} and gemma3.mm.tokens_per_image
  (the pooled rows: Ollama's runner pools patches_per_side / sqrt(tokens_per_image)), no clip.* keys
  (no image mean / std: Ollama's image processor uses 0.5, 0.5, 0.5; no projection_dim: the text
  model's embedding_length);
- the vision tensors under Ollama's names, the Hugging Face names through its replacements:
  v.patch_embedding, v.position_embedding, v.post_layernorm, v.blk.N.layer_norm1 / layer_norm2,
  v.blk.N.attn_{q,k,v,output}, v.blk.N.mlp.fc1 (n_embd -> n_ff) / mlp.fc2, mm.mm_soft_emb_norm
  (its +1 baked in, as both converters do), mm.mm_input_projection (HF's [vision, text] as is).
qwen25vl (convert/convert_qwen25vl.go: qwen2's text keys under qwen25vl.*, the M-RoPE sections
as rope.mrope_section of 3; qwen25vl.vision.{block_count, embedding_length, attention.head_count,
num_channels, patch_size, spatial_merge_size, spatial_patch_size, window_size,
attention.layer_norm_epsilon, rope.freq_base, fullatt_block_indexes, temporal_patch_size}; no
feed_forward_length, mean / std, image_size; llama.cpp's tensor names but v.patch_embd_0 / _1,
v.merger.ln_q, v.merger.mlp.0 / .2).
qwen3vl (convert/convert_qwen3vl.go as it wrote the library's files, before its two-file split,
git 9db4bdbad^: qwen3's text keys with rope.mrope_section, no rope.dimension_sections nor
n_deepstack_layers; qwen3vl.vision.{block_count, embedding_length, attention.head_count,
num_channels, patch_size, spatial_merge_size, attention.layer_norm_epsilon, rope.freq_base,
temporal_patch_size, deepstack_visual_indexes, shortest_edge, longest_edge, image_mean,
image_std}; the Hugging Face names through its replacements: v.patch_embed.weight (the Conv3D,
[p, p, 2, n_embd * 3]), v.patch_embed.bias, v.pos_embed, v.blk.N.norm1 / norm2, attn_q / k / v
(attn.qkv split in three), attn_out, mlp.linear_fc1 / fc2, v.merger.{norm, linear_fc1,
linear_fc2}, v.deepstack_merger.X.{norm, linear_fc1, linear_fc2}).
qwen35 (convert/convert_qwen3next.go before its two-file split: the text keys of the llama.cpp
file but attention.head_count_kv one per layer (0 on the recurrent ones), 3 rope sections as
rope.dimension_sections / mrope_section / mrope_sections plus rope.mrope_interleaved, no
attention.recurrent_layers (full_attention_interval says it), ssm.v_head_reordered, blk.N.ssm_dt
for ssm_dt.bias; the MTP layer left out (block_count the main layers); the vision tower as
qwen3vl's under qwen35.vision.*, deepstack_visual_indexes empty).
gemma4 (convert/convert_gemma4.go: the text keys and tensors as llama.cpp's (its
tokenizer.ggml.model 'llama' for gemma4's BPE is not written: the synthetic vocabulary is SPM);
gemma4.vision.
{block_count, embedding_length, attention.head_count, feed_forward_length, patch_size,
num_channels, projector.scale_factor, attention.layer_norm_epsilon}; llama.cpp's vision tensor
names, but the Gemma4ClippableLinear bounds (<linear>.input_min ... scalars) packed in one F32
v.clamp_data: per block, per linear q, k, v, out, gate, up, down: input min, max, output min,
max; then the projector's; all linears clamped or none, as the converter assumes).

  make_test_ollama_vision.py --model text.gguf --mmproj mmproj.gguf --out single.gguf
"""
import argparse
import sys

import numpy as np

try:
    import gguf
except ImportError:  # pragma: no cover
    sys.exit("make_test_ollama_vision: the python package 'gguf' (gguf-py) is required")

# llama.cpp's clip names -> Ollama's (prefix of the name, or a part inside v.blk.N.)
RENAMES = [("v.patch_embd.", "v.patch_embedding."), ("v.position_embd.", "v.position_embedding."),
           ("v.post_ln.", "v.post_layernorm."), ("mm.input_projection.", "mm.mm_input_projection."),
           ("mm.soft_emb_norm.", "mm.mm_soft_emb_norm.")]
BLOCK = [(".ln1.", ".layer_norm1."), (".ln2.", ".layer_norm2."), (".attn_out.", ".attn_output."),
         (".ffn_up.", ".mlp.fc1."), (".ffn_down.", ".mlp.fc2.")]


def ollama_name(name):
    for a, b in RENAMES:
        if name.startswith(a):
            return b + name[len(a):]
    if name.startswith("v.blk."):
        for a, b in BLOCK:
            if a in name:
                return name.replace(a, b, 1)
    return name


def scalar(r, key, default=None):
    f = r.fields.get(key)
    if f is None:
        if default is None:
            sys.exit("make_test_ollama_vision: %s has no %s" % (r.path, key))
        return default
    return f.contents()


def copy_kv(w, r, skip):
    for f in r.fields.values():
        if f.name.startswith("GGUF.") or f.name in skip:
            continue
        vt = f.types[0]
        sub = f.types[-1] if vt == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(f.name, f.contents(), vt, sub_type=sub)


def copy_tensor(w, t, name):
    w.add_tensor(name, t.data, raw_dtype=t.tensor_type)


def write_gemma3(w, text, proj):
    left_out = {"gemma3.attention.layer_norm_rms_epsilon": 1e-6, "gemma3.rope.freq_base": 1e6, "gemma3.rope.freq_base_swa": 1e4}
    for key, default in left_out.items():
        v = scalar(text, key, default)
        if abs(v - default) > 1e-6 * default:
            sys.exit("make_test_ollama_vision: %s = %g is not Ollama's default %g (its files do not say)" % (key, v, default))
    copy_kv(w, text, {"general.architecture"} | set(left_out))
    image, patch = scalar(proj, "clip.vision.image_size"), scalar(proj, "clip.vision.patch_size")
    merge = scalar(proj, "clip.vision.projector.scale_factor", 4)
    for key, v in (("block_count", scalar(proj, "clip.vision.block_count")),
                   ("embedding_length", scalar(proj, "clip.vision.embedding_length")),
                   ("feed_forward_length", scalar(proj, "clip.vision.feed_forward_length")),
                   ("image_size", image), ("patch_size", patch), ("num_channels", 3),
                   ("attention.head_count", scalar(proj, "clip.vision.attention.head_count"))):
        w.add_uint32("gemma3.vision." + key, v)
    w.add_float32("gemma3.vision.attention.layer_norm_epsilon", scalar(proj, "clip.vision.attention.layer_norm_epsilon"))
    w.add_uint32("gemma3.mm.tokens_per_image", (image // patch // merge) ** 2)
    for t in text.tensors:
        copy_tensor(w, t, t.name)
    for t in proj.tensors:
        copy_tensor(w, t, ollama_name(t.name))


# the text keys Ollama's qwen2 / qwen3 converters write (convert_qwen2.go, convert_qwen3.go KV())
QWEN_TEXT_KEYS = ("block_count", "context_length", "embedding_length", "feed_forward_length", "attention.head_count",
                  "attention.head_count_kv", "attention.key_length", "attention.value_length", "rope.freq_base",
                  "attention.layer_norm_rms_epsilon")


def copy_qwen_text(w, text, src_arch, arch):
    """general.* / tokenizer.* as they are, the qwen text keys renamed src_arch. -> arch., the
    M-RoPE sections as rope.mrope_section (3 entries: Ollama's converter copies the config's)."""
    copy_kv(w, text, {g for g in text.fields if g == "general.architecture" or not g.startswith(("general.", "tokenizer."))})
    for k in QWEN_TEXT_KEYS:
        f = text.fields.get(src_arch + "." + k)
        if f is not None:
            w.add_key_value(arch + "." + k, f.contents(), f.types[0])
    sec = scalar(text, src_arch + ".rope.dimension_sections")
    if len(sec) == 4 and sec[3] != 0:
        sys.exit("make_test_ollama_vision: rope.dimension_sections %s has a 4th section (Ollama's files have 3)" % sec)
    w.add_array(arch + ".rope.mrope_section", [int(x) for x in sec[:3]])
    dim = scalar(text, src_arch + ".rope.dimension_count", 0)
    n_embd, n_head = scalar(text, src_arch + ".embedding_length"), scalar(text, src_arch + ".attention.head_count")
    head = scalar(text, src_arch + ".attention.key_length", n_embd // n_head)
    if dim and dim != head:
        sys.exit("make_test_ollama_vision: rope.dimension_count %d != head size %d (Ollama's files do not say)" % (dim, head))


def vision_common(w, proj, arch):
    for key in ("block_count", "embedding_length", "attention.head_count", "patch_size"):
        w.add_uint32("%s.vision.%s" % (arch, key), scalar(proj, "clip.vision." + key))
    w.add_uint32(arch + ".vision.num_channels", 3)
    w.add_uint32(arch + ".vision.spatial_merge_size", scalar(proj, "clip.vision.spatial_merge_size", 2))
    w.add_float32(arch + ".vision.attention.layer_norm_epsilon", scalar(proj, "clip.vision.attention.layer_norm_epsilon"))
    w.add_float32(arch + ".vision.rope.freq_base", 1e4)
    w.add_uint32(arch + ".vision.temporal_patch_size", 2)
    n_text = scalar(proj, "clip.vision.projection_dim")
    return n_text


def check_same(what, got, want):
    if got != want:
        sys.exit("make_test_ollama_vision: %s = %s, but Ollama's file gives %s" % (what, got, want))


def write_qwen25vl(w, text, proj):
    if scalar(text, "general.architecture") != "qwen2vl":
        sys.exit("make_test_ollama_vision: a qwen2.5vl projector needs a qwen2vl text model")
    copy_qwen_text(w, text, "qwen2vl", "qwen25vl")
    vision_common(w, proj, "qwen25vl")
    check_same("clip.vision.projection_dim", scalar(proj, "clip.vision.projection_dim"), scalar(text, "qwen2vl.embedding_length"))
    check_same("clip.vision.image_size", scalar(proj, "clip.vision.image_size"), 560)
    for k, want in (("image_mean", [0.48145466, 0.4578275, 0.40821073]), ("image_std", [0.26862954, 0.26130258, 0.27577711])):
        if not np.allclose(scalar(proj, "clip.vision." + k), want, rtol=0, atol=1e-7):
            sys.exit("make_test_ollama_vision: clip.vision.%s is not CLIP's (what Ollama supplies)" % k)
    check_same("clip.use_silu", scalar(proj, "clip.use_silu", False), True)
    patch, n_layer, wa = scalar(proj, "clip.vision.patch_size"), scalar(proj, "clip.vision.block_count"), scalar(proj, "clip.vision.n_wa_pattern")
    full = list(range(wa - 1, n_layer, wa))
    if not full:
        sys.exit("make_test_ollama_vision: n_wa_pattern %d has no full-attention block in %d" % (wa, n_layer))
    w.add_uint32("qwen25vl.vision.spatial_patch_size", patch)
    w.add_uint32("qwen25vl.vision.window_size", scalar(proj, "clip.vision.window_size", 112))
    w.add_array("qwen25vl.vision.fullatt_block_indexes", full)
    for t in text.tensors:
        copy_tensor(w, t, t.name)
    names = {"v.patch_embd.weight": "v.patch_embd_0.weight", "v.patch_embd.weight.1": "v.patch_embd_1.weight",
             "v.post_ln.weight": "v.merger.ln_q.weight"}
    for t in proj.tensors:
        n = names.get(t.name, t.name)
        for a, b in (("mm.0.", "v.merger.mlp.0."), ("mm.2.", "v.merger.mlp.2.")):
            if n.startswith(a):
                n = b + n[len(a):]
        copy_tensor(w, t, n)


def write_qwen3vl(w, text, proj):
    if scalar(text, "general.architecture") != "qwen3vl":
        sys.exit("make_test_ollama_vision: a qwen3vl projector needs a qwen3vl text model")
    copy_qwen_text(w, text, "qwen3vl", "qwen3vl")
    vision_common(w, proj, "qwen3vl")
    check_same("clip.vision.projection_dim", scalar(proj, "clip.vision.projection_dim"), scalar(text, "qwen3vl.embedding_length"))
    check_same("clip.use_gelu", scalar(proj, "clip.use_gelu", False), True)
    n_layer = scalar(proj, "clip.vision.block_count")
    flags = scalar(proj, "clip.vision.is_deepstack_layers", [False] * n_layer)
    ds = [i for i, x in enumerate(flags) if x]
    check_same("qwen3vl.n_deepstack_layers", scalar(text, "qwen3vl.n_deepstack_layers", 0), len(ds))
    w.add_array("qwen3vl.vision.deepstack_visual_indexes", ds)
    w.add_uint32("qwen3vl.vision.shortest_edge", scalar(proj, "clip.vision.image_min_pixels", 65536))
    w.add_uint32("qwen3vl.vision.longest_edge", scalar(proj, "clip.vision.image_max_pixels", 16777216))
    w.add_array("qwen3vl.vision.image_mean", [float(x) for x in scalar(proj, "clip.vision.image_mean")])
    w.add_array("qwen3vl.vision.image_std", [float(x) for x in scalar(proj, "clip.vision.image_std")])
    for t in text.tensors:
        copy_tensor(w, t, t.name)
    write_qwen3vl_tower(w, proj, ds)


def write_qwen3vl_tower(w, proj, ds):
    """The projector's tensors under the names of Ollama's qwen3vl / qwen3.5 files."""
    by = {t.name: t for t in proj.tensors}
    k0, k1 = by["v.patch_embd.weight"], by["v.patch_embd.weight.1"]
    if k0.tensor_type != k1.tensor_type:
        sys.exit("make_test_ollama_vision: the two patch kernels differ in type")
    e = k0.data.shape[0]
    conv3d = np.stack([k0.data, k1.data], axis=2).reshape(e * 3, 2, k0.data.shape[2], k0.data.shape[3])   # HF [out*in, t, y, x]
    w.add_tensor("v.patch_embed.weight", np.ascontiguousarray(conv3d), raw_dtype=k0.tensor_type)
    block = ((".ln1.", ".norm1."), (".ln2.", ".norm2."), (".ffn_up.", ".mlp.linear_fc1."), (".ffn_down.", ".mlp.linear_fc2."))
    top = {"v.patch_embd.bias": "v.patch_embed.bias", "v.position_embd.weight": "v.pos_embed.weight"}
    for t in proj.tensors:
        n = t.name
        if n in ("v.patch_embd.weight", "v.patch_embd.weight.1"):
            continue
        if ".attn_qkv." in n:   # Ollama's converter splits attn.qkv in three along the rows
            for i, part in enumerate(np.split(t.data, 3, axis=0)):
                w.add_tensor(n.replace("attn_qkv", ("attn_q", "attn_k", "attn_v")[i]), np.ascontiguousarray(part), raw_dtype=t.tensor_type)
            continue
        if n in top:
            n = top[n]
        elif n.startswith("v.post_ln."):
            n = "v.merger.norm." + n[len("v.post_ln."):]
        elif n.startswith("mm.0.") or n.startswith("mm.2."):
            n = ("v.merger.linear_fc1." if n[3] == "0" else "v.merger.linear_fc2.") + n[5:]
        elif n.startswith("v.deepstack."):
            b, rest = n[len("v.deepstack."):].split(".", 1)
            rest = rest.replace("fc1.", "linear_fc1.").replace("fc2.", "linear_fc2.")
            n = "v.deepstack_merger.%d.%s" % (ds.index(int(b)), rest)
        elif n.startswith("v.blk."):
            for a, b in block:
                n = n.replace(a, b, 1)
        copy_tensor(w, t, n)


def write_qwen35(w, text, proj):
    arch = scalar(text, "general.architecture")
    n_layer = scalar(text, arch + ".block_count")
    nextn = scalar(text, arch + ".nextn_predict_layers", 0)
    main_layers = n_layer - nextn
    interval = scalar(text, arch + ".full_attention_interval", 4)
    recurrent = [(il + 1) % interval != 0 for il in range(main_layers)]
    flags = scalar(text, arch + ".attention.recurrent_layers", None) if arch + ".attention.recurrent_layers" in text.fields else None
    if flags is not None and [bool(x) for x in flags[:main_layers]] != recurrent:
        sys.exit("make_test_ollama_vision: attention.recurrent_layers is not full_attention_interval %d's pattern" % interval)
    n_kv = scalar(text, arch + ".attention.head_count_kv")
    sec = [int(x) for x in scalar(text, arch + ".rope.dimension_sections")]
    if len(sec) == 4 and sec[3] != 0:
        sys.exit("make_test_ollama_vision: rope.dimension_sections %s has a 4th section (Ollama's files have 3)" % sec)
    skip = {arch + "." + k for k in ("block_count", "nextn_predict_layers", "attention.recurrent_layers", "attention.head_count_kv",
                                      "rope.dimension_sections")}
    copy_kv(w, text, skip | {"general.architecture"})
    w.add_uint32(arch + ".block_count", main_layers)
    w.add_array(arch + ".attention.head_count_kv", [0 if r else n_kv for r in recurrent])
    for k in ("rope.dimension_sections", "rope.mrope_section", "mrope_sections"):
        w.add_array(arch + "." + k, sec[:3])
    w.add_bool(arch + ".rope.mrope_interleaved", True)
    if scalar(text, arch + ".ssm.time_step_rank") != scalar(text, arch + ".ssm.group_count"):
        w.add_bool(arch + ".ssm.v_head_reordered", True)
    vision_common(w, proj, arch)
    check_same("clip.vision.projection_dim", scalar(proj, "clip.vision.projection_dim"), scalar(text, arch + ".embedding_length"))
    check_same("clip.use_gelu", scalar(proj, "clip.use_gelu", False), True)
    if any(scalar(proj, "clip.vision.is_deepstack_layers", [False])):
        sys.exit("make_test_ollama_vision: qwen3.5 has no deepstack layers")
    w.add_uint32(arch + ".vision.feed_forward_length", scalar(proj, "clip.vision.feed_forward_length"))
    w.add_array(arch + ".vision.deepstack_visual_indexes", [])
    w.add_array(arch + ".vision.image_mean", [float(x) for x in scalar(proj, "clip.vision.image_mean")])
    w.add_array(arch + ".vision.image_std", [float(x) for x in scalar(proj, "clip.vision.image_std")])
    for t in text.tensors:
        if t.name.startswith("blk.") and int(t.name.split(".")[1]) >= main_layers:
            continue   # the MTP layer
        copy_tensor(w, t, t.name[:-len(".bias")] if t.name.endswith(".ssm_dt.bias") else t.name)
    write_qwen3vl_tower(w, proj, [])


G4_LINEARS = ("attn_q", "attn_k", "attn_v", "attn_out", "ffn_gate", "ffn_up", "ffn_down")
G4_BOUNDS = ("input_min", "input_max", "output_min", "output_max")


def write_gemma4(w, text, proj):
    copy_kv(w, text, {"general.architecture"})   # the synthetic vocabulary as it is (see the docstring)
    n_layer = scalar(proj, "clip.vision.block_count")
    check_same("clip.vision.projection_dim", scalar(proj, "clip.vision.projection_dim"), scalar(text, "gemma4.embedding_length"))
    for k, want in (("image_mean", [0.0] * 3), ("image_std", [1.0] * 3)):
        if list(scalar(proj, "clip.vision." + k)) != want:
            sys.exit("make_test_ollama_vision: clip.vision.%s is not %s (what Ollama supplies)" % (k, want))
    for key in ("block_count", "embedding_length", "attention.head_count", "feed_forward_length", "patch_size"):
        w.add_uint32("gemma4.vision." + key, scalar(proj, "clip.vision." + key))
    w.add_uint32("gemma4.vision.num_channels", 3)
    w.add_uint32("gemma4.vision.projector.scale_factor", scalar(proj, "clip.vision.projector.scale_factor", 3))
    w.add_float32("gemma4.vision.attention.layer_norm_epsilon", scalar(proj, "clip.vision.attention.layer_norm_epsilon"))
    for t in text.tensors:
        copy_tensor(w, t, t.name)
    by = {t.name: t for t in proj.tensors}
    bases = ["v.blk.%d.%s" % (il, lin) for il in range(n_layer) for lin in G4_LINEARS] + ["mm.input_projection"]
    names = {b + "." + x for b in bases for x in G4_BOUNDS}
    have = names & set(by)
    if have and have != names:
        sys.exit("make_test_ollama_vision: clamps on some linears only (Ollama's v.clamp_data has every one)")
    for t in proj.tensors:
        if t.name not in names:
            copy_tensor(w, t, t.name)
    if have:
        w.add_tensor("v.clamp_data", np.array([float(by[n].data[0]) for n in (b + "." + x for b in bases for x in G4_BOUNDS)],
                                              dtype=np.float32))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--mmproj", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    text, proj = gguf.GGUFReader(a.model), gguf.GGUFReader(a.mmproj)
    kind = scalar(proj, "clip.projector_type", "") or scalar(proj, "clip.vision.projector_type")
    if kind == "qwen3vl_merger" and scalar(text, "general.architecture") in ("qwen35", "qwen35moe"):
        kind = "qwen35"
    families = {"gemma3": ("gemma3", write_gemma3), "gemma4v": ("gemma4", write_gemma4), "qwen2.5vl_merger": ("qwen25vl", write_qwen25vl),
                "qwen3vl_merger": ("qwen3vl", write_qwen3vl), "qwen35": (scalar(text, "general.architecture"), write_qwen35)}
    if kind not in families:
        sys.exit("make_test_ollama_vision: projector type %s is not one of %s" % (kind, ", ".join(families)))
    arch, write = families[kind]
    if kind == "gemma3" and scalar(text, "general.architecture") != "gemma3":
        sys.exit("make_test_ollama_vision: needs a gemma3 text model and a gemma3 projector")
    w = gguf.GGUFWriter(a.out, arch)
    write(w, text, proj)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
