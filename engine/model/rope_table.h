/* rope_table: the per-row (cos, sin) tables of backend.h's rope_rows for ggml's multi-section
 * rope (ggml_rope_multi): the angles of qwen-vl's M-RoPE image positions in the text model and
 * of the 2-D rope in the qwen-vl vision encoders, computed with ggml_mrope_cache_init's float
 * recurrence so they round as llama.cpp's do. */
#ifndef ANVIL_ROPE_TABLE_H
#define ANVIL_ROPE_TABLE_H
#include <stdint.h>

typedef enum {
    ROPE_SECT_MROPE = 0,    /* qwen2-vl text: sections consecutive (t, then h, then w, then e) */
    ROPE_SECT_IMROPE = 1,   /* qwen3-vl / qwen3.5 text: interleaved t, h, w by pair index mod 3 */
    ROPE_SECT_VISION = 2,   /* the ViT: consecutive sections, each restarting its frequencies */
} rope_sect_mode;

/* table [n_tok][n_rot]: for token t the positions pos[k * n_tok + t] (k = t, h, w, e: ggml's
 * layout of a multi-rope position tensor), pair i's (cos, sin) at 2i, 2i + 1. theta base
 * freq_base^(-2 / n_rot) per pair (VISION: n_rot is the whole head and the angle uses
 * n_rot / 2 dims, as ggml's vision mode does). */
void rope_table_fill(float *table, const int32_t *pos, int n_tok, int n_rot, const int sections[4], rope_sect_mode mode,
                     float freq_base, float freq_scale);
#endif
