/* yarn: YaRN rope scaling hyperparameters and per-layer rope parameters. Facts from
 * llama.cpp: src/llama-context.cpp (ext_factor = 1 for a yarn file; attn_factor =
 * get_mscale(factor) / (1 + 0.1 ln factor) * rope.scaling.attn_factor, the division undone by
 * ggml's rope), src/llama-model.cpp (n_ctx_orig_yarn = original_context_length or
 * context_length; betas default 32 and 1) and ggml.c ggml_rope_yarn_corr_dims. */
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

int yarn_read_hparams(const gguf_file *f, const char *arch, float factor, model_hparams *hp) {
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
    const float fac = 1.0f / hp->rope_scale;
    const float mscale = fac <= 1.0f ? 1.0f : 0.1f * logf(fac) + 1.0f;
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
