/* test_vision_load: engine/vision's projector loader refuses malformed or unsupported files with
 * one line naming the problem (wrong architecture, unsupported projector type, missing key or
 * tensor, misshapen tensor, a patch grid the pooling does not divide, a truncated file); a valid
 * tiny gemma3 projector (written here with gguf_write) loads and encodes an odd-sized image
 * into finite rows, refuses an empty image, and is found next to a model file. The numbers
 * themselves are checked against llama.cpp by vision_golden_* (vision.cmake). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_backend.h"
#include "error.h"
#include "gguf_write.h"
#include "quant.h"
#include "testutil.h"
#include "vision.h"
#include "vision_testlib.h"

enum { V_OK, V_ARCH, V_PROJ_LDP, V_NO_KEY, V_BAD_SHAPE, V_NO_TENSOR, V_BAD_MERGE, V_TRUNCATED, V_COUNT };
static const char *expect[V_COUNT] = {
    NULL, "not a projector file", "projector type 'ldp' is not supported", "missing metadata key clip.vision.block_count",
    "tensor 'v.blk.0.attn_q.weight' is misshapen", "tensor 'mm.soft_emb_norm.weight' is missing", "invalid vision shape", "",
};

#define E 8
#define FF 12
#define PS 4
#define IMG 16
#define PROJ 16

static float *rnd(uint64_t *s, size_t n, float scale) {
    float *p = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = tu_rand_f32(s, -scale, scale);
    return p;
}

static void write_projector(const char *path, int variant) {
    uint64_t seed = 99;
    gguf_writer *w = gguf_writer_new(path);
    gguf_writer_set_str(w, "general.architecture", variant == V_ARCH ? "llama" : "clip");
    gguf_writer_set_bool(w, "clip.has_vision_encoder", true);
    gguf_writer_set_str(w, "clip.projector_type", variant == V_PROJ_LDP ? "ldp" : "gemma3");
    gguf_writer_set_u32(w, "clip.vision.projection_dim", PROJ);
    gguf_writer_set_u32(w, "clip.vision.image_size", IMG);
    gguf_writer_set_u32(w, "clip.vision.patch_size", PS);
    gguf_writer_set_u32(w, "clip.vision.embedding_length", E);
    gguf_writer_set_u32(w, "clip.vision.feed_forward_length", FF);
    if (variant != V_NO_KEY) gguf_writer_set_u32(w, "clip.vision.block_count", 1);
    gguf_writer_set_u32(w, "clip.vision.attention.head_count", 2);
    const float mean[3] = {0.5f, 0.5f, 0.5f}, stdv[3] = {0.5f, 0.5f, 0.5f};
    gguf_writer_set_arr(w, "clip.vision.image_mean", GGUF_FLOAT32, mean, 3);
    gguf_writer_set_arr(w, "clip.vision.image_std", GGUF_FLOAT32, stdv, 3);
    gguf_writer_set_f32(w, "clip.vision.attention.layer_norm_epsilon", 1e-6f);
    gguf_writer_set_bool(w, "clip.use_gelu", true);
    gguf_writer_set_u32(w, "clip.vision.projector.scale_factor", variant == V_BAD_MERGE ? 3 : 2);
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
    T("v.patch_embd.bias", 1, 0.1f, E);
    T("v.position_embd.weight", 2, 0.5f, E, (IMG / PS) * (IMG / PS));
    T("v.blk.0.ln1.weight", 1, 1.0f, E);
    T("v.blk.0.ln1.bias", 1, 0.1f, E);
    T("v.blk.0.ln2.weight", 1, 1.0f, E);
    T("v.blk.0.ln2.bias", 1, 0.1f, E);
    if (variant == V_BAD_SHAPE) T("v.blk.0.attn_q.weight", 2, 0.4f, E, E + 2);
    else T("v.blk.0.attn_q.weight", 2, 0.4f, E, E);
    T("v.blk.0.attn_k.weight", 2, 0.4f, E, E);
    T("v.blk.0.attn_v.weight", 2, 0.4f, E, E);
    T("v.blk.0.attn_out.weight", 2, 0.4f, E, E);
    T("v.blk.0.ffn_up.weight", 2, 0.4f, E, FF);
    T("v.blk.0.ffn_down.weight", 2, 0.3f, FF, E);
    T("v.post_ln.weight", 1, 1.0f, E);
    T("v.post_ln.bias", 1, 0.1f, E);
    if (variant != V_NO_TENSOR) T("mm.soft_emb_norm.weight", 1, 1.0f, E);
    T("mm.input_projection.weight", 2, 0.4f, PROJ, E);
#undef T
    CHECKF(gguf_writer_finish(w) == 0, "%s", anv_last_error());
    for (int i = 0; i < nk; i++) free(keep[i]);
    if (variant == V_TRUNCATED) CHECK(truncate(path, 900) == 0);
}

int main(void) {
    char dir[] = "/tmp/anvil-vision-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    backend *cpu = cpu_backend_new(1);
    CHECK(cpu != NULL);
    vision_load_opts vo = {.cpu = cpu, .gpu = NULL};
    char path[256];
    vt_check_refusals(dir, &vo, V_ARCH, V_COUNT, write_projector, expect);
    snprintf(path, sizeof path, "%s/mmproj-tiny.gguf", dir);
    write_projector(path, V_OK);
    vision_model *v = vision_load(path, &vo);
    CHECKF(v != NULL, "%s", anv_last_error());
    if (v) {
        vision_layout lay = {0};
        CHECK(vision_image_layout(v, 21, 9, &lay) == 0 && lay.n_tokens == 4 && lay.grid_w == 2 && lay.grid_h == 2 &&
              lay.width == IMG && lay.height == IMG);
        CHECK(vision_image_layout(v, 0, 9, &lay) == -1 && strstr(anv_last_error(), "empty or larger"));
        CHECK(vision_n_embd(v) == PROJ && vision_image_size(v) == IMG && vision_noncausal(v));
        CHECK(!strcmp(vision_image_begin(v), "<start_of_image>") && !strcmp(vision_image_end(v), "<end_of_image>"));
        uint8_t rgb[21 * 9 * 3];
        uint64_t s = 5;
        for (size_t i = 0; i < sizeof rgb; i++) rgb[i] = (uint8_t)(tu_rand_u64(&s) & 255);
        float out[4 * PROJ];
        CHECKF(vision_encode(v, rgb, 21, 9, out) == 0, "%s", anv_last_error());
        int finite = 1;
        for (int i = 0; i < 4 * PROJ; i++) finite &= isfinite(out[i]) != 0;
        CHECK(finite);
        /* a square image of the encoder's size is taken as it is */
        uint8_t sq[IMG * IMG * 3], pre[IMG * IMG * 3];
        for (size_t i = 0; i < sizeof sq; i++) sq[i] = (uint8_t)i;
        CHECK(vision_preprocess_rgb(v, sq, IMG, IMG, pre) == 0 && !memcmp(sq, pre, sizeof sq));
        /* an empty image and one over the pixel limit are one-line errors */
        CHECK(vision_encode(v, rgb, 0, 9, out) == -1 && strstr(anv_last_error(), "empty or larger"));
        CHECK(vision_encode(v, rgb, 1 << 14, 1 << 14, out) == -1 && strstr(anv_last_error(), "empty or larger"));
        vision_free(v);
    }
    /* next to the model: mmproj*.gguf in its folder; an explicit path that does not exist */
    char model_path[256];
    snprintf(model_path, sizeof model_path, "%s/model.gguf", dir);
    char *found = vision_find_projector(model_path, NULL);
    CHECKF(found && !strcmp(found, path), "found %s", found ? found : "(none)");
    free(found);
    CHECK(model_has_vision(model_path, NULL));
    CHECK(vision_find_projector(model_path, "/nonexistent/mmproj.gguf") == NULL && strstr(anv_last_error(), "not found"));
    CHECK(!model_has_vision("/nonexistent-dir/model.gguf", NULL));
    cpu->ops->destroy(cpu);
    tu_tmpdir_done(dir);
    return tu_finish();
}
