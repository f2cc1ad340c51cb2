/* test_embed_models: the embedding families against llama.cpp. Each synthetic model
 * (tools/make_embed_model.py, written into ANVIL_TEST_MODELS by the embed_models fixture:
 * bert CLS and mean pooling, nomic-bert, gemma-embedding with and without its dense
 * projections; bert and nomic-bert again with BGE's real 30522-piece vocabulary) embeds every
 * string of data/embed/<name>.json (tests/model/make_embed_golden.py, llama-embedding: capitals,
 * accents, other scripts, CJK, emoji); the token ids must equal llama-tokenize's and the cosine
 * similarity with llama-embedding's vector must be >= 0.99999, on the CPU and on Vulkan (lavapipe, when the
 * build has it). Also: generation on an encoder is a clear error, not a crash. */
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "model.h"
#include "model_place.h"
#include "testutil.h"
#include "tokenizer.h"
#include "vk_testlib.h"

static double cosine(const float *a, const double *b, int n) {
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < n; i++) ab += a[i] * b[i], aa += (double)a[i] * a[i], bb += b[i] * b[i];
    return ab / (sqrt(aa) * sqrt(bb) + 1e-30);
}

static void run(const char *name, const char *path, const char *golden, backend *gpu, const char *dev) {
    char *text = tu_read_file(golden, NULL);
    cJSON *g = text ? cJSON_Parse(text) : NULL;
    free(text);
    CHECKF(g != NULL, "cannot read %s", golden);
    model *m = model_load_with(path, 2, gpu, gpu ? -1 : 0);
    CHECKF(m != NULL, "%s: %s", path, anv_last_error());
    if (!m || !g) { model_free(m); cJSON_Delete(g); return; }
    CHECK(m->hp.embedding_only && m->hp.noncausal);
    model_ctx *c = model_ctx_new(m, 512, 0x1 /* QT_F16 */);
    CHECKF(c != NULL, "%s: %s", name, anv_last_error());
    double worst = 1;
    int n_cases = 0, tok_ok = 0;
    const cJSON *cs;
    float *v = malloc(sizeof(float) * (size_t)m->hp.n_embd);
    cJSON_ArrayForEach(cs, cJSON_GetObjectItem(g, "cases")) {
        const char *s = cJSON_GetObjectItem(cs, "text")->valuestring;
        const cJSON *jt = cJSON_GetObjectItem(cs, "tokens"), *je = cJSON_GetObjectItem(cs, "embedding");
        int n = 0;
        int32_t *ids = tokenizer_encode(m->tok, s, strlen(s), tokenizer_add_bos(m->tok), true, &n);
        int same = ids && n == cJSON_GetArraySize(jt);
        for (int i = 0; same && i < n; i++) same = ids[i] == cJSON_GetArrayItem(jt, i)->valueint;
        tok_ok += same;
        n_cases++;
        CHECKF(cJSON_GetArraySize(je) == m->hp.n_embd, "%s: golden dim %d != %d", name, cJSON_GetArraySize(je), m->hp.n_embd);
        model_ctx_reset(c);
        if (ids && c && model_embed(c, ids, n, v) == 0 && cJSON_GetArraySize(je) == m->hp.n_embd) {
            double *want = malloc(sizeof(double) * (size_t)m->hp.n_embd);
            for (int i = 0; i < m->hp.n_embd; i++) want[i] = cJSON_GetArrayItem(je, i)->valuedouble;
            double cs_ = cosine(v, want, m->hp.n_embd);
            if (cs_ < worst) worst = cs_;
            free(want);
        } else {
            worst = -2;
            fprintf(stderr, "%s: embedding \"%s\" failed: %s\n", name, s, anv_last_error());
        }
        free(ids);
    }
    CHECKF(tok_ok == n_cases, "%s: %d/%d token lists match llama-tokenize", name, tok_ok, n_cases);
    CHECKF(worst >= 0.99999, "%s on %s: cosine min %.7f < 0.99999", name, dev, worst);
    printf("%s | %s | cosine min %.7f | tokens %d/%d\n", name, dev, worst, tok_ok, n_cases);
    if (m->enc && c) {   /* an encoder has no output head: eval is a clear error */
        float logit;
        int32_t t0 = 101;
        CHECK(model_eval(c, &t0, 1, &logit, false) != 0 && strstr(anv_last_error(), "embedding model"));
    }
    free(v);
    model_ctx_free(c);
    model_free(m);
    cJSON_Delete(g);
}

int main(void) {
    anv_log_enabled = 0;
    const char *models = getenv("ANVIL_TEST_MODELS");
    static const char *const names[] = {"bert", "bert-mean", "nomic-bert", "gemma-embedding", "gemma-embedding-nodense",
                                        "bert-bge", "nomic-bert-bge"};
    backend *gpu = NULL;
#ifdef ANVIL_HAVE_VULKAN
    gpu = vkt_open_lavapipe();
#endif
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[1024], golden[256];
        snprintf(path, sizeof path, "%s/embed-%s.gguf", models ? models : ".", names[i]);
        snprintf(golden, sizeof golden, "data/embed/%s.json", names[i]);
        run(names[i], path, golden, NULL, "cpu");
        if (gpu) run(names[i], path, golden, gpu, "vulkan");
    }
    if (gpu) gpu->ops->destroy(gpu);
    return tu_finish();
}
