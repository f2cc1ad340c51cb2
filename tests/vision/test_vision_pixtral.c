/* test_vision_pixtral: the pixtral projector's loader, layout and output arrangement
 * (engine/vision/vision_pixtral.c) on tiny files written here with gguf_write: a valid file
 * (patch 4, merge 2) loads, gives clip.cpp's dyn_size layouts (a multiple of 8 per side, the
 * [8, 1024]-token pixel budget) with one [IMG_BREAK] row after each image row but the last,
 * encodes into finite rows whose break rows are v.token_embd.img_break exactly; malformed or
 * unsupported files are refused with one line naming the problem (GELU instead of SwiGLU, a
 * merge size without the patch merger, no img_break row, a block bias, a head size that is not
 * a multiple of 4). The numbers themselves are checked against llama.cpp by
 * vision_golden_mistral3-pixtral* (vision.cmake). */
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

enum { P_OK, P_GELU, P_NO_MERGER, P_NO_BREAK, P_BIAS, P_HEAD2, P_COUNT };
static const char *expect[P_COUNT] = {
    NULL, "pixtral projector without clip.use_silu = true", "has no tensor 'mm.patch_merger.weight'",
    "'v.token_embd.img_break' is missing", "'v.blk.0.attn_q.bias' (a bias) is not supported", "head size 2 must be a multiple of 4",
};

#define E 8
#define FF 12
#define PS 4
#define TXT 16
#define HID 24

static float *rnd(uint64_t *s, size_t n, float scale) {
    float *p = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = tu_rand_f32(s, -scale, scale);
    return p;
}

static float img_break[TXT];

static void write_projector(const char *path, int variant) {
    uint64_t seed = 11;
    gguf_writer *w = gguf_writer_new(path);
    gguf_writer_set_str(w, "general.architecture", "clip");
    gguf_writer_set_bool(w, "clip.has_vision_encoder", true);
    gguf_writer_set_str(w, "clip.projector_type", "pixtral");
    gguf_writer_set_u32(w, "clip.vision.projection_dim", TXT);
    gguf_writer_set_u32(w, "clip.vision.image_size", 66);   /* not a multiple of the patch: unused (dynamic size) */
    gguf_writer_set_u32(w, "clip.vision.patch_size", PS);
    gguf_writer_set_u32(w, "clip.vision.embedding_length", E);
    gguf_writer_set_u32(w, "clip.vision.feed_forward_length", FF);
    gguf_writer_set_u32(w, "clip.vision.block_count", 2);
    gguf_writer_set_u32(w, "clip.vision.attention.head_count", variant == P_HEAD2 ? 4 : 2);
    const float mean[3] = {0.5f, 0.5f, 0.5f}, stdv[3] = {0.5f, 0.5f, 0.5f};
    gguf_writer_set_arr(w, "clip.vision.image_mean", GGUF_FLOAT32, mean, 3);
    gguf_writer_set_arr(w, "clip.vision.image_std", GGUF_FLOAT32, stdv, 3);
    gguf_writer_set_f32(w, "clip.vision.attention.layer_norm_epsilon", 1e-5f);
    if (variant == P_GELU) gguf_writer_set_bool(w, "clip.use_gelu", true);
    else gguf_writer_set_bool(w, "clip.use_silu", true);
    gguf_writer_set_u32(w, "clip.vision.spatial_merge_size", 2);
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
    T("v.pre_ln.weight", 1, 1.0f, E);
    for (int il = 0; il < 2; il++) {
        char nm[64];
#define L(s, nd, scale, ...) do { snprintf(nm, sizeof nm, "v.blk.%d.%s", il, s); T(nm, nd, scale, __VA_ARGS__); } while (0)
        L("ln1.weight", 1, 1.0f, E);
        L("ln2.weight", 1, 1.0f, E);
        L("attn_q.weight", 2, 0.4f, E, E);
        if (variant == P_BIAS) L("attn_q.bias", 1, 0.1f, E);
        L("attn_k.weight", 2, 0.4f, E, E);
        L("attn_v.weight", 2, 0.4f, E, E);
        L("attn_out.weight", 2, 0.4f, E, E);
        L("ffn_gate.weight", 2, 0.4f, E, FF);
        L("ffn_up.weight", 2, 0.4f, E, FF);
        L("ffn_down.weight", 2, 0.3f, FF, E);
#undef L
    }
    if (variant != P_NO_MERGER) {
        T("mm.input_norm.weight", 1, 1.0f, E);
        T("mm.patch_merger.weight", 2, 0.3f, 4 * E, E);
    }
    T("mm.1.weight", 2, 0.3f, E, HID);
    T("mm.2.weight", 2, 0.3f, HID, TXT);
    if (variant != P_NO_BREAK) {
        T("v.token_embd.img_break", 1, 0.5f, TXT);
        memcpy(img_break, keep[nk - 1], sizeof img_break);
    }
#undef T
    CHECKF(gguf_writer_finish(w) == 0, "%s", anv_last_error());
    for (int i = 0; i < nk; i++) free(keep[i]);
}

