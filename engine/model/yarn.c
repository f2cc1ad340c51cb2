/* yarn: YaRN rope scaling hyperparameters and per-layer rope parameters. Facts from
 * llama.cpp: src/llama-context.cpp (ext_factor = 1 for a yarn file; attn_factor =
 * get_mscale(factor) / (1 + 0.1 ln factor) * rope.scaling.attn_factor, the division undone by
 * ggml's rope), src/llama-model.cpp (n_ctx_orig_yarn = original_context_length or
 * context_length; betas default 32 and 1; mistral3's loader also reads the beta and log_mul
 * keys, src/models/mistral3.cpp) and ggml.c ggml_rope_yarn_corr_dims. */
#include "yarn.h"

#include <math.h>
#include <stdio.h>

#include "error.h"

static bool opt_f32(const gguf_file *f, const char *arch, const char *suffix, float *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    if (gguf_get_f32(f, key, out)) return true;
    return gguf_find(f, key) == NULL;
}

/* llama.cpp's get_mscale: 1 at factor <= 1, else 0.1 * mscale * ln(factor) + 1. */
static float get_mscale(float factor, float mscale) {
    return factor <= 1.0f ? 1.0f : 0.1f * mscale * logf(factor) + 1.0f;
}

/* An optional f32 key "<arch>.<suffix>" that must be finite (and >= 0 with nonneg). */
static bool opt_finite(const gguf_file *f, const char *arch, const char *suffix, float *out, bool nonneg) {
    if (!opt_f32(f, arch, suffix, out)) return false;
    if (!isfinite(*out) || (nonneg && *out < 0)) {
        anv_set_error("%s: metadata %s.%s = %g is invalid (must be a finite number%s)", f->path, arch, suffix,
                      (double)*out, nonneg ? " >= 0" : "");
        return false;
    }
    return true;
}

int yarn_read_hparams(const gguf_file *f, const char *arch, float factor, bool arch_keys, model_hparams *hp) {
    hp->rope_scale = factor > 0 ? 1.0f / factor : 1.0f;
    hp->rope_scale_swa = hp->rope_scale;
    hp->yarn_ext_factor = 1.0f;
    hp->yarn_beta_fast = 32.0f;
    hp->yarn_beta_slow = 1.0f;
    hp->yarn_orig_ctx = hp->n_ctx_train;
    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.original_context_length", arch);
    uint32_t oc;
    if (gguf_get_u32(f, key, &oc)) {
        if (oc < 1 || oc > (1u << 30)) { anv_set_error("%s: metadata %s = %u is invalid (must be 1..2^30)", f->path, key, oc); return -1; }
        hp->yarn_orig_ctx = (int)oc;
    } else if (gguf_find(f, key)) {
        return -1;
    }
    float attn = 1.0f;
    if (!opt_f32(f, arch, "rope.scaling.attn_factor", &attn)) return -1;
    if (!isfinite(attn) || attn <= 0) {
        anv_set_error("%s: metadata %s.rope.scaling.attn_factor = %g is invalid (must be > 0)", f->path, arch, (double)attn);
        return -1;
    }
    float log_mul = 0.0f, mscale_key = 1.0f;   /* mscale_all_dim (0 = absent) and mscale */
    if (arch_keys) {
        /* llama.cpp's names; Ollama's converter writes the same values as rope.scaling.beta_fast,
         * beta_slow, mscale and mscale_all_dim (read where llama.cpp's are absent) */
        static const char *const names[2][3] = {
            {"rope.scaling.yarn_beta_fast", "rope.scaling.yarn_beta_slow", "rope.scaling.yarn_log_multiplier"},
            {"rope.scaling.beta_fast", "rope.scaling.beta_slow", "rope.scaling.mscale_all_dim"}};
        float *dst[3] = {&hp->yarn_beta_fast, &hp->yarn_beta_slow, &log_mul};
        for (int k = 0; k < 3; k++) {
            char key[128];
            snprintf(key, sizeof key, "%s.%s", arch, names[0][k]);
            const char *name = gguf_find(f, key) ? names[0][k] : names[1][k];
            if (!opt_finite(f, arch, name, dst[k], k == 2)) return -1;
        }
        if (!opt_finite(f, arch, "rope.scaling.mscale", &mscale_key, true)) return -1;
        if (mscale_key == 0.0f) mscale_key = 1.0f;   /* Ollama: a zero mscale means none */
    }
    const float fac = 1.0f / hp->rope_scale;
    /* with log_mul (mscale_all_dim): get_mscale(factor, mscale) / get_mscale(factor, log_mul), mscale
     * 1 unless Ollama's key says (llama.cpp assumes 1); the division by 1 + 0.1 ln factor is undone
     * by the rope op */
    const float mscale = log_mul != 0.0f ? get_mscale(fac, mscale_key) / get_mscale(fac, log_mul) : get_mscale(fac, 1.0f);
    hp->yarn_attn_factor = mscale / (1.0f + 0.1f * logf(fac)) * attn;
    return 0;
}

static float corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
    return (float)n_dims * logf((float)n_ctx_orig / (n_rot * 2.0f * 3.14159265358979323846f)) / (2.0f * logf(base));
}

void yarn_rope_params(const model_hparams *hp, float freq_base, be_rope_params *rp) {
    if (hp->yarn_ext_factor == 0.0f) return;
    const int n = hp->n_rot;
    const float start = floorf(corr_dim(n, hp->yarn_orig_ctx, hp->yarn_beta_fast, freq_base));
    const float end = ceilf(corr_dim(n, hp->yarn_orig_ctx, hp->yarn_beta_slow, freq_base));
    rp->ext_factor = hp->yarn_ext_factor;
    rp->attn_factor = hp->yarn_attn_factor;
    rp->corr_lo = start > 0 ? start : 0;
    rp->corr_hi = end < (float)(n - 1) ? end : (float)(n - 1);
}
