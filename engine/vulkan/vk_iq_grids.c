/* vk_iq_grids: the lookup grids of the i-quant types (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS,
 * IQ3_S, IQ1_S/IQ1_M; gguf/quant_iq_tables.c) as small device buffers, uploaded on first use
 * and bound as the last storage buffer of those types' get_rows / mat-vec / mat-mat kernels
 * (shaders/dequant_iq.glsl reads them as `iq_grid[]`). A buffer and not a GLSL constant array:
 * with the grids as constant arrays, lavapipe spent minutes per kernel in LLVM (CoroSplit's
 * frame building), so test_vulkan_ops never finished; a buffer also keeps the kernels small. */
#include "vk_internal.h"
#include "quant_iq.h"

static const struct { uint32_t qtype; const void *data; size_t bytes; } k_grids[VK_IQ_N_GRIDS] = {
    { QT_IQ2_XXS, iq2xxs_grid, sizeof iq2xxs_grid }, { QT_IQ2_XS, iq2xs_grid, sizeof iq2xs_grid },
    { QT_IQ2_S, iq2s_grid, sizeof iq2s_grid },       { QT_IQ3_XXS, iq3xxs_grid, sizeof iq3xxs_grid },
    { QT_IQ3_S, iq3s_grid, sizeof iq3s_grid },       { QT_IQ1_S, iq1s_grid, sizeof iq1s_grid },
};

int vk_iq_grid_index(uint32_t qtype) {
    if (qtype == QT_IQ1_M) return 5; /* IQ1_M uses IQ1_S's grid */
    for (int i = 0; i < VK_IQ_N_GRIDS; i++)
        if (k_grids[i].qtype == qtype) return i;
    return -1;
}

vk_chunk *vk_iq_grid(vk_ctx *c, int g) {
    if (g < 0 || g >= VK_IQ_N_GRIDS) return NULL;
    if (!c->iq_grid[g]) {
        vk_storage *s = vk_storage_new(c, k_grids[g].bytes, 4, false);
        if (!s || s->n_chunks != 1) {
            if (s) vk_storage_free(c, s);
            be_fail(&c->base, "vulkan: cannot allocate the %zu-byte i-quant grid", k_grids[g].bytes);
            return NULL;
        }
        vk_record_upload(c, &s->chunk[0], 0, k_grids[g].data, k_grids[g].bytes);
        c->iq_grid[g] = s;
    }
    return &c->iq_grid[g]->chunk[0];
}

void vk_iq_grids_free(vk_ctx *c) {
    for (int g = 0; g < VK_IQ_N_GRIDS; g++) {
        vk_storage_free(c, c->iq_grid[g]);
        c->iq_grid[g] = NULL;
    }
}