/* clip.cpp's calc_size_preserved_ratio for align 8 (patch 4 x merge 2), 8..1024 tokens of 64 px;
 * n_tokens = gw * gh + gh - 1 ([IMG_BREAK] after each row but the last), grid (gw + 1) x gh. */
static void check_layout(vision_model *v, int w, int h, int want_w, int want_h) {
    vision_layout lay = {0};
    CHECKF(vision_image_layout(v, w, h, &lay) == 0, "%s", anv_last_error());
    const int gw = want_w / 8, gh = want_h / 8;
    CHECKF(lay.width == want_w && lay.height == want_h && lay.grid_w == gw + 1 && lay.grid_h == gh && lay.n_tokens == gw * gh + gh - 1,
           "%d x %d -> %d x %d (grid %d x %d, %d tokens), want %d x %d", w, h, lay.width, lay.height, lay.grid_w, lay.grid_h, lay.n_tokens,
           want_w, want_h);
}

int main(void) {
    char dir[] = "/tmp/anvil-vpix-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    backend *cpu = cpu_backend_new(1);
    CHECK(cpu != NULL);
    vision_load_opts vo = {.cpu = cpu, .gpu = NULL};
    char path[256];
    vt_check_refusals(dir, &vo, P_GELU, P_COUNT, write_projector, expect);
    snprintf(path, sizeof path, "%s/mmproj-pixtral.gguf", dir);
    write_projector(path, P_OK);
    vision_model *v = vision_load(path, &vo);
    CHECKF(v != NULL, "%s", anv_last_error());
    if (v) {
        CHECK(vision_projector(v) == VISION_PROJ_PIXTRAL && vision_n_embd(v) == TXT && !vision_noncausal(v));
        CHECK(!strcmp(vision_image_begin(v), "") && !strcmp(vision_image_end(v), "[IMG_END]"));
        check_layout(v, 75, 50, 72, 48);       /* rounded to 8 per side */
        check_layout(v, 5, 300, 8, 304);       /* at least one block per side */
        check_layout(v, 10, 10, 24, 24);       /* under 8 tokens: scaled up (ceil) to 512 px */
        check_layout(v, 4000, 3000, 288, 216); /* over 1024 tokens: scaled down (floor) */
        check_layout(v, 3, 9, 16, 40);         /* 8 x 8 after rounding: scaled up by sqrt(512 / 27), ceil */
        /* every image encodes to finite rows; the break rows are the file's img_break row */
        const int ws[3] = {75, 13, 40}, hs[3] = {50, 31, 9};
        for (int k = 0; k < 3; k++) {
            vision_layout lay;
            CHECK(vision_image_layout(v, ws[k], hs[k], &lay) == 0);
            uint8_t *rgb = malloc((size_t)ws[k] * hs[k] * 3);
            float *out = malloc((size_t)lay.n_tokens * TXT * sizeof(float));
            uint64_t s = 5;
            for (int i = 0; i < ws[k] * hs[k] * 3; i++) rgb[i] = (uint8_t)(tu_rand_u64(&s) & 255);
            CHECKF(vision_encode(v, rgb, ws[k], hs[k], out) == 0, "%s", anv_last_error());
            int finite = 1, breaks = 0, image_rows_differ = 1;
            for (int i = 0; i < lay.n_tokens * TXT; i++) finite &= isfinite(out[i]) != 0;
            for (int t = 0; t < lay.n_tokens; t++) {
                const bool is_break = t % lay.grid_w == lay.grid_w - 1;
                const bool same = !memcmp(out + (size_t)t * TXT, img_break, sizeof img_break);
                if (is_break) breaks += same;
                else image_rows_differ &= !same;
            }
            CHECKF(finite && breaks == lay.grid_h - 1 && image_rows_differ, "image %d: finite %d, %d break rows of %d", k, finite, breaks,
                   lay.grid_h - 1);
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
