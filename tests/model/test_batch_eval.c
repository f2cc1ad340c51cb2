/* test_batch_eval: continuous batching (model_eval_multi over contexts sharing one
 * scratch) gives the logits each sequence gets when evaluated alone, for every family's
 * synthetic model, with sequences joining mid-way (a prompt chunk batched with other
 * sequences' decode steps); model_embed checked against the output head; misuse errors; a
 * shared scratch grown by model_ctx_reserve_batch.
 * Usage: test_batch_eval [--vulkan]  (models from $ANVIL_TEST_MODELS, tests/model/models.cmake). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "model_place.h"
#include "quant.h"
#include "vk_testlib.h"

#define N_SEQ 3
#define N_STEPS 5

static const int PROMPT_LEN[N_SEQ] = {5, 9, 3};
static const int JOIN_STEP[N_SEQ] = {0, 0, 2};  /* sequence 2 starts while 0 and 1 decode */

static int argmax(const float *l, int n) {
    int b = 0;
    for (int i = 1; i < n; i++) if (l[i] > l[b]) b = i;
    return b;
}

/* max |a - b| / max |a| over n values */
static double rel_diff(const float *a, const float *b, int n) {
    double d = 0, s = 0;
    for (int i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        s = fmax(s, fabs((double)a[i]));
    }
    return s > 0 ? d / s : d;
}

static model *load(const char *path, backend *gpu) {
    model *m = model_load_with(path, 2, gpu, -1);
    if (!m) fprintf(stderr, "%s: %s\n", path, anv_last_error());
    return m;
}

/* Sequence s alone: prompt, then N_STEPS - 1 greedy tokens; logits of every step. */
static void run_alone(model *m, const int32_t *prompt, int n_prompt, float *logits, int32_t *fed) {
    const int V = m->hp.n_vocab;
    model_ctx *c = model_ctx_new(m, 64, QT_F32);
    CHECK(c != NULL);
    if (!c) return;
    CHECK(model_eval(c, prompt, n_prompt, logits, false) == 0);
    for (int step = 1; step < N_STEPS; step++) {
        fed[step] = argmax(logits + (size_t)(step - 1) * V, V);
        CHECK(model_eval(c, &fed[step], 1, logits + (size_t)step * V, false) == 0);
    }
    model_ctx_free(c);
}

