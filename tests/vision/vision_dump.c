/* vision_dump: Anvil's side of the vision goldens, the counterpart of mtmd_oracle.c with the
 * same JSON: loads a text model and a projector, splits PROMPT at its one "<__media__>" into
 * text before + the projector's begin marker, the image, the end marker + text after (as
 * llama.cpp's mtmd_tokenize does, each piece tokenized on its own, BOS first), encodes the
 * image (vision_encode), and evaluates the chunks in order, printing every text chunk's tokens
 * and logits and the image's embeddings and encode time (best of REPEATS).
 *
 *   vision_dump MODEL MMPROJ IMAGE.ppm PROMPT [--vulkan] [--repeats N] [--threads N] [--ctx N] [--prompt-api]
 * --ctx: the context size (256, or the image's rows + 128 when more; above 512 a causal image of more than
 * 512 rows is evaluated in parts, a bidirectional one grows the batch).
 * --prompt-api: vision_eval_prompt + the last token's model_eval instead (the path `anvil run`
 * takes), printing {"tokens": [all, image rows as -1], "last_logits": [...]}.
 * --vulkan: the text model and the encoder on lavapipe (with ANVIL_VK_VALIDATE=1 a non-zero
 * count of validation messages fails the run). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "cpu_backend.h"
#include "error.h"
#include "model.h"
#include "quant.h"
#include "tokenizer.h"
#include "vision.h"
#include "vision_plan.h"
#ifdef ANVIL_HAVE_VULKAN
#include "vk_backend.h"
#endif

static uint8_t *read_ppm(const char *path, int *w, int *h) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    int maxv = 0;
    if (fscanf(f, "P6 %d %d %d", w, h, &maxv) != 3 || maxv != 255 || *w < 1 || *h < 1 || *w > 16384 || *h > 16384) { fclose(f); return NULL; }
    fgetc(f);
    const size_t n = (size_t)*w * *h * 3;
    uint8_t *p = malloc(n);
    if (!p || fread(p, 1, n, f) != n) { fclose(f); free(p); return NULL; }
    fclose(f);
    return p;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int fail(const char *what) {
    fprintf(stderr, "vision_dump: %s: %s\n", what, anv_last_error());
    return 1;
}

/* A text chunk of two pieces tokenized one after the other (mtmd_tokenize's add_text per piece). */
static int text_chunk(model_ctx *c, const tokenizer *tok, const char *a, const char *b, bool first, int n_vocab, bool comma) {
    int na = 0, nb = 0, n;
    int32_t *ia = tokenizer_encode(tok, a, strlen(a), first, true, &na), *ib = tokenizer_encode(tok, b, strlen(b), false, true, &nb);
    int32_t *ids = ia && ib ? realloc(ia, (size_t)(na + nb + 1) * sizeof(int32_t)) : NULL;
    if (!ids) return fail("tokenize");
    memcpy(ids + na, ib, (size_t)nb * sizeof(int32_t));
    free(ib);
    n = na + nb;
    float *logits = malloc((size_t)(n > 0 ? n : 1) * n_vocab * sizeof(float));
    if (!logits) return fail("out of memory");
    if (n > 0 && model_eval(c, ids, n, logits, true) != 0) return fail("eval");
    printf("%s{\"type\": \"text\", \"tokens\": [", comma ? ",\n" : "");
    for (int i = 0; i < n; i++) printf("%s%d", i ? ", " : "", ids[i]);
    printf("], \"logits\": [");
    for (int i = 0; i < n; i++) {
        printf("%s[", i ? ",\n" : "");
        for (int v = 0; v < n_vocab; v++) printf("%s%.7g", v ? "," : "", logits[(size_t)i * n_vocab + v]);
        printf("]");
    }
    printf("]}");
    free(ids);
    free(logits);
    return 0;
}

/* The end of a run: the validation layer's verdict on a Vulkan run (ANVIL_VK_VALIDATE), then
 * everything freed. 0, or 1 on a validation message. */
/* --plan: the prompt through vision_plan as a conversation resends it: evaluated (the image
 * encoded into the cache), the context then cut inside the image's rows and evaluated again
 * (the image from the cache, from its first row), then the reusable prefix found whole (nothing
 * evaluated); the tokens and context left are the golden's (the caller evaluates the last). */
