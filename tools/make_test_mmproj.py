#!/usr/bin/env python3
"""make_test_mmproj: deterministic random-weight projector GGUFs (general.architecture = clip) for
Anvil's vision tests, with the metadata keys and tensor names llama.cpp's converters write:
gemma3 as conversion/base.py MmprojModel + conversion/gemma.py Gemma3VisionModel (SigLIP blocks
with biases, post-LayerNorm, no pre-LayerNorm, fc1 -> ffn_up, the patch embedding as a conv
kernel, position embeddings and the soft-embedding norm in F32, the input projection in F16); gemma4
(gemma4v) as conversion/gemma.py Gemma4VisionAudioModel (write_gemma4); qwen3vl and qwen2.5vl as
conversion/qwen3vl.py and conversion/qwenvl.py (write_qwen3vl, write_qwen25vl); pixtral
(Mistral Small 3.x / pixtral-12b) as conversion/llava.py LlavaVisionModel (write_pixtral);
llava (llava-1.5's mlp projector) as tools/mtmd/legacy-models/convert_image_encoder_to_gguf.py
(CLIP: class embedding, pre-LayerNorm, quick GELU, fc1 -> ffn_down and fc2 -> ffn_up, the last
block dropped and block_count = layers - 1, no post-LayerNorm, 2-D weights F16 incl. the
position embeddings, mm.0 / mm.2); and a deterministic test image as binary PPM (P6).

  make_test_mmproj.py --family gemma3 --n-embd-text 128 --merge 2 --out mmproj.gguf
  make_test_mmproj.py --image 80x56 --out img.ppm
"""
import argparse
import hashlib
import sys

import numpy as np

try:
    import gguf
except ImportError:  # pragma: no cover
    sys.exit("make_test_mmproj: the python package 'gguf' (gguf-py) is required")

SHAPES = {
    # name: vision width, heads, ffn, blocks, image size, patch size
    "tiny":  dict(n_embd=64, n_head=4, n_ff=160, n_layer=2, image_size=64, patch_size=8),
    # a speed shape: 256 patches of 14 px, 384 wide, 4 blocks
    "bench": dict(n_embd=384, n_head=6, n_ff=1536, n_layer=4, image_size=224, patch_size=14),
}


def rng_for(seed, name):
    h = hashlib.sha256(("%d:%s" % (seed, name)).encode()).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(h[:8], "little")))


def values(seed, name, shape, scale, offset=0.0):
    return (offset + scale * rng_for(seed, name).standard_normal(shape)).astype(np.float32)


