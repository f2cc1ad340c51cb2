/* generate: prefix reuse, prompt evaluation, the sample/eval loop and streamed text. */
#include "generate.h"

#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "error.h"


int generate(model_ctx *c, sampler *s, const int32_t *prompt, int n_prompt, int n_predict,
             gen_text_fn on_text, void *user, gen_stats *st) {
    gen_stats dummy;
    if (!st) st = &dummy;
    *st = (gen_stats){.n_prompt = n_prompt, .done_reason = "stop"};
    if (n_prompt <= 0) { anv_set_error("empty prompt"); return -1; }
    model *m = model_ctx_model(c);
    const tokenizer *tok = m->tok;
    /* Reuse the longest cached prefix, but always evaluate at least the last prompt token. */
    const int32_t *hist = model_ctx_history(c);
    int keep = 0, n_past = model_ctx_n_past(c);
    while (keep < n_past && keep < n_prompt - 1 && hist[keep] == prompt[keep]) keep++;
    model_ctx_truncate(c, keep);
    if (keep + (n_prompt - keep) > model_ctx_n_ctx(c)) {
        anv_set_error("prompt of %d tokens does not fit the context size %d", n_prompt, model_ctx_n_ctx(c));
        return -1;
    }
    const int n_vocab = m->hp.n_vocab;
    float *logits = malloc((size_t)n_vocab * sizeof(float));
    if (!logits) { anv_set_error("out of memory"); return -1; }
    sampler_reset(s);
    for (int i = 0; i < n_prompt; i++) sampler_accept(s, prompt[i]);

    double t0 = anv_mono_s();
    st->n_prompt_eval = n_prompt - keep;
    if (model_eval(c, prompt + keep, n_prompt - keep, logits, false) != 0) { free(logits); return -1; }
    double t1 = anv_mono_s();
    st->t_prompt = t1 - t0;

    tok_stream ts = {0};
    char text[256];
    int rc = 0;
    for (;;) {
        if (n_predict >= 0 && st->n_gen >= n_predict) { st->done_reason = "length"; break; }
        int32_t id = sampler_sample(s, logits);
        if (id < 0) { rc = -1; break; }  /* every logit NaN/-inf: anv_last_error() says so */
        if (tokenizer_is_eog(tok, id)) { st->done_reason = "stop"; break; }
        sampler_accept(s, id);
        st->n_gen++;
        int len = tok_stream_push(&ts, tok, id, text, (int)sizeof text);
        if (len > (int)sizeof text) len = (int)sizeof text;
        if (len > 0 && on_text && !on_text(text, len, user)) { st->done_reason = "stop"; break; }
        if (n_predict >= 0 && st->n_gen >= n_predict) { st->done_reason = "length"; break; }
        if (model_ctx_n_past(c) >= model_ctx_n_ctx(c)) { st->done_reason = "length"; break; }
        if (model_eval(c, &id, 1, logits, false) != 0) { rc = -1; break; }
    }
    int len = tok_stream_flush(&ts, text, (int)sizeof text);
    if (len > 0 && on_text) on_text(text, len > (int)sizeof text ? (int)sizeof text : len, user);
    st->t_gen = anv_mono_s() - t1;
    free(logits);
    return rc;
}
