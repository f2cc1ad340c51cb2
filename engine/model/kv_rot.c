/* kv_rot: the Hadamard rotation of quantized KV caches (see kv_rot.h). */
#include "kv_rot.h"
#include "error.h"
#include "quant.h"
#include "settings.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void kv_rot_sizes(uint32_t kv_type, int head_dim, int *n_k, int *n_v) {
    *n_k = *n_v = 0;
    if (anv_setting_off("ANVIL_KV_ROTATION")) return;
    if ((kv_type != QT_Q8_0 && kv_type != QT_Q4_0) || head_dim <= 0 || head_dim % 64) return;
    int n = 64;
    while (head_dim % (2 * n) == 0) n *= 2;
    *n_k = n;
    *n_v = 64; /* llama.cpp: smaller groups for V measured better */
}

int kv_rot_head_dim(const model_hparams *hp) {
    int hd = hp->head_dim_k;
    for (int il = 0; il < hp->n_layer; il++)
        if (model_layer_head_dim(hp, il) < hd) hd = model_layer_head_dim(hp, il);
    return hd;
}

void kv_rot_hadamard(float *h, int n) {
    const float s = 1.0f / sqrtf((float)n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) h[(size_t)i * n + j] = __builtin_popcount((unsigned)(i & j)) & 1 ? -s : s;
}

int kv_rot_init(kv_rot *r, uint32_t kv_type, const model *m) {
    memset(r, 0, sizeof *r);
    kv_rot_sizes(kv_type, kv_rot_head_dim(&m->hp), &r->n_k, &r->n_v);
    if (!r->n_k) return 0;
    r->host_k = malloc((size_t)r->n_k * r->n_k * sizeof(float));
    r->host_v = malloc((size_t)r->n_v * r->n_v * sizeof(float));
    if (!r->host_k || !r->host_v) { anv_set_error("kv rotation: out of memory"); kv_rot_free(r); return -1; }
    kv_rot_hadamard(r->host_k, r->n_k);
    kv_rot_hadamard(r->host_v, r->n_v);
    for (int il = 0; il < m->hp.n_layer; il++) {
        backend *be = m->layers[il].be;
        int i = 0;
        while (i < r->n_be && r->be[i] != be) i++;
        if (i < r->n_be) continue;
        if (r->n_be == KV_ROT_MAX_BE) { anv_set_error("kv rotation: more than %d backends", KV_ROT_MAX_BE); kv_rot_free(r); return -1; }
        r->be[i] = be;
        r->n_be++;
        r->hk[i] = be->ops->weight_new(be, QT_F32, r->n_k, r->n_k, r->host_k);
        r->hv[i] = be->ops->weight_new(be, QT_F32, r->n_v, r->n_v, r->host_v);
        if (!r->hk[i] || !r->hv[i]) { kv_rot_free(r); return -1; }
    }
    return 0;
}

void kv_rot_free(kv_rot *r) {
    for (int i = 0; i < r->n_be; i++) { be_tensor_free(r->hk[i]); be_tensor_free(r->hv[i]); }
    free(r->host_k);
    free(r->host_v);
    memset(r, 0, sizeof *r);
}

void kv_rot_apply(const kv_rot *r, backend *be, bool v, const be_tensor *x, be_tensor *out, int64_t rows) {
    int i = 0;
    while (i < r->n_be && r->be[i] != be) i++;
    if (i == r->n_be) { be_fail(be, "kv rotation: no matrix on this backend"); return; }
    const int n = v ? r->n_v : r->n_k;
    const int64_t groups = rows * x->cols / n;
    be_tensor xr = be_view_reshape(x, n, groups), orr = be_view_reshape(out, n, groups);
    be->ops->matmul(be, v ? r->hv[i] : r->hk[i], &xr, &orr, (int)groups, false);
}
