/* test_vulkan_large: weights larger than one allocation / one binding. With
 * ANVIL_VK_MAX_ALLOCATION=8M a 19 MB Q8_0 matrix is split into row chunks (separate
 * VkBuffers); get_rows and matmul (mat-vec, integer-dot and tiled paths) across the
 * chunk boundaries, and views that start inside a later chunk, must match ref_ops.
 * A single row over the limit is a clear error. */
#include <math.h>
#include "ref_ops.h"
#include "vk_testlib.h"
#ifdef ANVIL_HAVE_VULKAN
#include "vk_int8.h"
#endif

int main(void) {
#ifdef ANVIL_HAVE_VULKAN
    setenv("ANVIL_VK_MAX_ALLOCATION", "8M", 1);
    backend *be = vkt_open_lavapipe();
    if (!be) return tu_finish();
    anv_vk_paths paths = vk_backend_paths(be);
    CHECK(paths.max_allocation == (8u << 20));
    uint64_t seed = 99;
    const uint32_t types[] = { QT_Q8_0, QT_Q4_K };
    for (int k = 0; k < 2; k++) {
        const uint32_t type = types[k];
        const int64_t K = 2048, N = 9000;
        const size_t rb = qtype_row_size(type, K);
        float *w = malloc(sizeof(float) * K * N);
        vkt_fill(&seed, w, K * N, -1, 1);
        uint8_t *q = vkt_quantize(type, w, K, N);
        free(w);
        be_tensor *wt = be->ops->weight_new(be, type, K, N, q);
        CHECK(wt != NULL);
        if (!wt) break;
        int chunks = vk_tensor_chunks(wt);
        CHECKF(chunks >= (int)((N * rb) / (8u << 20)) + 1 && chunks >= 2, "%s: %d chunks", qtype_get(type)->name, chunks);
        printf("%s %lld x %lld (%zu bytes): %d chunks\n", qtype_get(type)->name, (long long)N, (long long)K, N * rb, chunks);

        /* get_rows across every chunk */
        int32_t ids[6] = { 0, 3855, 3856, 8999, 4500, 7711 };
        float *got = malloc(sizeof(float) * K * 6), *ref = malloc(sizeof(float) * K * 6);
        be_tensor *o = be->ops->tensor_new(be, QT_F32, K, 6);
        be->ops->get_rows(be, wt, ids, 6, o);
        be_download(o, 0, got, sizeof(float) * K * 6);
        ref_get_rows(type, q, K, ids, 6, ref);
        CHECKF(tu_rel_err(got, ref, K * 6) < 1e-6f, "get_rows err %g", tu_rel_err(got, ref, K * 6));
        be_tensor_free(o);
        free(got); free(ref);

        /* matmul on the whole matrix and on a view starting in a later chunk */
        const int toks[] = { 1, 12, 40 };
        for (int v = 0; v < 2; v++) {
            const int64_t r0 = v ? 5003 : 0, nr = v ? 3001 : N;
            be_tensor wv = be_view_rows(wt, r0, nr);
            for (int ti = 0; ti < 3; ti++) {
                const int nt = toks[ti];
                float *x = malloc(sizeof(float) * K * nt), *g = malloc(sizeof(float) * nr * nt), *r = malloc(sizeof(float) * nr * nt);
                vkt_fill(&seed, x, K * nt, -1, 1);
                be_tensor *xt = vkt_upload_new(be, QT_F32, K, nt, x), *ot = be->ops->tensor_new(be, QT_F32, nr, nt);
                be->ops->matmul(be, &wv, xt, ot, nt, false);
                be_download(ot, 0, g, sizeof(float) * nr * nt);
                ref_matmul(type, q + (size_t)r0 * rb, K, nr, x, r, nt, false);
                const bool vec = nt <= paths.mv_max_tok;
                float tol = (vec && paths.int8 && vkq_covers(type)) ? 3e-2f /* activations quantized to 8 bits */ : (!vec && paths.fp16) ? 4e-3f : 2e-5f;
                float err = tu_rel_err(g, r, nr * nt);
                CHECKF(err < tol, "%s view %d n_tok %d: rel err %g", qtype_get(type)->name, v, nt, err);
                be_tensor_free(xt); be_tensor_free(ot);
                free(x); free(g); free(r);
            }
        }
        be_tensor_free(wt);
        free(q);
    }
    /* one row larger than an allocation: a clear error, no crash */
    be_tensor *huge = be->ops->tensor_new(be, QT_F32, 4 << 20, 1);
    CHECK(huge == NULL && strstr(anv_last_error(), "exceeds"));
    CHECKF(be_error(be) == NULL, "%s", be_error(be));
    be->ops->destroy(be);
    const char *val = getenv("ANVIL_VK_VALIDATE");
    if (val && strcmp(val, "1") == 0) CHECKF(vk_validation_messages() == 0, "%d validation messages", vk_validation_messages());
#else
    CHECK(1);
#endif
    return tu_finish();
}
