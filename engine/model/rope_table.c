/* rope_table: ggml's multi-section rope angles as (cos, sin) rows for rope_rows (see the header). */
#include "rope_table.h"

#include <math.h>

void rope_table_fill(float *table, const int32_t *pos, int n_tok, int n_rot, const int sections[4], rope_sect_mode mode,
                     float freq_base, float freq_scale) {
    /* ggml: theta_scale = base^(-2 / n_dims), n_dims = n_rot (text) or head_dim / 2 (vision) */
    const int n_dims = mode == ROPE_SECT_VISION ? n_rot / 2 : n_rot;
    const float theta_scale = powf(freq_base, -2.0f / (float)n_dims);
    const int sect_dims = sections[0] + sections[1] + sections[2] + sections[3];
    const int sec_w = sections[0] + sections[1], sec_e = sec_w + sections[2];
    for (int t = 0; t < n_tok; t++) {
        const float pt = (float)pos[t], ph = (float)pos[n_tok + t], pw = (float)pos[2 * n_tok + t], pe = (float)pos[3 * n_tok + t];
        float th_t = pt, th_h = ph, th_w = pw, th_e = pe;
        float *row = table + (int64_t)t * n_rot;
        for (int i = 0; i < n_rot / 2; i++) {
            const int sector = sect_dims > 0 ? i % sect_dims : 0;
            if (mode == ROPE_SECT_VISION) {   /* each section restarts at its base */
                if (sector == 0) th_t = pt;
                else if (sector == sections[0]) th_h = ph;
                else if (sector == sec_w) th_w = pw;
                else if (sector == sec_e) th_e = pe;
            }
            float theta;
            if (mode == ROPE_SECT_IMROPE) {
                if (sector % 3 == 1 && sector < 3 * sections[1]) theta = th_h;
                else if (sector % 3 == 2 && sector < 3 * sections[2]) theta = th_w;
                else if (sector % 3 == 0 && sector < 3 * sections[0]) theta = th_t;
                else theta = th_e;
            } else {
                if (sector >= sections[0] && sector < sec_w) theta = th_h;
                else if (sector >= sec_w && sector < sec_e) theta = th_w;
                else if (sector >= sec_e) theta = th_e;
                else theta = th_t;
            }
            const float a = freq_scale * theta;
            row[2 * i] = cosf(a);
            row[2 * i + 1] = sinf(a);
            th_t *= theta_scale;
            th_h *= theta_scale;
            th_w *= theta_scale;
            th_e *= theta_scale;
        }
    }
}
