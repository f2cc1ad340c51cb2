/* generate: prefix reuse, prompt evaluation, then model_eval + gen_seq_step per token. */
#include "generate.h"

#include <stdlib.h>

#include "clock.h"
#include "error.h"

int generate_seq(model_ctx *c, const gen_seq_config *cfg, const int32_t *prompt, int n_prompt,
                 gen_stats *st) {
    gen_stats dummy;
    if (!st) st = &dummy;
    *st = (gen_stats){.n_prompt = n_prompt, .done_reason = "stop"};
    if (n_prompt <= 0) { anv_set_error("empty prompt"); return -1; }
    model *m = model_ctx_model(c);
    /* Reuse the longest cached prefix, but always evaluate at least the last prompt token. */
    const int32_t *hist = model_ctx_history(c);
    int keep = 0, n_past = model_ctx_n_past(c);
    while (keep < n_past && keep < n_prompt - 1 && hist[keep] == prompt[keep]) keep++;
    model_ctx_truncate(c, keep);
    keep = model_ctx_n_past(c);   /* a recurrent state may roll back further than asked (model.h) */
    if (n_prompt > model_ctx_n_ctx(c)) {
        anv_set_error("prompt of %d tokens does not fit the context size %d", n_prompt, model_ctx_n_ctx(c));
        return -1;
    }
    float *logits = malloc((size_t)m->hp.n_vocab * sizeof(float));
    if (!logits) { anv_set_error("out of memory"); return -1; }
    gen_seq_config sc = *cfg;
    if (!sc.tok) sc.tok = m->tok;
    sampler_reset(sc.smp);
    for (int i = 0; i < n_prompt; i++)   /* an image's rows (vision_eval_prompt) are no tokens to penalise */
        if (prompt[i] != MODEL_TOKEN_EMBD) sampler_accept(sc.smp, prompt[i]);

    double t0 = anv_mono_s();
    st->n_prompt_eval = n_prompt - keep;
    if (model_eval(c, prompt + keep, n_prompt - keep, logits, false) != 0) { free(logits); return -1; }
    double t1 = anv_mono_s();
    st->t_prompt = t1 - t0;

    gen_seq g;
    gen_seq_init(&g, &sc);
    gen_status s;
    int rc = 0;
    while ((s = gen_seq_step(&g, logits, model_ctx_n_past(c), model_ctx_n_ctx(c))) == GEN_CONTINUE)
        if (model_eval(c, &g.pending, 1, logits, false) != 0) { rc = -1; break; }
    if (s == GEN_ERROR) rc = -1;
    if (rc == 0) gen_seq_finish(&g);
    st->n_gen = g.n_gen;
    if (g.done_reason) st->done_reason = g.done_reason;
    st->t_gen = anv_mono_s() - t1;
    free(logits);
    return rc;
}

int generate(model_ctx *c, sampler *s, const int32_t *prompt, int n_prompt, int n_predict,
             gen_text_fn on_text, void *user, gen_stats *st) {
    gen_seq_config cfg = {.smp = s, .num_predict = n_predict, .on_text = on_text, .user = user};
    return generate_seq(c, &cfg, prompt, n_prompt, st);
}