static int plan_turns(model_ctx *c, vision_model *v, model *m, const char *prompt, const vision_image *img, int32_t **toks, int *nt) {
    static const uint8_t key[32] = {7, 7, 7};
    const uint8_t *keys[1] = {key};
    vision_plan p;
    if (vision_plan_prompt(v, m, prompt, NULL, img, keys, 1, &p) != 0) return fail("vision_plan_prompt");
    vision_cache *vc = vision_cache_new(VISION_CACHE_DEFAULT_BYTES);
    vision_held held = {0};
    vision_eval_counts c1, c2, c3;
    model_ctx_truncate(c, 0);
    if (!vc || vision_eval_plan(c, v, &p, img, vc, &held, &c1) != 0) return fail("vision_eval_plan");
    const int img_pos = p.spans[0].pos;
    model_ctx_truncate(c, img_pos + 1);   /* inside the image: evaluation must restart at its first row */
    vision_held_truncate(&held, img_pos + 1);
    if (vision_eval_plan(c, v, &p, img, vc, &held, &c2) != 0) return fail("vision_eval_plan (second)");
    const int keep = vision_plan_prefix(&p, model_ctx_history(c), model_ctx_n_past(c), &held);
    model_ctx_truncate(c, keep);
    if (vision_eval_plan(c, v, &p, img, vc, &held, &c3) != 0) return fail("vision_eval_plan (third)");
    int bad = 0;
    if (c1.encoded != 1 || c1.cached || c1.reused || c1.from != 0) bad = 1;
    if (c2.encoded || c2.cached != 1 || c2.reused || c2.from != img_pos) bad = 2;
    if (keep != p.n - 1 || c3.encoded || c3.cached || c3.reused != 1 || c3.from != p.n - 1) bad = 3;
    if (bad) {
        fprintf(stderr, "vision_dump --plan: turn %d: encoded/cached/reused/from %d/%d/%d/%d, %d/%d/%d/%d, %d/%d/%d/%d (image at %d, "
                "prefix %d of %d)\n", bad, c1.encoded, c1.cached, c1.reused, c1.from, c2.encoded, c2.cached, c2.reused, c2.from,
                c3.encoded, c3.cached, c3.reused, c3.from, img_pos, keep, p.n);
        return 1;
    }
    *toks = p.tokens;
    *nt = p.n;
    p.tokens = NULL;
    vision_plan_free(&p);
    vision_held_free(&held);
    vision_cache_free(vc);
    return 0;
}

