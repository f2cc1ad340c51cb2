/* yarn: YaRN rope scaling (rope.scaling.type "yarn", as gpt-oss files carry it) the way
 * today's llama.cpp applies it: the hyperparameters read from a GGUF and the per-layer
 * be_rope_params fields (ext_factor, attn_factor, correction dims) the rope op takes. */
#ifndef ANVIL_YARN_H
#define ANVIL_YARN_H
#include "model.h"

/* For a file whose {arch}.rope.scaling.type is "yarn" (factor: rope.scaling.factor, 0 =
 * absent): sets rope_scale(_swa) = 1/factor, ext_factor 1, the orig context
 * (rope.scaling.original_context_length, default context_length), betas 32 / 1 and
 * llama.cpp's attn_factor. arch_keys (mistral3): also the optional rope.scaling.yarn_beta_fast,
 * yarn_beta_slow and yarn_log_multiplier (mscale_all_dim: attn_factor = get_mscale(factor, 1) /
 * get_mscale(factor, log_mul)). -1 + one-line error on an invalid value. */
int yarn_read_hparams(const gguf_file *f, const char *arch, float factor, bool arch_keys, model_hparams *hp);
/* Fills rp's YaRN fields for a layer rotating with freq_base (no-op when YaRN is off). */
void yarn_rope_params(const model_hparams *hp, float freq_base, be_rope_params *rp);
#endif