def write_gemma3(args):
    sh = dict(SHAPES[args.preset])
    if args.image_size:   # e.g. more image rows than a text batch of 512 (a real-size gemma4 photo's count)
        sh["image_size"] = args.image_size
    if args.patch_size:
        sh["patch_size"] = args.patch_size
    E, H, F, L, S, P = sh["n_embd"], sh["n_head"], sh["n_ff"], sh["n_layer"], sh["image_size"], sh["patch_size"]
    T = args.n_embd_text
    w = gguf.GGUFWriter(args.out, "clip")
    # MmprojModel.set_type / set_gguf_parameters, then Gemma3VisionModel's
    w.add_type(gguf.GGUFType.MMPROJ)
    w.add_file_type(gguf.LlamaFileType.ALL_F32 if args.type == "f32" else gguf.LlamaFileType.MOSTLY_F16)
    w.add_clip_has_vision_encoder(True)
    w.add_vision_projection_dim(T)
    w.add_vision_image_size(S)
    w.add_vision_patch_size(P)
    w.add_vision_embedding_length(E)
    w.add_vision_feed_forward_length(F)
    w.add_vision_block_count(L)
    w.add_vision_head_count(H)
    w.add_vision_image_mean([0.5, 0.5, 0.5])
    w.add_vision_image_std([0.5, 0.5, 0.5])
    w.add_clip_projector_type(gguf.VisionProjectorType.GEMMA3)
    w.add_vision_attention_layernorm_eps(1e-6)
    w.add_vision_use_gelu(True)
    if args.merge != 4:
        w.add_vision_projector_scale_factor(args.merge)
    wt = np.float32 if args.type == "f32" else np.float16
    seed = args.seed

    def mat(name, shape, scale):   # a 2-D (or conv) weight in the file's type
        w.add_tensor(name, values(seed, name, shape, scale).astype(wt))

    def vec(name, n, scale, offset=0.0):
        w.add_tensor(name, values(seed, name, (n,), scale, offset))

    n_pos = (S // P) ** 2
    mat("v.patch_embd.weight", (E, 3, P, P), 1.0 / np.sqrt(3 * P * P))   # ne [P, P, 3, E]
    vec("v.patch_embd.bias", E, 0.1)
    w.add_tensor("v.position_embd.weight", values(seed, "v.position_embd.weight", (n_pos, E), 0.5))
    for il in range(L):
        p = "v.blk.%d." % il
        for t in ("attn_q", "attn_k", "attn_v", "attn_out"):
            mat(p + t + ".weight", (E, E), 1.5 / np.sqrt(E))
            vec(p + t + ".bias", E, 0.1)
        vec(p + "ln1.weight", E, 0.2, 1.0)
        vec(p + "ln1.bias", E, 0.1)
        vec(p + "ln2.weight", E, 0.2, 1.0)
        vec(p + "ln2.bias", E, 0.1)
        mat(p + "ffn_up.weight", (F, E), 1.0 / np.sqrt(E))
        vec(p + "ffn_up.bias", F, 0.1)
        mat(p + "ffn_down.weight", (E, F), 1.0 / np.sqrt(F))
        vec(p + "ffn_down.bias", E, 0.1)
    vec("v.post_ln.weight", E, 0.2, 1.0)
    vec("v.post_ln.bias", E, 0.1)
    vec("mm.soft_emb_norm.weight", E, 0.2, 1.0)
    # HF's mm_input_projection_weight [vision, text] as it is: ne [T, E], forced F16
    w.add_tensor("mm.input_projection.weight", values(seed, "mm.input_projection.weight", (E, T), 1.0 / np.sqrt(E)).astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_llava(args):
    sh = dict(SHAPES[args.preset])
    E, H, F, L, S, P = sh["n_embd"], sh["n_head"], sh["n_ff"], sh["n_layer"] + 1, sh["image_size"], sh["patch_size"]
    T, HID = args.n_embd_text, args.n_embd_text   # the mlp's hidden width = the text width (llava-1.5)
    w = gguf.GGUFWriter(args.out, "clip")
    w.add_bool("clip.has_text_encoder", False)
    w.add_bool("clip.has_vision_encoder", True)
    w.add_bool("clip.has_llava_projector", True)
    w.add_file_type(1)
    w.add_name("test-llava")
    w.add_description("image encoder for LLaVA")
    w.add_string("clip.projector_type", "mlp")
    w.add_uint32("clip.vision.image_size", S)
    w.add_uint32("clip.vision.patch_size", P)
    w.add_uint32("clip.vision.embedding_length", E)
    w.add_uint32("clip.vision.feed_forward_length", F)
    w.add_uint32("clip.vision.projection_dim", 32)   # CLIP's visual projection (unused by llava)
    w.add_uint32("clip.vision.attention.head_count", H)
    w.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-5)
    w.add_uint32("clip.vision.block_count", L - 1)   # the last layer is popped
    w.add_array("clip.vision.image_mean", [0.48145466, 0.4578275, 0.40821073])
    w.add_array("clip.vision.image_std", [0.26862954, 0.26130258, 0.27577711])
    w.add_bool("clip.use_gelu", False)               # quick_gelu
    seed = args.seed

    def f16(name, shape, scale):
        w.add_tensor(name, values(seed, name, shape, scale).astype(np.float16))

    def f32(name, shape, scale, offset=0.0):
        w.add_tensor(name, values(seed, name, shape, scale, offset))

    # the projector first, as the script adds it before the state dict
    f16("mm.0.weight", (HID, E), 1.0 / np.sqrt(E))
    f32("mm.0.bias", (HID,), 0.1)
    f16("mm.2.weight", (T, HID), 1.0 / np.sqrt(HID))
    f32("mm.2.bias", (T,), 0.1)
    f32("v.class_embd", (E,), 0.5)
    f16("v.patch_embd.weight", (E, 3, P, P), 1.0 / np.sqrt(3 * P * P))
    f16("v.position_embd.weight", ((S // P) ** 2 + 1, E), 0.5)
    f32("v.pre_ln.weight", (E,), 0.2, 1.0)
    f32("v.pre_ln.bias", (E,), 0.1)
    for il in range(L - 1):
        p = "v.blk.%d." % il
        for t in ("attn_k", "attn_v", "attn_q", "attn_out"):
            f16(p + t + ".weight", (E, E), 1.5 / np.sqrt(E))
            f32(p + t + ".bias", (E,), 0.1)
        f32(p + "ln1.weight", (E,), 0.2, 1.0)
        f32(p + "ln1.bias", (E,), 0.1)
        f16(p + "ffn_down.weight", (F, E), 1.0 / np.sqrt(E))    # fc1
        f32(p + "ffn_down.bias", (F,), 0.1)
        f16(p + "ffn_up.weight", (E, F), 1.0 / np.sqrt(F))      # fc2
        f32(p + "ffn_up.bias", (E,), 0.1)
        f32(p + "ln2.weight", (E,), 0.2, 1.0)
        f32(p + "ln2.bias", (E,), 0.1)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_gemma4(args):
    """gemma4v as conversion/base.py MmprojModel + conversion/gemma.py Gemma4VisionAudioModel (vision
    only): clip.vision.projector_type gemma4v, image_size 224 (unused), no use_gelu key (llama.cpp: GELU
    quick), RMS norms without biases (ln1 / attn_post_norm / ln2 / ffn_post_norm, per-head q / k norms),
    a gated FFN, the per-block layer_scalar as out_scale [1], the patch embedding reshaped to a conv
    kernel, the x / y position tables [2][positions][E] forced F32, std_bias / std_scale, and
    mm.input_projection [T][E]. --clamps: Gemma4ClippableLinear's scalars (<linear>.input_min /
    input_max / output_min / output_max, F32 [1] as the converter unsqueezes them) on every linear,
    tight enough to clip some activations."""
    sh = dict(SHAPES[args.preset])
    E, H, F, L, P = sh["n_embd"], sh["n_head"], sh["n_ff"], sh["n_layer"], sh["patch_size"]
    D, T, NPOS = E // H, args.n_embd_text, 64
    w = gguf.GGUFWriter(args.out, "clip")
    w.add_type(gguf.GGUFType.MMPROJ)
    w.add_file_type(gguf.LlamaFileType.ALL_F32 if args.type == "f32" else gguf.LlamaFileType.MOSTLY_F16)
    w.add_clip_has_vision_encoder(True)
    w.add_vision_projection_dim(T)
    w.add_vision_image_size(224)
    w.add_vision_patch_size(P)
    w.add_vision_embedding_length(E)
    w.add_vision_feed_forward_length(F)
    w.add_vision_block_count(L)
    w.add_vision_head_count(H)
    w.add_vision_image_mean([0.0, 0.0, 0.0])
    w.add_vision_image_std([1.0, 1.0, 1.0])
    w.add_clip_vision_projector_type(gguf.VisionProjectorType.GEMMA4V)
    w.add_vision_attention_layernorm_eps(1e-6)
    if args.merge != 3:
        w.add_vision_projector_scale_factor(args.merge)
    wt = np.float32 if args.type == "f32" else np.float16
    seed = args.seed

    def mat(name, shape, scale):
        w.add_tensor(name, values(seed, name, shape, scale).astype(wt))

    def vec(name, n, scale, offset=0.0):
        w.add_tensor(name, values(seed, name, (n,), scale, offset))

    def clamps(base):
        if not args.clamps:
            return
        for sfx, lo in (("input", 1.0), ("output", 2.0)):
            r = rng_for(seed, base + sfx).uniform(0.0, 1.0, 2)
            w.add_tensor(base + "." + sfx + "_min", np.array([-(lo + r[0])], dtype=np.float32))
            w.add_tensor(base + "." + sfx + "_max", np.array([lo + r[1]], dtype=np.float32))

    mat("v.patch_embd.weight", (E, 3, P, P), 1.0 / np.sqrt(3 * P * P))
    w.add_tensor("v.position_embd.weight", values(seed, "v.position_embd.weight", (2, NPOS, E), 0.5))
    for il in range(L):
        p = "v.blk.%d." % il
        for t in ("attn_q", "attn_k", "attn_v", "attn_out"):
            mat(p + t + ".weight", (E, E), 1.5 / np.sqrt(E))
            clamps(p + t)
        vec(p + "attn_q_norm.weight", D, 0.2, 1.0)
        vec(p + "attn_k_norm.weight", D, 0.2, 1.0)
        vec(p + "ln1.weight", E, 0.2, 1.0)
        vec(p + "attn_post_norm.weight", E, 0.2, 1.0)
        vec(p + "ln2.weight", E, 0.2, 1.0)
        vec(p + "ffn_post_norm.weight", E, 0.2, 1.0)
        mat(p + "ffn_gate.weight", (F, E), 1.0 / np.sqrt(E))
        mat(p + "ffn_up.weight", (F, E), 1.0 / np.sqrt(E))
        mat(p + "ffn_down.weight", (E, F), 1.0 / np.sqrt(F))
        for t in ("ffn_gate", "ffn_up", "ffn_down"):
            clamps(p + t)
        vec(p + "out_scale.weight", 1, 0.1, 0.9)
    vec("v.std_bias", E, 0.3)
    vec("v.std_scale", E, 0.2, 1.0)
    mat("mm.input_projection.weight", (T, E), 1.0 / np.sqrt(E))
    clamps("mm.input_projection")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


QWEN3VL_SHAPES = {
    # vision width, heads, ffn, blocks, patch size, learned positions (a square grid)
    "tiny":  dict(E=64, H=4, F=160, L=3, P=16, NPOS=16),
    # a speed shape: 384 wide (head 64), 4 blocks, a 24 x 24 position grid
    "bench": dict(E=384, H=6, F=1536, L=4, P=16, NPOS=576),
}


def write_qwen3vl(args):
    # a qwen3-vl shaped tower: 16 px patches, a learned position grid (interpolated to the image)
    sh = QWEN3VL_SHAPES[args.preset]
    E, H, F, L, P, NPOS = sh["E"], sh["H"], sh["F"], sh["L"], sh["P"], sh["NPOS"]
    S = int(NPOS ** 0.5 * P)
    T, HID = args.n_embd_text, 4 * E   # the merger's hidden width: hidden_size * merge^2
    ds_idx = [int(x) for x in args.deepstack.split(",") if x != ""]
    w = gguf.GGUFWriter(args.out, "clip")
    w.add_type(gguf.GGUFType.MMPROJ)
    w.add_file_type(gguf.LlamaFileType.ALL_F32 if args.type == "f32" else gguf.LlamaFileType.MOSTLY_F16)
    w.add_clip_has_vision_encoder(True)
    w.add_vision_projection_dim(T)
    w.add_vision_image_size(S)
    w.add_vision_patch_size(P)
    w.add_vision_embedding_length(E)
    w.add_vision_feed_forward_length(F)
    w.add_vision_block_count(L)
    w.add_vision_head_count(H)
    w.add_vision_image_mean([0.5, 0.5, 0.5])
    w.add_vision_image_std([0.5, 0.5, 0.5])
    w.add_clip_projector_type(gguf.VisionProjectorType.QWEN3VL)
    w.add_vision_use_gelu(True)
    w.add_vision_spatial_merge_size(2)
    w.add_vision_attention_layernorm_eps(1e-6)
    if ds_idx:
        w.add_vision_is_deepstack_layers([i in ds_idx for i in range(L)])
    wt = np.float32 if args.type == "f32" else np.float16
    seed = args.seed

    def mat(name, shape, scale):
        w.add_tensor(name, values(seed, name, shape, scale).astype(wt))

    def vec(name, n, scale, offset=0.0):
        w.add_tensor(name, values(seed, name, (n,), scale, offset))

    mat("v.patch_embd.weight", (E, 3, P, P), 0.5 / np.sqrt(3 * P * P))
    mat("v.patch_embd.weight.1", (E, 3, P, P), 0.5 / np.sqrt(3 * P * P))
    vec("v.patch_embd.bias", E, 0.1)
    w.add_tensor("v.position_embd.weight", values(seed, "v.position_embd.weight", (NPOS, E), 0.5))   # always F32 (V_ENC_EMBD_POS)
    for il in range(L):
        p = "v.blk.%d." % il
        vec(p + "ln1.weight", E, 0.2, 1.0)
        vec(p + "ln1.bias", E, 0.1)
        mat(p + "attn_qkv.weight", (3 * E, E), 1.5 / np.sqrt(E))
        vec(p + "attn_qkv.bias", 3 * E, 0.1)
        mat(p + "attn_out.weight", (E, E), 1.0 / np.sqrt(E))
        vec(p + "attn_out.bias", E, 0.1)
        vec(p + "ln2.weight", E, 0.2, 1.0)
        vec(p + "ln2.bias", E, 0.1)
        mat(p + "ffn_up.weight", (F, E), 1.0 / np.sqrt(E))
        vec(p + "ffn_up.bias", F, 0.1)
        mat(p + "ffn_down.weight", (E, F), 1.0 / np.sqrt(F))
        vec(p + "ffn_down.bias", E, 0.1)
    for il in ds_idx:
        p = "v.deepstack.%d." % il
        vec(p + "norm.weight", 4 * E, 0.2, 1.0)
        vec(p + "norm.bias", 4 * E, 0.1)
        mat(p + "fc1.weight", (HID, 4 * E), 1.0 / np.sqrt(4 * E))
        vec(p + "fc1.bias", HID, 0.1)
        mat(p + "fc2.weight", (T, HID), 1.0 / np.sqrt(HID))
        vec(p + "fc2.bias", T, 0.1)
    vec("v.post_ln.weight", E, 0.2, 1.0)
    vec("v.post_ln.bias", E, 0.1)
    mat("mm.0.weight", (HID, 4 * E), 1.0 / np.sqrt(4 * E))
    vec("mm.0.bias", HID, 0.1)
    mat("mm.2.weight", (T, HID), 1.0 / np.sqrt(HID))
    vec("mm.2.bias", T, 0.1)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_qwen25vl(args):
    # a qwen2.5-vl shaped tower: 14 px patches, RMSNorms, SwiGLU, window attention (112 px
    # windows = 4 x 4 merged tokens) in all blocks but every n_wa_pattern-th
    E, H, F, L, P, WA = 64, 4, 160, 4, 14, 2
    T, HID = args.n_embd_text, 4 * E
    w = gguf.GGUFWriter(args.out, "clip")
    w.add_type(gguf.GGUFType.MMPROJ)
    w.add_file_type(gguf.LlamaFileType.ALL_F32 if args.type == "f32" else gguf.LlamaFileType.MOSTLY_F16)
    w.add_clip_has_vision_encoder(True)
    w.add_vision_projection_dim(T)
    w.add_vision_image_size(560)   # Qwen2VLVisionModel's default
    w.add_vision_patch_size(P)
    w.add_vision_embedding_length(E)
    w.add_vision_feed_forward_length(F)
    w.add_vision_block_count(L)
    w.add_vision_head_count(H)
    w.add_vision_image_mean([0.48145466, 0.4578275, 0.40821073])
    w.add_vision_image_std([0.26862954, 0.26130258, 0.27577711])
    w.add_clip_projector_type(gguf.VisionProjectorType.QWEN25VL)
    w.add_vision_use_silu(True)
    w.add_vision_n_wa_pattern(WA)
    w.add_vision_attention_layernorm_eps(1e-6)
    wt = np.float32 if args.type == "f32" else np.float16
    seed = args.seed

    def mat(name, shape, scale):
        w.add_tensor(name, values(seed, name, shape, scale).astype(wt))

    def vec(name, n, scale, offset=0.0):
        w.add_tensor(name, values(seed, name, (n,), scale, offset))

    mat("v.patch_embd.weight", (E, 3, P, P), 0.5 / np.sqrt(3 * P * P))
    mat("v.patch_embd.weight.1", (E, 3, P, P), 0.5 / np.sqrt(3 * P * P))
    for il in range(L):
        p = "v.blk.%d." % il
        vec(p + "ln1.weight", E, 0.2, 1.0)
        for t in ("attn_q", "attn_k", "attn_v"):   # the converter splits the fused qkv
            mat(p + t + ".weight", (E, E), 1.5 / np.sqrt(E))
            vec(p + t + ".bias", E, 0.1)
        mat(p + "attn_out.weight", (E, E), 1.0 / np.sqrt(E))
        vec(p + "attn_out.bias", E, 0.1)
        vec(p + "ln2.weight", E, 0.2, 1.0)
        mat(p + "ffn_gate.weight", (F, E), 1.0 / np.sqrt(E))
        vec(p + "ffn_gate.bias", F, 0.1)
        mat(p + "ffn_up.weight", (F, E), 1.0 / np.sqrt(E))
        vec(p + "ffn_up.bias", F, 0.1)
        mat(p + "ffn_down.weight", (E, F), 1.0 / np.sqrt(F))
        vec(p + "ffn_down.bias", E, 0.1)
    vec("v.post_ln.weight", E, 0.2, 1.0)
    mat("mm.0.weight", (HID, 4 * E), 1.0 / np.sqrt(4 * E))
    vec("mm.0.bias", HID, 0.1)
    mat("mm.2.weight", (T, HID), 1.0 / np.sqrt(HID))
    vec("mm.2.bias", T, 0.1)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


PIXTRAL_SHAPES = {
    # vision width, heads, ffn, blocks, patch size
    "tiny":  dict(E=64, H=4, F=160, L=2, P=8, S=1024),
    # a speed shape: 384 wide (head 64), 4 blocks, Mistral Small's 14 px patches and image size
    "bench": dict(E=384, H=6, F=1536, L=4, P=14, S=1540),
}


def write_pixtral(args):
    """pixtral as conversion/base.py MmprojModel + conversion/llava.py LlavaVisionModel (HF
    Mistral3ForConditionalGeneration / pixtral-12b): clip.projector_type pixtral, use_silu, the
    layer-norm eps, clip.vision.spatial_merge_size when the model has a patch merger (--merge > 1,
    Mistral Small 3.x; --merge 1: pixtral-12b, no merger), RMS norms without biases (v.pre_ln, ln1,
    ln2), Q / K / V / out and the SwiGLU FFN without biases, no position embeddings (2-D rope), the
    patch embedding as a conv kernel without bias, mm.input_norm + mm.patch_merger ([E][E m^2]),
    mm.1 / mm.2 (biases with --mm-bias, pixtral-12b style) and the [IMG_BREAK] row of the text
    model's token embeddings as v.token_embd.img_break [T] (F32, as the converter writes vectors)."""
    sh = PIXTRAL_SHAPES[args.preset]
    E, H, F, L, P, S = sh["E"], sh["H"], sh["F"], sh["L"], sh["P"], sh["S"]
    T, HID = args.n_embd_text, args.n_embd_text   # LlavaMultiModalProjector: hidden = text width
    M = args.merge
    w = gguf.GGUFWriter(args.out, "clip")
    w.add_type(gguf.GGUFType.MMPROJ)
    w.add_file_type(gguf.LlamaFileType.ALL_F32 if args.type == "f32" else gguf.LlamaFileType.MOSTLY_F16)
    w.add_clip_has_vision_encoder(True)
    w.add_vision_projection_dim(T)
    w.add_vision_image_size(S)   # unused by the dynamic-size preprocessing
    w.add_vision_patch_size(P)
    w.add_vision_embedding_length(E)
    w.add_vision_feed_forward_length(F)
    w.add_vision_block_count(L)
    w.add_vision_head_count(H)
    w.add_vision_image_mean([0.48145466, 0.4578275, 0.40821073])
    w.add_vision_image_std([0.26862954, 0.26130258, 0.27577711])
    w.add_clip_projector_type(gguf.VisionProjectorType.PIXTRAL)
    w.add_vision_attention_layernorm_eps(1e-5)
    w.add_vision_use_silu(True)
    if M > 1:
        w.add_vision_spatial_merge_size(M)
    wt = np.float32 if args.type == "f32" else np.float16
    seed = args.seed

    def mat(name, shape, scale):
        w.add_tensor(name, values(seed, name, shape, scale).astype(wt))

    def vec(name, n, scale, offset=0.0):
        w.add_tensor(name, values(seed, name, (n,), scale, offset))

    mat("v.patch_embd.weight", (E, 3, P, P), 1.0 / np.sqrt(3 * P * P))
    vec("v.pre_ln.weight", E, 0.2, 1.0)
    for il in range(L):
        p = "v.blk.%d." % il
        vec(p + "ln1.weight", E, 0.2, 1.0)
        for t in ("attn_q", "attn_k", "attn_v"):
            mat(p + t + ".weight", (E, E), 2.0 / np.sqrt(E))
        mat(p + "attn_out.weight", (E, E), 1.0 / np.sqrt(E))
        vec(p + "ln2.weight", E, 0.2, 1.0)
        mat(p + "ffn_gate.weight", (F, E), 1.0 / np.sqrt(E))
        mat(p + "ffn_up.weight", (F, E), 1.0 / np.sqrt(E))
        mat(p + "ffn_down.weight", (E, F), 1.0 / np.sqrt(F))
    if M > 1:
        vec("mm.input_norm.weight", E, 0.2, 1.0)
        mat("mm.patch_merger.weight", (E, E * M * M), 1.0 / np.sqrt(E * M * M))
    mat("mm.1.weight", (HID, E), 1.0 / np.sqrt(E))
    if args.mm_bias:
        vec("mm.1.bias", HID, 0.1)
    mat("mm.2.weight", (T, HID), 1.0 / np.sqrt(HID))
    if args.mm_bias:
        vec("mm.2.bias", T, 0.1)
    vec("v.token_embd.img_break", T, 0.5)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_image(args):
    wd, ht = (int(v) for v in args.image.split("x"))
    y, x = np.mgrid[0:ht, 0:wd]
    r = rng_for(args.seed, "image")
    img = np.stack([(x * 255 // max(wd - 1, 1)), (y * 255 // max(ht - 1, 1)), ((x + y) * 7) % 256], axis=-1).astype(np.int32)
    img = np.clip(img + r.integers(-40, 41, img.shape), 0, 255).astype(np.uint8)
    with open(args.out, "wb") as f:
        f.write(b"P6\n%d %d\n255\n" % (wd, ht))
        f.write(img.tobytes())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", choices=["gemma3", "gemma4", "llava", "qwen3vl", "qwen25vl", "pixtral"], default="gemma3")
    ap.add_argument("--preset", choices=sorted(SHAPES), default="tiny")
    ap.add_argument("--type", choices=["f32", "f16"], default="f32")
    ap.add_argument("--n-embd-text", type=int, default=128, help="the text model's n_embd (projection_dim)")
    ap.add_argument("--merge", type=int, default=None,
                    help="pooling kernel (clip.vision.projector.scale_factor; default gemma3 4, gemma4 3)")
    ap.add_argument("--deepstack", default="", help="qwen3vl: comma-separated block indexes with a deepstack merger")
    ap.add_argument("--mm-bias", action="store_true", help="pixtral: mm.1 / mm.2 with biases (pixtral-12b)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--image-size", type=int, help="gemma3: override the preset's image side (pixels)")
    ap.add_argument("--patch-size", type=int, help="gemma3: override the preset's patch side (pixels)")
    ap.add_argument("--clamps", action="store_true", help="gemma4: Gemma4ClippableLinear clamp scalars on every linear")
    ap.add_argument("--image", metavar="WxH", help="write a test image (binary PPM) instead")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.merge is None:
        args.merge = {"gemma4": 3, "pixtral": 2}.get(args.family, 4)
    if args.image:
        write_image(args)
    elif args.family == "llava":
        write_llava(args)
    elif args.family == "gemma4":
        write_gemma4(args)
    elif args.family == "qwen3vl":
        write_qwen3vl(args)
    elif args.family == "qwen25vl":
        write_qwen25vl(args)
    elif args.family == "pixtral":
        write_pixtral(args)
    else:
        write_gemma3(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
