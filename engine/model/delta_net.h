/* delta_net: qwen35's gated DeltaNet layers in the one forward pass (pass.h): the block, its
 * activation scratch, and each context's recurrent state (per recurrent layer a conv state
 * and a delta-rule state on the layer's backend) with the checkpoints that let
 * model_ctx_truncate roll a context back. Internal to engine/model. */
#ifndef ANVIL_DELTA_NET_H
#define ANVIL_DELTA_NET_H
#include "pass.h"

/* How many state checkpoints a context keeps (a ring, newest replacing oldest): one is taken
 * after every evaluation of >= 2 tokens of a sequence (a prompt or a prompt chunk), none
 * after single-token decode steps. */
#define RS_CHECKPOINTS 3

/* x += ssm_out . gated_norm(delta_rule(silu(conv(qkv x'))), z) with x' = norm(x): the layer's
 * token mixing; the feed-forward block follows. Each sequence of the batch runs the conv and
 * the delta rule on its own rows with its own context's state. */
void delta_net_block(const layer_pass *p);

/* The scratch the block needs on one backend (hp has recurrent layers), and its release. */
int delta_net_scratch_new(scratch *s, const model_hparams *hp, int n_batch);
void delta_net_scratch_free(scratch *s);

/* One context's recurrent state: NULL + no error for a model without recurrent layers. */
typedef struct recurrent_state recurrent_state;
/* Allocates the zeroed states of every recurrent layer of m; *failed on error. */
recurrent_state *rs_new(const model *m, bool *failed);
void rs_free(recurrent_state *rs);
/* Zeroes the states and forgets the checkpoints (model_ctx_reset). */
void rs_reset(recurrent_state *rs);
/* Keeps a copy of the states as they are after pos tokens. */
void rs_checkpoint(recurrent_state *rs, int pos);
/* The states rolled back to the newest checkpoint at a position <= n (zero states at 0 if
 * none); returns that position. Checkpoints after it are forgotten. */
int rs_rollback(recurrent_state *rs, int n);
#endif
