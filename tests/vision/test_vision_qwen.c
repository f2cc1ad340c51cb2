/* test_vision_qwen: the qwen3vl projector's loader and layout (engine/vision/vision_qwen.c) on
 * tiny files written here with gguf_write: a valid file loads, gives clip.cpp's smart-resize
 * layouts (a multiple of patch_size * 2 per side, the [8, 4096]-token pixel budget) and encodes
 * into finite rows; malformed or unsupported files are refused with one line naming the problem
 * (merge size, a missing temporal kernel, a non-square position grid, a deepstack flag list of
 * the wrong length, a deepstack layer without its merger; a qwen2.5vl file without its window
 * pattern or with GELU instead of SwiGLU). The numbers themselves are checked
 * against llama.cpp by vision_golden_qwen* (vision.cmake). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"
#include "error.h"
#include "gguf_write.h"
#include "quant.h"
#include "testutil.h"
#include "vision.h"
#include "vision_testlib.h"

enum { Q_OK, Q_MERGE3, Q_NO_W1, Q_POS_NOT_SQUARE, Q_DS_LEN, Q_DS_MISSING, Q_V25_NO_PATTERN, Q_V25_GELU, Q_COUNT };
static const char *expect[Q_COUNT] = {
    NULL, "spatial_merge_size 3 is not supported", "'v.patch_embd.weight.1' is missing", "'v.position_embd.weight' is misshapen",
    "clip.vision.is_deepstack_layers has 1 entries for 2 blocks", "v.deepstack.1.fc1.weight",
    "missing metadata key clip.vision.n_wa_pattern", "qwen2.5vl projector without clip.use_silu = true",
};

#define E 8
#define FF 12
#define PS 4
#define NPOS 9   /* a 3 x 3 learned grid */
#define TXT 16

static float *rnd(uint64_t *s, size_t n, float scale) {
    float *p = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = tu_rand_f32(s, -scale, scale);
    return p;
}

static void write_projector(const char *path, int variant) {
    uint64_t seed = 7;
    gguf_writer *w = gguf_writer_new(path);
    gguf_writer_set_str(w, "general.architecture", "clip");
    gguf_writer_set_bool(w, "clip.has_vision_encoder", true);
    const bool v25 = variant == Q_V25_NO_PATTERN || variant == Q_V25_GELU;
    gguf_writer_set_str(w, "clip.projector_type", v25 ? "qwen2.5vl_merger" : "qwen3vl_merger");
    if (variant == Q_V25_NO_PATTERN) gguf_writer_set_bool(w, "clip.use_silu", true);
    if (variant == Q_V25_GELU) gguf_writer_set_u32(w, "clip.vision.n_wa_pattern", 2);
    gguf_writer_set_u32(w, "clip.vision.projection_dim", TXT);
    gguf_writer_set_u32(w, "clip.vision.image_size", 3 * PS);
    gguf_writer_set_u32(w, "clip.vision.patch_size", PS);
    gguf_writer_set_u32(w, "clip.vision.embedding_length", E);
    gguf_writer_set_u32(w, "clip.vision.feed_forward_length", FF);
    gguf_writer_set_u32(w, "clip.vision.block_count", 2);
    gguf_writer_set_u32(w, "clip.vision.attention.head_count", 2);
    const float mean[3] = {0.5f, 0.5f, 0.5f}, stdv[3] = {0.5f, 0.5f, 0.5f};
    gguf_writer_set_arr(w, "clip.vision.image_mean", GGUF_FLOAT32, mean, 3);
    gguf_writer_set_arr(w, "clip.vision.image_std", GGUF_FLOAT32, stdv, 3);
    gguf_writer_set_f32(w, "clip.vision.attention.layer_norm_epsilon", 1e-6f);
    gguf_writer_set_bool(w, "clip.use_gelu", true);
    gguf_writer_set_u32(w, "clip.vision.spatial_merge_size", variant == Q_MERGE3 ? 3 : 2);
    const bool ds[2] = {false, true};
    gguf_writer_set_arr(w, "clip.vision.is_deepstack_layers", GGUF_BOOL, ds, variant == Q_DS_LEN ? 1 : 2);
    float *keep[64];
    int nk = 0;
#define T(name, nd, scale, ...)                                                                   \
    do {                                                                                          \
        const int64_t ne[] = {__VA_ARGS__};                                                       \
        size_t n = 1;                                                                             \
        for (int d = 0; d < nd; d++) n *= (size_t)ne[d];                                          \
        keep[nk] = rnd(&seed, n, scale);                                                          \
        gguf_writer_add_tensor(w, name, QT_F32, nd, ne, keep[nk++]);                              \
    } while (0)
    T("v.patch_embd.weight", 4, 0.3f, PS, PS, 3, E);
    if (variant != Q_NO_W1) T("v.patch_embd.weight.1", 4, 0.3f, PS, PS, 3, E);
    T("v.patch_embd.bias", 1, 0.1f, E);
    T("v.position_embd.weight", 2, 0.5f, E, variant == Q_POS_NOT_SQUARE ? NPOS + 1 : NPOS);
    for (int il = 0; il < 2; il++) {
        char nm[64];
#define L(s, nd, scale, ...) do { snprintf(nm, sizeof nm, "v.blk.%d.%s", il, s); T(nm, nd, scale, __VA_ARGS__); } while (0)
        L("ln1.weight", 1, 1.0f, E);
        L("ln1.bias", 1, 0.1f, E);
        L("ln2.weight", 1, 1.0f, E);
        L("ln2.bias", 1, 0.1f, E);
        L("attn_qkv.weight", 2, 0.4f, E, 3 * E);
        L("attn_qkv.bias", 1, 0.1f, 3 * E);
        L("attn_out.weight", 2, 0.4f, E, E);
        L("attn_out.bias", 1, 0.1f, E);
        L("ffn_up.weight", 2, 0.4f, E, FF);
        L("ffn_up.bias", 1, 0.1f, FF);
        L("ffn_down.weight", 2, 0.3f, FF, E);
        L("ffn_down.bias", 1, 0.1f, E);
#undef L
    }
    if (variant != Q_DS_MISSING) {
        T("v.deepstack.1.norm.weight", 1, 1.0f, 4 * E);
        T("v.deepstack.1.norm.bias", 1, 0.1f, 4 * E);
        T("v.deepstack.1.fc1.weight", 2, 0.3f, 4 * E, 4 * E);
        T("v.deepstack.1.fc1.bias", 1, 0.1f, 4 * E);
        T("v.deepstack.1.fc2.weight", 2, 0.3f, 4 * E, TXT);
        T("v.deepstack.1.fc2.bias", 1, 0.1f, TXT);
    }
    T("v.post_ln.weight", 1, 1.0f, E);
    T("v.post_ln.bias", 1, 0.1f, E);
    T("mm.0.weight", 2, 0.3f, 4 * E, 4 * E);
    T("mm.0.bias", 1, 0.1f, 4 * E);
    T("mm.2.weight", 2, 0.3f, 4 * E, TXT);
    T("mm.2.bias", 1, 0.1f, TXT);
#undef T
    CHECKF(gguf_writer_finish(w) == 0, "%s", anv_last_error());
    for (int i = 0; i < nk; i++) free(keep[i]);
}