static int finish(backend *cpu, backend *gpu, model *m, vision_model *v, model_ctx *c, uint8_t *rgb) {
    int rc = 0;
#ifdef ANVIL_HAVE_VULKAN
    if (gpu && getenv("ANVIL_VK_VALIDATE")) {
        if (!vk_validation_active()) { fprintf(stderr, "vision_dump: ANVIL_VK_VALIDATE=1 but the validation layer is not active\n"); rc = 1; }
        else if (vk_validation_messages() != 0) { fprintf(stderr, "vision_dump: %d Vulkan validation messages\n", vk_validation_messages()); rc = 1; }
    }
#endif
    free(rgb);
    model_ctx_free(c);
    vision_free(v);
    model_free(m);
    if (gpu) gpu->ops->destroy(gpu);
    cpu->ops->destroy(cpu);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 5) { fprintf(stderr, "usage: vision_dump MODEL MMPROJ IMAGE.ppm PROMPT [--vulkan] [--repeats N] [--threads N]\n"); return 2; }
    bool vulkan = false, prompt_api = false, plan_api = false;
    int repeats = 1, threads = 2, n_ctx = 0;
    for (int i = 5; i < argc; i++) {
        if (!strcmp(argv[i], "--vulkan")) vulkan = true;
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ctx") && i + 1 < argc) n_ctx = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--prompt-api")) prompt_api = true;
        else if (!strcmp(argv[i], "--plan")) prompt_api = plan_api = true;
        else { fprintf(stderr, "vision_dump: unknown argument %s\n", argv[i]); return 2; }
    }
    backend *cpu = cpu_backend_new(threads), *gpu = NULL;
    if (!cpu) return fail("cpu backend");
    if (vulkan) {
#ifdef ANVIL_HAVE_VULKAN
        const int idx = vk_device_find(ANV_VK_DEVICE_CPU);
        if (idx < 0 || !(gpu = vk_backend_new(idx))) return fail("no lavapipe device");
#else
        fprintf(stderr, "vision_dump: built without Vulkan\n");
        return 1;
#endif
    }
    model_load_opts mo = {.cpu = cpu, .n_gpu_layers = -1, .gpu = gpu};
    model *m = model_load(argv[1], &mo);
    if (!m) return fail(argv[1]);
    vision_load_opts vo = {.cpu = cpu, .gpu = gpu};
    vision_model *v = vision_load(argv[2], &vo);
    if (!v) return fail(argv[2]);
    if (vision_check_text_model(v, m) != 0) return fail("projector");
    int w, h;
    uint8_t *rgb = read_ppm(argv[3], &w, &h);
    if (!rgb) { fprintf(stderr, "vision_dump: cannot read %s (binary PPM)\n", argv[3]); return 1; }
    vision_layout lay0;
    if (vision_image_layout(v, w, h, &lay0) != 0) return fail("layout");
    if (n_ctx <= 0) n_ctx = lay0.n_tokens + 128 > 256 ? lay0.n_tokens + 128 : 256;   /* an image of many rows and its text */
    model_ctx *c = model_ctx_new(m, n_ctx, QT_F16);
    if (!c) return fail("context");
    const char *prompt = argv[4], *mark = strstr(prompt, "<__media__>");
    if (prompt_api) {
        int32_t *toks = NULL;
        int nt = 0;
        const vision_image img = {rgb, w, h};
        float *lg = malloc((size_t)m->hp.n_vocab * sizeof(float));
        if (!lg) return fail("out of memory");
        if (plan_api) {
            if (plan_turns(c, v, m, prompt, &img, &toks, &nt) != 0) return 1;
        } else if (vision_eval_prompt(c, v, prompt, NULL, &img, 1, &toks, &nt) != 0) {
            return fail("vision_eval_prompt");
        }
        if (model_ctx_n_past(c) != nt - 1 || model_eval(c, &toks[nt - 1], 1, lg, false) != 0) return fail("last token");
        printf("{\"tokens\": [");
        for (int i = 0; i < nt; i++) printf("%s%d", i ? ", " : "", toks[i]);
        printf("], \"last_logits\": [");
        for (int i = 0; i < m->hp.n_vocab; i++) printf("%s%.7g", i ? "," : "", lg[i]);
        printf("]}\n");
        free(toks);
        free(lg);
        return finish(cpu, gpu, m, v, c, rgb);
    }
    if (!mark) { fprintf(stderr, "vision_dump: the prompt has no <__media__> marker\n"); return 2; }
    vision_layout lay;
    if (vision_image_layout(v, w, h, &lay) != 0) return fail("layout");
    const int n_img = lay.n_tokens, n_embd = vision_n_embd(v);
    float *embd = malloc((size_t)n_img * n_embd * sizeof(float));
    char *before = malloc(strlen(prompt) + 1);
    if (!embd || !before) return fail("out of memory");
    snprintf(before, strlen(prompt) + 1, "%.*s", (int)(mark - prompt), prompt);
    printf("{\"n_embd\": %d, \"n_vocab\": %d, \"image\": [%d, %d], \"chunks\": [\n", m->hp.n_embd, m->hp.n_vocab, w, h);
    if (text_chunk(c, m->tok, before, vision_image_begin(v), true, m->hp.n_vocab, false) != 0) return 1;
    double best = 1e30;
    for (int r = 0; r < (repeats < 1 ? 1 : repeats); r++) {
        const double t0 = now_ms();
        if (vision_encode(v, rgb, w, h, embd) != 0) return fail("encode");
        const double t = now_ms() - t0;
        if (t < best) best = t;
    }
    printf(",\n{\"type\": \"image\", \"n_tokens\": %d, \"encode_ms\": %.3f, \"embd\": [", n_img, best);
    for (size_t i = 0; i < (size_t)n_img * n_embd; i++) printf("%s%.7g", i ? "," : "", embd[i]);
    printf("]}");
    if (vision_eval_image(c, v, embd, &lay, NULL) != 0) return fail("image eval");
    if (text_chunk(c, m->tok, vision_image_end(v), mark + strlen("<__media__>"), false, m->hp.n_vocab, true) != 0) return 1;
    printf("\n]}\n");
    free(embd);
    free(before);
    return finish(cpu, gpu, m, v, c, rgb);
}
