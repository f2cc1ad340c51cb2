/* vk_attention: the attention op of the Vulkan backend (backend.h): argument checks and
 * the choice between two kernels. The single-pass flash attention (shaders/flash_attn.comp)
 * runs one workgroup per (query row, head). Split-K (issue 14) is for decode and small
 * batches over long contexts, where n_tok * n_head workgroups leave most compute units idle:
 * the span of keys any query of the batch can see is cut into S chunks, one workgroup per
 * (query row, head, chunk) writes a partial (m, l, unnormalised o) to scratch
 * (flash_attn.comp with SPLIT) and flash_attn_merge.comp combines the S partials into out.
 * When: n_tok <= SPLITK_MAX_TOK, the batch's visible span >= 2 * SPLITK_MIN_CHUNK keys and
 * n_tok * n_head < the target of 4 workgroups per compute unit; then S = ceil(target /
 * (n_tok * n_head)), at most span / SPLITK_MIN_CHUNK and SPLITK_MAX, the chunk
 * ceil(span / S) rounded up to SPLITK_ALIGN keys (the 32 of a Q8_0/Q4_0 block).
 * ANVIL_VK_DISABLE=splitk turns it off; ANVIL_VK_SPLITK=<S> forces S whenever
 * n_tok <= SPLITK_MAX_TOK (tests: S = 1 and S beyond the number of chunks included). */
#include <stdlib.h>
#include <unistd.h>
#include "quant.h"
#include "settings.h"
#include "vk_internal.h"

#define SPLITK_MAX_TOK 4
#define SPLITK_MIN_CHUNK 128
#define SPLITK_ALIGN 32
#define SPLITK_MAX 256
#define SPLITK_WG_PER_CU 4

/* Compute units: AMD shader-core properties (shader engines x arrays x CUs), NVIDIA SM count;
 * lavapipe: its worker threads (LP_NUM_THREADS, else one per host CPU); otherwise 32. */
static uint32_t compute_units(vk_ctx *c) {
    if (c->n_cu) return c->n_cu;
    uint32_t n = 0;
    if (c->info.type == ANV_VK_DEVICE_CPU) {
        const char *t = anv_setting_raw("LP_NUM_THREADS");
        long v = t && *t ? strtol(t, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
        n = v > 0 && v < 4096 ? (uint32_t)v : 1;
    } else {
        VkPhysicalDeviceShaderCorePropertiesAMD amd = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD };
        VkPhysicalDeviceShaderSMBuiltinsPropertiesNV nv = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV };
        VkPhysicalDeviceProperties2 p2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2 };
        const bool has_amd = vk_has_device_extension(c->vi, c->pdev, VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME);
        const bool has_nv = vk_has_device_extension(c->vi, c->pdev, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME);
        if (has_amd) { amd.pNext = p2.pNext; p2.pNext = &amd; }
        if (has_nv) { nv.pNext = p2.pNext; p2.pNext = &nv; }
        if (has_amd || has_nv) vkGetPhysicalDeviceProperties2(c->pdev, &p2);
        if (has_amd) n = amd.shaderEngineCount * amd.shaderArraysPerEngineCount * amd.computeUnitsPerShaderArray;
        if (!n && has_nv) n = nv.shaderSMCount;
        if (!n || n > 4096) n = 32;
    }
    c->n_cu = n;
    return n;
}

/* The split count for nt queries x n_head heads over a span of keys; 0 = the single-pass kernel. */
static uint32_t splitk_count(vk_ctx *c, int nt, int n_head, uint32_t span) {
    if (!c->use_splitk || nt > SPLITK_MAX_TOK) return 0;
    if (c->splitk_forced > 0) return (uint32_t)c->splitk_forced;
    const uint64_t groups = (uint64_t)nt * (uint64_t)n_head, target = (uint64_t)SPLITK_WG_PER_CU * compute_units(c);
    uint64_t s = (target + groups - 1) / groups;
    if (s > span / SPLITK_MIN_CHUNK) s = span / SPLITK_MIN_CHUNK;
    if (s > SPLITK_MAX) s = SPLITK_MAX;
    return s >= 2 ? (uint32_t)s : 0;
}