/* clip.cpp's calc_size_preserved_ratio for align 8 (patch 4 x merge 2), 8..4096 tokens of 64 px. */
static void check_layout(vision_model *v, int w, int h, int want_w, int want_h) {
    vision_layout lay = {0};
    CHECKF(vision_image_layout(v, w, h, &lay) == 0, "%s", anv_last_error());
    CHECKF(lay.width == want_w && lay.height == want_h && lay.grid_w == want_w / 8 && lay.grid_h == want_h / 8 &&
               lay.n_tokens == lay.grid_w * lay.grid_h,
           "%d x %d -> %d x %d (grid %d x %d), want %d x %d", w, h, lay.width, lay.height, lay.grid_w, lay.grid_h, want_w, want_h);
}

int main(void) {
    char dir[] = "/tmp/anvil-vqwen-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    backend *cpu = cpu_backend_new(1);
    CHECK(cpu != NULL);
    vision_load_opts vo = {.cpu = cpu, .gpu = NULL};
    char path[256];
    vt_check_refusals(dir, &vo, Q_MERGE3, Q_COUNT, write_projector, expect);
    snprintf(path, sizeof path, "%s/mmproj-qwen.gguf", dir);
    write_projector(path, Q_OK);
    vision_model *v = vision_load(path, &vo);
    CHECKF(v != NULL, "%s", anv_last_error());
    if (v) {
        CHECK(vision_projector(v) == VISION_PROJ_QWEN3VL && vision_n_embd(v) == 2 * TXT && !vision_noncausal(v));
        CHECK(!strcmp(vision_image_begin(v), "<|vision_start|>") && !strcmp(vision_image_end(v), "<|vision_end|>"));
        check_layout(v, 75, 50, 72, 48);      /* rounded to 8 per side */
        check_layout(v, 5, 300, 8, 304);      /* at least one block per side */
        check_layout(v, 10, 10, 24, 24);      /* under 8 tokens: scaled up (ceil) to 512 px */
        check_layout(v, 4000, 3000, 584, 440);/* over 4096 tokens: scaled down (floor) */
        /* every image encodes to finite rows: the merger's and the deepstack layer's halves */
        const int ws[2] = {75, 13}, hs[2] = {50, 31};
        for (int k = 0; k < 2; k++) {
            vision_layout lay;
            CHECK(vision_image_layout(v, ws[k], hs[k], &lay) == 0);
            uint8_t *rgb = malloc((size_t)ws[k] * hs[k] * 3);
            float *out = malloc((size_t)lay.n_tokens * 2 * TXT * sizeof(float));
            uint64_t s = 5;
            for (int i = 0; i < ws[k] * hs[k] * 3; i++) rgb[i] = (uint8_t)(tu_rand_u64(&s) & 255);
            CHECKF(vision_encode(v, rgb, ws[k], hs[k], out) == 0, "%s", anv_last_error());
            int finite = 1;
            double ds_norm = 0;
            for (int i = 0; i < lay.n_tokens * 2 * TXT; i++) {
                finite &= isfinite(out[i]) != 0;
                if (i % (2 * TXT) >= TXT) ds_norm += fabs(out[i]);
            }
            CHECK(finite && ds_norm > 0);
            free(rgb);
            free(out);
        }
        CHECK(vision_encode(v, (const uint8_t *)"", 0, 9, NULL) == -1 && strstr(anv_last_error(), "empty or larger"));
        vision_free(v);
    }
    cpu->ops->destroy(cpu);
    tu_tmpdir_done(dir);
    return tu_finish();
}