static void test_model(const char *path, backend *gpu, double tol) {
    model *m = load(path, gpu);
    CHECKF(m != NULL, "%s", path);
    if (!m) return;
    if (gpu) CHECKF(m->layers[0].be == gpu && m->out_be == gpu, "%s: not placed on the GPU", path);
    const int V = m->hp.n_vocab;
    uint64_t seed = 1234;
    int32_t prompts[N_SEQ][16];
    float *ref = malloc(sizeof(float) * N_SEQ * N_STEPS * V), *got = malloc(sizeof(float) * N_SEQ * N_STEPS * V);
    float *step_logits = malloc(sizeof(float) * N_SEQ * V);
    int32_t fed[N_SEQ][N_STEPS];
    for (int s = 0; s < N_SEQ; s++) {
        for (int i = 0; i < PROMPT_LEN[s]; i++) prompts[s][i] = (int32_t)(tu_rand_u64(&seed) % (uint64_t)V);
        run_alone(m, prompts[s], PROMPT_LEN[s], ref + (size_t)s * N_STEPS * V, fed[s]);
    }

    model_ctx *ctx[N_SEQ];
    ctx[0] = model_ctx_new(m, 64, QT_F32);
    for (int s = 1; s < N_SEQ; s++) ctx[s] = ctx[0] ? model_ctx_new_shared(ctx[0], 64, QT_F32) : NULL;
    for (int s = 0; s < N_SEQ; s++) CHECK(ctx[s] != NULL);
    int step_of[N_SEQ] = {0};   /* next step index per sequence */
    for (int t = 0; t < N_STEPS + JOIN_STEP[N_SEQ - 1] && ctx[N_SEQ - 1]; t++) {
        model_ctx *cs[N_SEQ];
        const int32_t *toks[N_SEQ];
        int nt[N_SEQ], who[N_SEQ], n = 0;
        for (int s = 0; s < N_SEQ; s++) {
            if (t < JOIN_STEP[s] || step_of[s] >= N_STEPS) continue;
            cs[n] = ctx[s];
            if (step_of[s] == 0) { toks[n] = prompts[s]; nt[n] = PROMPT_LEN[s]; }
            else { toks[n] = &fed[s][step_of[s]]; nt[n] = 1; }
            who[n++] = s;
        }
        if (!n) break;
        CHECKF(model_eval_multi(cs, toks, nt, n, step_logits) == 0, "%s", anv_last_error());
        for (int i = 0; i < n; i++) {
            int s = who[i];
            memcpy(got + ((size_t)s * N_STEPS + step_of[s]) * V, step_logits + (size_t)i * V, sizeof(float) * V);
            step_of[s]++;
        }
    }
    double worst = 0;
    int top1_bad = 0;
    for (int s = 0; s < N_SEQ; s++)
        for (int st = 0; st < N_STEPS; st++) {
            const float *a = ref + ((size_t)s * N_STEPS + st) * V, *b = got + ((size_t)s * N_STEPS + st) * V;
            worst = fmax(worst, rel_diff(a, b, V));
            if (argmax(a, V) != argmax(b, V)) top1_bad++;
        }
    printf("%-28s %s  batched vs alone: max rel diff %.2e, top-1 differs at %d/%d steps\n", strrchr(path, '/') + 1,
           gpu ? "vulkan" : "cpu", worst, top1_bad, N_SEQ * N_STEPS);
    CHECKF(worst <= tol, "%s: batched logits differ by %.3e > %.1e", path, worst, tol);
    CHECK(top1_bad == 0);
    for (int s = 0; s < N_SEQ; s++) CHECK(model_ctx_n_past(ctx[s]) == PROMPT_LEN[s] + N_STEPS - 1);

    /* misuse: a context twice, too many tokens, a context of its own scratch */
    if (ctx[1]) {
        model_ctx *dup[2] = {ctx[1], ctx[1]};
        const int32_t *tk[2] = {prompts[0], prompts[0]};
        int one[2] = {1, 1};
        CHECK(model_eval_multi(dup, tk, one, 2, step_logits) == -1 && strstr(anv_last_error(), "twice"));
        model_ctx *alone = model_ctx_new(m, 64, QT_F32);
        model_ctx *mixed[2] = {ctx[1], alone};
        CHECK(alone && model_eval_multi(mixed, tk, one, 2, step_logits) == -1 && strstr(anv_last_error(), "share"));
        model_ctx_free(alone);
        int32_t *big = calloc(600, sizeof *big);
        int nbig[1] = {model_ctx_n_batch(ctx[0]) + 1};
        const int32_t *tb[1] = {big};
        model_ctx_truncate(ctx[0], 0);
        CHECK(model_eval_multi(ctx, tb, nbig, 1, step_logits) == -1);
        free(big);
    }
    for (int s = N_SEQ - 1; s >= 0; s--) model_ctx_free(ctx[s]);

    /* model_ctx_reserve_batch (a bidirectional image's one pass): the parent's scratch grows for
     * the contexts sharing it, capped at the asking context's size, never shrinks; same logits */
    {
        model_ctx *par = model_ctx_new(m, 1024, QT_F32), *kid = par ? model_ctx_new_shared(par, 64, QT_F32) : NULL;
        float *l0 = malloc(sizeof(float) * V), *l1 = malloc(sizeof(float) * V);
        CHECK(par && kid && l0 && l1 && model_ctx_n_batch(par) == 512);
        if (par && kid && l0 && l1) {
            CHECK(model_eval(kid, prompts[1], PROMPT_LEN[1], l0, false) == 0);
            CHECK(model_ctx_reserve_batch(par, 700) == 0 && model_ctx_n_batch(par) == 700 && model_ctx_n_batch(kid) == 700);
            CHECK(model_ctx_reserve_batch(kid, 5000) == 0 && model_ctx_n_batch(par) == 700);   /* kid's 64 rows: no change */
            CHECK(model_ctx_reserve_batch(par, 100) == 0 && model_ctx_n_batch(par) == 700);
            CHECK(model_ctx_reserve_batch(par, 5000) == 0 && model_ctx_n_batch(par) == 1024);
            model_ctx_reset(kid);
            CHECK(model_eval(kid, prompts[1], PROMPT_LEN[1], l1, false) == 0);
            CHECKF(rel_diff(l0, l1, V) <= tol, "%s: logits after the batch grew differ by %.2e", path, rel_diff(l0, l1, V));
        }
        free(l0);
        free(l1);
        model_ctx_free(kid);
        model_ctx_free(par);
    }

    /* model_embed: for one token, the output head applied to the embedding gives the logits */
    if (!gpu && m->output->type == QT_F32 && m->hp.final_softcap == 0) {
        model_ctx *c = model_ctx_new(m, 64, QT_F32);
        float *e = malloc(sizeof(float) * m->hp.n_embd), *l = malloc(sizeof(float) * V);
        CHECK(model_embed(c, prompts[0], 1, e) == 0);
        model_ctx_reset(c);
        CHECK(model_eval(c, prompts[0], 1, l, false) == 0);
        const float *w = (const float *)((const char *)m->output->storage + m->output->offset);
        double d = 0, s = 0;
        for (int r = 0; r < V; r++) {
            double acc = 0;
            for (int k = 0; k < m->hp.n_embd; k++) acc += (double)w[(size_t)r * m->hp.n_embd + k] * e[k];
            d = fmax(d, fabs(acc - l[r]));
            s = fmax(s, fabs((double)l[r]));
        }
        printf("%-28s embedding x output head vs logits: max rel diff %.2e\n", strrchr(path, '/') + 1, d / s);
        CHECK(d / s < 1e-4);
        /* mean pooling: the embedding of [a, b] is not the embedding of [a] */
        float *e2 = malloc(sizeof(float) * m->hp.n_embd);
        model_ctx_reset(c);
        CHECK(model_embed(c, prompts[0], 2, e2) == 0);
        CHECK(rel_diff(e, e2, m->hp.n_embd) > 1e-3);
        free(e2);
        free(e);
        free(l);
        model_ctx_free(c);
    }
    free(ref);
    free(got);
    free(step_logits);
    model_free(m);
}