static vk_chunk *scratch_fa(vk_ctx *c, size_t bytes) {
    if (c->scratch_fa && c->scratch_fa->total >= bytes) return &c->scratch_fa->chunk[0];
    if (c->scratch_fa) { vk_flush(c); vk_storage_free(c, c->scratch_fa); c->scratch_fa = NULL; }
    size_t want = bytes < (256u << 10) ? (256u << 10) : bytes;
    if (want > c->max_binding) want = bytes;
    c->scratch_fa = vk_storage_new(c, want, 4, false);
    if (!c->scratch_fa || c->scratch_fa->n_chunks != 1) {
        if (!be_failed(&c->base)) be_fail(&c->base, "vulkan attention: cannot allocate %zu bytes of split-K scratch in one buffer", want);
        return NULL;
    }
    return &c->scratch_fa->chunk[0];
}

void vk_op_attention(backend *be, const be_tensor *q, const be_tensor *k, const be_tensor *v, be_tensor *out, const be_attn_params *p) {
    vk_ctx *c = vk_of(be);
    if (be_failed(&c->base) || p->n_tok <= 0) return;
    if (!vk_f32_tensor(c, q, "attention") || !vk_f32_tensor(c, out, "attention") || !vk_same_be(c, k, "attention") || !vk_same_be(c, v, "attention")) return;
    if (k->type != v->type || k->cols != v->cols) { be_fail(&c->base, "vulkan attention: K and V caches differ in type or shape"); return; }
    const int kvi = k->type == QT_F32 ? 0 : k->type == QT_F16 ? 1 : k->type == QT_Q8_0 ? 2 : k->type == QT_Q4_0 ? 3 : -1;
    const int pipe = kvi < 0 ? -1 : VKP_FA_F32 + kvi;
    if (pipe < 0) { be_fail(&c->base, "vulkan attention: KV type %u unsupported (F16/F32/Q8_0/Q4_0)", k->type); return; }
    if (p->n_head <= 0 || p->n_kv_head <= 0 || p->n_head % p->n_kv_head || p->head_dim <= 0 || p->head_dim > 512 || p->pos0 < 0 ||
        ((k->type == QT_Q8_0 || k->type == QT_Q4_0) && p->head_dim % 32) || (int64_t)p->n_kv_head * p->head_dim != k->cols ||
        (int64_t)p->n_head * p->head_dim > q->cols || (int64_t)p->n_head * p->head_dim > out->cols) {
        be_fail(&c->base, "vulkan attention: bad parameters (n_head %d, n_kv_head %d, head_dim %d, cache cols %lld)",
                p->n_head, p->n_kv_head, p->head_dim, (long long)k->cols);
        return;
    }
    const int64_t n_kv = (int64_t)p->pos0 + p->n_tok;
    if (n_kv > k->rows) { be_fail(&c->base, "vulkan attention: %lld positions exceed the cache (%lld rows)", (long long)n_kv, (long long)k->rows); return; }
    const size_t kvrb = be_row_bytes(k);
    size_t kl, vl;
    vk_chunk *kc = vk_span(c, k, 0, (size_t)n_kv * kvrb, &kl, "attention");
    vk_chunk *vc = vk_span(c, v, 0, (size_t)n_kv * kvrb, &vl, "attention");
    if (!kc || !vc) return;
    size_t sl = 0;
    vk_chunk *sc = NULL; /* attention sinks [n_head] (gpt-oss) */
    if (p->sinks) {
        if (!vk_f32_tensor(c, p->sinks, "attention") || p->sinks->cols * p->sinks->rows < p->n_head) {
            if (!be_failed(&c->base)) be_fail(&c->base, "vulkan attention: sinks must be f32 with n_head %d elements", p->n_head);
            return;
        }
        sc = vk_span(c, p->sinks, 0, (size_t)p->n_head * 4, &sl, "attention");
        if (!sc) return;
    }
    /* query tokens split where q or out change device buffer */
    int64_t bounds[VK_MAX_RANGES + 1] = { 0, (int64_t)p->n_tok * q->cols };
    int nr = 1;
    if (q->cols == out->cols) {
        const be_tensor *ts[2] = { q, out };
        nr = vk_elem_ranges(c, ts, 2, (int64_t)p->n_tok * q->cols, q->cols, bounds, "attention");
    }
    for (int r = 0; r < nr; r++) {
        const int tb = (int)(bounds[r] / q->cols), te = (int)(bounds[r + 1] / q->cols), nt = te - tb;
        size_t ql, ol;
        vk_chunk *qc = vk_span(c, q, (size_t)tb * (size_t)q->cols * 4, (size_t)nt * (size_t)q->cols * 4, &ql, "attention");
        vk_chunk *oc = vk_span(c, out, (size_t)tb * (size_t)out->cols * 4, (size_t)nt * (size_t)out->cols * 4, &ol, "attention");
        if (!qc || !oc) return;
        uint32_t gx, gy;
        vk_grid2((uint32_t)(nt * p->n_head), &gx, &gy);
        struct { uint32_t n_tok, pos0, n_head, n_kv_head, head_dim, window, q_off, q_stride, k_off, v_off, kv_stride, o_off, o_stride, groups_x; float scale, softcap; uint32_t noncausal, n_kv, has_sinks, s_off, kv_lo0, chunk, n_split; } pc = {
            (uint32_t)nt, (uint32_t)(p->pos0 + tb), (uint32_t)p->n_head, (uint32_t)p->n_kv_head, (uint32_t)p->head_dim,
            (uint32_t)(p->window > 0 ? p->window : 0), (uint32_t)(ql / 4), (uint32_t)q->cols, (uint32_t)kl, (uint32_t)vl, (uint32_t)kvrb,
            (uint32_t)(ol / 4), (uint32_t)out->cols, gx, p->scale, p->softcap, p->noncausal ? 1u : 0u, (uint32_t)n_kv,
            sc ? 1u : 0u, (uint32_t)(sl / 4), 0, 0, 0 };
        /* keys any query of tokens [tb, te) can see (flash_attn.comp's lo/hi of the first and the last) */
        const int64_t pa = (int64_t)p->pos0 + tb, pz = (int64_t)p->pos0 + te - 1, w = p->window > 0 ? p->window : 0;
        int64_t lo = w && pa + 1 > w ? pa + 1 - w : 0, hi = pz;
        if (p->noncausal) {
            lo = w && pa > w / 2 ? pa - w / 2 : 0;
            hi = w && pz + w / 2 < n_kv - 1 ? pz + w / 2 : n_kv - 1;
        }
        const uint32_t span_keys = (uint32_t)(hi + 1 - lo);
        const uint32_t S = splitk_count(c, nt, p->n_head, span_keys);
        vk_binding b[5] = { { qc, false }, { kc, false }, { vc, false }, { oc, true }, { sc ? sc : qc, false } };
        const uint64_t q_bytes = (uint64_t)nt * (uint64_t)p->n_head * (uint64_t)p->head_dim * 4;
        if (!S) {
            vk_dispatch(c, pipe, 0, b, 5, &pc, gx, gy, 1, 2 * q_bytes + 2 * (uint64_t)(p->noncausal ? n_kv : p->pos0 + te) * kvrb);
            continue;
        }
        /* split-K: partials [nt * n_head][S][2 + head_dim] in scratch, then the merge */
        uint32_t chunk = (span_keys + S - 1) / S;
        chunk = (chunk + SPLITK_ALIGN - 1) / SPLITK_ALIGN * SPLITK_ALIGN;
        const uint32_t n_split = c->splitk_forced > 0 ? S : (span_keys + chunk - 1) / chunk; /* forced: empty chunks kept (tests) */
        const uint64_t part_bytes = (uint64_t)nt * (uint64_t)p->n_head * n_split * ((uint64_t)p->head_dim + 2) * 4;
        vk_chunk *pch = scratch_fa(c, (size_t)part_bytes);
        if (!pch) return;
        pc.o_off = 0; pc.kv_lo0 = (uint32_t)lo; pc.chunk = chunk; pc.n_split = n_split;
        b[3] = (vk_binding){ pch, true };
        vk_dispatch(c, VKP_FA_SPLIT_F32 + kvi, 0, b, 5, &pc, gx, gy, n_split, q_bytes + part_bytes + 2 * (uint64_t)span_keys * kvrb);
        struct { uint32_t n_q, n_head, head_dim, n_split, o_off, o_stride, has_sinks, s_off, groups_x; } mpc = {
            (uint32_t)(nt * p->n_head), (uint32_t)p->n_head, (uint32_t)p->head_dim, n_split, (uint32_t)(ol / 4), (uint32_t)out->cols,
            sc ? 1u : 0u, (uint32_t)(sl / 4), gx };
        vk_binding mb[3] = { { pch, false }, { oc, true }, { sc ? sc : pch, false } };
        vk_dispatch(c, VKP_FA_MERGE, 0, mb, 3, &mpc, gx, gy, 1, part_bytes + q_bytes);
    }
}
