/* test_vision_gemma4: the gemma4v projector (engine/vision/vision_gemma4.c) on a tiny file
 * written here with gguf_write: the variable-resolution layout (sizes aligned to patch * pool,
 * the 70 .. 1120 token budget, the aspect ratio kept), the encoder's finite rows for odd images,
 * clamped linears (Gemma4ClippableLinear scalars) taken, the text-side strings and causality rule,
 * and one-line refusals (a clamp scalar of two values, the unified gemma4uv variant, a tensor the
 * converter never writes (a bias), a head size the 2-D rope cannot split, a missing position table,
 * an image too elongated for the position table). The numbers themselves are checked against
 * llama.cpp's libmtmd by vision_golden_gemma4-* (vision.cmake). */
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

enum { G_OK, G_CLAMP, G_UNIFIED, G_HEAD, G_NO_POS, G_BIAS, G_COUNT };
static const char *expect[G_COUNT] = {
    NULL, "tensor 'v.blk.0.attn_q.input_max' must hold one finite F32 value", "projector type 'gemma4uv' is not supported",
    "not a multiple of 4", "tensor 'v.position_embd.weight' is missing",
    "gemma4v projector with tensor 'v.blk.0.attn_k.bias' is not supported",
};

#define E 16
#define FF 24
#define PS 4
#define NPOS 160
#define PROJ 12

static float *rnd(uint64_t *s, size_t n, float scale, float offset) {
    float *p = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = offset + tu_rand_f32(s, -scale, scale);
    return p;
}

static void write_projector(const char *path, int variant) {
    uint64_t seed = 17;
    const int n_head = variant == G_HEAD ? 8 : 2;   /* head size 2: not splittable in x / y halves */
    gguf_writer *w = gguf_writer_new(path);
    gguf_writer_set_str(w, "general.architecture", "clip");
    gguf_writer_set_bool(w, "clip.has_vision_encoder", true);
    gguf_writer_set_str(w, "clip.vision.projector_type", variant == G_UNIFIED ? "gemma4uv" : "gemma4v");
    gguf_writer_set_u32(w, "clip.vision.projection_dim", PROJ);
    gguf_writer_set_u32(w, "clip.vision.image_size", 224);
    gguf_writer_set_u32(w, "clip.vision.patch_size", PS);
    gguf_writer_set_u32(w, "clip.vision.embedding_length", E);
    gguf_writer_set_u32(w, "clip.vision.feed_forward_length", FF);
    gguf_writer_set_u32(w, "clip.vision.block_count", 1);
    gguf_writer_set_u32(w, "clip.vision.attention.head_count", (uint32_t)n_head);
    const float mean[3] = {0, 0, 0}, stdv[3] = {1, 1, 1};
    gguf_writer_set_arr(w, "clip.vision.image_mean", GGUF_FLOAT32, mean, 3);
    gguf_writer_set_arr(w, "clip.vision.image_std", GGUF_FLOAT32, stdv, 3);
    gguf_writer_set_f32(w, "clip.vision.attention.layer_norm_epsilon", 1e-6f);
    float *keep[64];
    int nk = 0;
#define T(name, nd, scale, offset, ...)                                                           \
    do {                                                                                          \
        const int64_t ne[] = {__VA_ARGS__};                                                       \
        size_t n = 1;                                                                             \
        for (int d = 0; d < nd; d++) n *= (size_t)ne[d];                                          \
        keep[nk] = rnd(&seed, n, scale, offset);                                                  \
        gguf_writer_add_tensor(w, name, QT_F32, nd, ne, keep[nk++]);                              \
    } while (0)
    T("v.patch_embd.weight", 4, 0.3f, 0.0f, PS, PS, 3, E);
    if (variant != G_NO_POS) T("v.position_embd.weight", 3, 0.5f, 0.0f, E, NPOS, 2);
    const char *norms[] = {"v.blk.0.ln1.weight", "v.blk.0.ln2.weight", "v.blk.0.attn_post_norm.weight", "v.blk.0.ffn_post_norm.weight"};
    for (int i = 0; i < 4; i++) T(norms[i], 1, 0.2f, 1.0f, E);
    T("v.blk.0.attn_q_norm.weight", 1, 0.2f, 1.0f, E / n_head);
    T("v.blk.0.attn_k_norm.weight", 1, 0.2f, 1.0f, E / n_head);
    T("v.blk.0.attn_q.weight", 2, 0.4f, 0.0f, E, E);
    T("v.blk.0.attn_k.weight", 2, 0.4f, 0.0f, E, E);
    if (variant == G_BIAS) T("v.blk.0.attn_k.bias", 1, 0.1f, 0.0f, E);
    T("v.blk.0.attn_v.weight", 2, 0.4f, 0.0f, E, E);
    T("v.blk.0.attn_out.weight", 2, 0.4f, 0.0f, E, E);
    T("v.blk.0.attn_q.input_max", 1, 0.0f, 0.8f, variant == G_CLAMP ? 2 : 1);
    T("v.blk.0.attn_q.input_min", 1, 0.0f, -0.9f, 1);
    T("v.blk.0.ffn_down.output_max", 1, 0.0f, 0.3f, 1);
    T("mm.input_projection.output_min", 1, 0.0f, -0.2f, 1);
    T("v.blk.0.ffn_gate.weight", 2, 0.4f, 0.0f, E, FF);
    T("v.blk.0.ffn_up.weight", 2, 0.4f, 0.0f, E, FF);
    T("v.blk.0.ffn_down.weight", 2, 0.3f, 0.0f, FF, E);
    T("v.blk.0.out_scale.weight", 1, 0.1f, 0.9f, 1);
    T("v.std_bias", 1, 0.3f, 0.0f, E);
    T("v.std_scale", 1, 0.2f, 1.0f, E);
    T("mm.input_projection.weight", 2, 0.4f, 0.0f, E, PROJ);
#undef T
    CHECKF(gguf_writer_finish(w) == 0, "%s", anv_last_error());
    for (int i = 0; i < nk; i++) free(keep[i]);
}