int main(int argc, char **argv) {
    static const struct { const char *name; double tol_cpu, tol_gpu; } models[] = {
        {"llama-tiny-f32", 1e-4, 1e-3}, {"qwen2-tiny-f32", 1e-4, 1e-3}, {"gemma3-tiny-f32", 1e-4, 1e-3},
        {"qwen3-tiny-q4_1", 1e-3, 3e-2}, {"llama-tinyk-q4_K", 1e-3, 3e-2},
        {"gemma4-tiny-f32", 1e-4, 1e-3}, {"gemma4moe-tiny-f32", 1e-4, 1e-3},   /* shared KV, per-layer inputs; MoE */
    };
    bool vulkan = argc > 1 && strcmp(argv[1], "--vulkan") == 0;
    backend *gpu = NULL;
#ifdef ANVIL_HAVE_VULKAN
    if (vulkan) {
        gpu = vkt_open_lavapipe();
        if (!gpu) return tu_finish();
    }
#else
    if (vulkan) { printf("built without Vulkan\n"); return tu_finish(); }
#endif
    const char *dir = getenv("ANVIL_TEST_MODELS");
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.gguf", dir ? dir : "test-models", models[i].name);
        test_model(path, gpu, gpu ? models[i].tol_gpu : models[i].tol_cpu);
    }
#ifdef ANVIL_HAVE_VULKAN
    if (gpu) {
        CHECKF(be_error(gpu) == NULL, "%s", be_error(gpu));
        gpu->ops->destroy(gpu);
        const char *val = getenv("ANVIL_VK_VALIDATE");
        if (val && strcmp(val, "1") == 0) CHECKF(vk_validation_messages() == 0, "%d validation messages", vk_validation_messages());
    }
#endif
    return tu_finish();
}
