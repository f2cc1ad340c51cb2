#!/usr/bin/env python3
"""make_test_ollama_vision: one GGUF in the layout of Ollama's library vision models (gemma3: the
text model and its vision tower in one file), from a text model GGUF and a projector GGUF in
llama.cpp's layout (tools/make_test_model.py, tools/make_test_mmproj.py), same weights. The
layout is Ollama's converter's (convert/convert_gemma3.go: KV() and Replacements()):
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

  make_test_ollama_vision.py --model text.gguf --mmproj mmproj.gguf --out single.gguf
"""
import argparse
import sys

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--mmproj", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    text, proj = gguf.GGUFReader(a.model), gguf.GGUFReader(a.mmproj)
    if scalar(text, "general.architecture") != "gemma3" or scalar(proj, "clip.projector_type") != "gemma3":
        sys.exit("make_test_ollama_vision: needs a gemma3 text model and a gemma3 projector")
    w = gguf.GGUFWriter(a.out, "gemma3")
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
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