/* A layout as llama.cpp's dyn_size gives it: aligned sides, the token budget, the aspect ratio. */
static void check_layout(vision_model *v, int w, int h) {
    vision_layout lay = {0};
    CHECKF(vision_image_layout(v, w, h, &lay) == 0, "%d x %d: %s", w, h, anv_last_error());
    const int align = PS * 3;
    CHECKF(lay.width % align == 0 && lay.height % align == 0, "%d x %d -> %d x %d", w, h, lay.width, lay.height);
    CHECKF(lay.grid_w == lay.width / align && lay.grid_h == lay.height / align && lay.n_tokens == lay.grid_w * lay.grid_h,
           "%d x %d: grid %d x %d, %d tokens", w, h, lay.grid_w, lay.grid_h, lay.n_tokens);
    CHECKF(lay.n_tokens >= 70 && lay.n_tokens <= 1120, "%d x %d: %d tokens", w, h, lay.n_tokens);
    const double ar = (double)w / h, got = (double)lay.width / lay.height;
    CHECKF(fabs(log(got / ar)) < log(1.0 + 2.0 * align / (lay.width < lay.height ? lay.width : lay.height)) + 1e-9,
           "%d x %d -> %d x %d: aspect", w, h, lay.width, lay.height);
}

int main(void) {
    char dir[] = "/tmp/anvil-vision-g4-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    backend *cpu = cpu_backend_new(1);
    CHECK(cpu != NULL);
    vision_load_opts vo = {.cpu = cpu, .gpu = NULL};
    char path[256];
    vt_check_refusals(dir, &vo, G_CLAMP, G_COUNT, write_projector, expect);
    snprintf(path, sizeof path, "%s/mmproj-g4.gguf", dir);
    write_projector(path, G_OK);
    vision_model *v = vision_load(path, &vo);
    CHECKF(v != NULL, "%s", anv_last_error());
    if (v) {
        CHECK(vision_projector(v) == VISION_PROJ_GEMMA4 && vision_n_embd(v) == PROJ && vision_noncausal(v));
        CHECK(!strcmp(vision_image_begin(v), "<|image>") && !strcmp(vision_image_end(v), "<image|>"));
        /* the batch a text context needs: clip.cpp's token budget maximum, bidirectional here */
        CHECKF(vision_max_tokens(v) == 1120 && vision_batch_rows(v) == 1120, "%d %d", vision_max_tokens(v), vision_batch_rows(v));
        /* small (scaled up to 70 tokens), large (down to 1120), square, odd, elongated */
        const int sizes[][2] = {{1, 1}, {21, 9}, {80, 56}, {45, 131}, {500, 500}, {1920, 1080}, {37, 400}};
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) check_layout(v, sizes[i][0], sizes[i][1]);
        /* mtmd on 80x56 (pool 3, patch 4 here: align 12): 70 tokens min -> 10 x 7 */
        vision_layout lay;
        CHECK(vision_image_layout(v, 80, 56, &lay) == 0 && lay.grid_w == 10 && lay.grid_h == 7 && lay.width == 120 && lay.height == 84);
        /* more patches per side than the position table holds: one line, no crash */
        CHECK(vision_image_layout(v, 4000, 10, &lay) == -1 && strstr(anv_last_error(), "aspect ratio") && !strchr(anv_last_error(), '\n'));
        CHECK(vision_image_layout(v, 0, 10, &lay) == -1 && strstr(anv_last_error(), "empty or larger"));
        /* the encoder: finite rows for an odd image; an image already at its size is taken as it is */
        uint8_t rgb[21 * 9 * 3];
        uint64_t s = 5;
        for (size_t i = 0; i < sizeof rgb; i++) rgb[i] = (uint8_t)(tu_rand_u64(&s) & 255);
        CHECK(vision_image_layout(v, 21, 9, &lay) == 0);
        float *out = malloc((size_t)lay.n_tokens * PROJ * sizeof(float));
        CHECKF(vision_encode(v, rgb, 21, 9, out) == 0, "%s", anv_last_error());
        int finite = 1;
        for (int i = 0; i < lay.n_tokens * PROJ; i++) finite &= isfinite(out[i]) != 0;
        CHECK(finite);
        free(out);
        CHECK(vision_encode(v, rgb, 4000, 10, NULL) == -1 && strstr(anv_last_error(), "aspect ratio"));
        vision_layout sq;
        CHECK(vision_image_layout(v, 120, 84, &sq) == 0 && sq.width == 120 && sq.height == 84);
        uint8_t *img = malloc(120 * 84 * 3), *pre = malloc(120 * 84 * 3);
        for (size_t i = 0; i < 120 * 84 * 3; i++) img[i] = (uint8_t)(i * 7);
        CHECK(vision_preprocess_rgb(v, img, 120, 84, pre) == 0 && !memcmp(img, pre, 120 * 84 * 3));
        free(img);
        free(pre);
        /* the layout-only open (the server's count_tokens / planning) gives the same layouts */
        vision_model *info = vision_load_info(path);
        CHECKF(info != NULL, "%s", anv_last_error());
        if (info) {
            CHECK(vision_n_embd(info) == PROJ && vision_noncausal(info) && !strcmp(vision_image_begin(info), "<|image>"));
            const int wh[][2] = {{21, 9}, {1920, 1080}, {45, 131}};
            for (size_t i = 0; i < sizeof wh / sizeof wh[0]; i++) {
                vision_layout a, b;
                CHECK(vision_image_layout(v, wh[i][0], wh[i][1], &a) == 0 && vision_image_layout(info, wh[i][0], wh[i][1], &b) == 0 &&
                      !memcmp(&a, &b, sizeof a));
            }
            float one[PROJ];
            CHECK(vision_encode(info, rgb, 21, 9, one) == -1 && strstr(anv_last_error(), "layout only"));
            vision_free(info);
        }
        vision_free(v);
    }
    cpu->ops->destroy(cpu);
    tu_tmpdir_done(dir);
    return tu_finish();
}
