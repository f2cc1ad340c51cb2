// hip_kernels: every device kernel of the HIP backend, one source for hipcc (AMD, built
// per gfx target into code objects embedded in anvil) and nvcc (tools/hip-nvcc-check.sh).
// Only the neutral subset in hip_vendor.h is used. Each kernel takes one argument block
// from hip_args.h and is exported unmangled as "anv_<op>[_<type>]".
//  - mat-vec (decode, n_tok <= ANV_MV_MAX_TOK): wave32, 4 waves x 2 rows per block, the
//    activations staged in LDS in chunks and shared by the block's 8 rows, wave reductions
//    by xor shuffles;
//  - tiled matmul (prefill): 64x64 output tile per 256-thread block, weights dequantized
//    into LDS 32 columns at a time, 4x4 outputs per thread;
//  - attention: one block per (token, head), keys in chunks of 128 with an online softmax
//    (one pass over the KV cache, F32/F16/Q8_0/Q4_0), GQA, sliding window, softcap, noncausal.
#include "hip_args.h"
#include "hip_dequant.h"

#define MV_CHUNK 512

template <int T> __device__ void matvec(const anv_matmul_args a) {
    __shared__ float xs[ANV_MV_MAX_TOK][MV_CHUNK];
    const int lane = threadIdx.x % ANV_WARP, wave = threadIdx.x / ANV_WARP;
    const int64_t r0 = ((int64_t)blockIdx.x * ANV_MV_WAVES + wave) * ANV_MV_ROWS_PER_WAVE;
    const float *x = (const float *)a.x;
    float acc[ANV_MV_ROWS_PER_WAVE][ANV_MV_MAX_TOK];
    for (int rr = 0; rr < ANV_MV_ROWS_PER_WAVE; rr++)
        for (int t = 0; t < ANV_MV_MAX_TOK; t++) acc[rr][t] = 0.0f;
    for (int64_t c0 = 0; c0 < a.cols; c0 += MV_CHUNK) {
        const int n = a.cols - c0 < MV_CHUNK ? (int)(a.cols - c0) : MV_CHUNK;
        __syncthreads();
        for (int t = 0; t < a.n_tok; t++)
            for (int i = threadIdx.x; i < n; i += blockDim.x) xs[t][i] = x[(int64_t)t * a.cols + c0 + i];
        __syncthreads();
        for (int rr = 0; rr < ANV_MV_ROWS_PER_WAVE; rr++) {
            const int64_t r = r0 + rr;
            if (r >= a.rows) break;
            const uint8_t *wr = (const uint8_t *)a.w + r * a.row_bytes;
            for (int i = lane; i < n; i += ANV_WARP) {
                const float wv = deq<T>(wr, c0 + i);
                for (int t = 0; t < ANV_MV_MAX_TOK; t++)
                    if (t < a.n_tok) acc[rr][t] += wv * xs[t][i];
            }
        }
    }
    float *out = (float *)a.out;
    for (int rr = 0; rr < ANV_MV_ROWS_PER_WAVE; rr++) {
        const int64_t r = r0 + rr;
        for (int t = 0; t < ANV_MV_MAX_TOK; t++) {
            const float s = anv_wave_sum(acc[rr][t]);
            if (lane == 0 && r < a.rows && t < a.n_tok) {
                float *o = &out[(int64_t)t * a.rows + r];
                *o = a.accumulate ? *o + s : s;
            }
        }
    }
}

template <int T> __device__ void matmul_tiled(const anv_matmul_args a) {
    __shared__ float ws[ANV_MM_TILE][ANV_MM_K + 1];
    __shared__ float xs[ANV_MM_TILE][ANV_MM_K + 1];
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int64_t R0 = (int64_t)blockIdx.x * ANV_MM_TILE, T0 = (int64_t)blockIdx.y * ANV_MM_TILE;
    const float *x = (const float *)a.x;
    float acc[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;
    for (int64_t k0 = 0; k0 < a.cols; k0 += ANV_MM_K) {
        for (int idx = threadIdx.x; idx < ANV_MM_TILE * ANV_MM_K; idx += 256) {
            const int rr = idx / ANV_MM_K, kk = idx % ANV_MM_K;
            const int64_t r = R0 + rr, t = T0 + rr, k = k0 + kk;
            ws[rr][kk] = (r < a.rows && k < a.cols) ? deq<T>((const uint8_t *)a.w + r * a.row_bytes, k) : 0.0f;
            xs[rr][kk] = (t < a.n_tok && k < a.cols) ? x[t * a.cols + k] : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < ANV_MM_K; kk++) {
            float wv[4], xv[4];
            for (int i = 0; i < 4; i++) wv[i] = ws[ty + 16 * i][kk];
            for (int j = 0; j < 4; j++) xv[j] = xs[tx + 16 * j][kk];
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) acc[i][j] += wv[i] * xv[j];
        }
        __syncthreads();
    }
    float *out = (float *)a.out;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            const int64_t r = R0 + ty + 16 * i, t = T0 + tx + 16 * j;
            if (r < a.rows && t < a.n_tok) {
                float *o = &out[t * a.rows + r];
                *o = a.accumulate ? *o + acc[i][j] : acc[i][j];
            }
        }
}

template <int T> __device__ void get_rows(const anv_get_rows_args a) {
    const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int i = blockIdx.y;
    if (c >= a.cols || i >= a.n_ids) return;
    const int32_t id = ((const int32_t *)a.ids)[i];
    ((float *)a.out)[(int64_t)i * a.cols + c] = deq<T>((const uint8_t *)a.table + (int64_t)id * a.row_bytes, c);
}

#define ANV_TYPE_KERNELS(name, id) \
    ANV_KERNEL void anv_matvec_##name(const anv_matmul_args a) { matvec<id>(a); } \
    ANV_KERNEL void anv_matmul_##name(const anv_matmul_args a) { matmul_tiled<id>(a); } \
    ANV_KERNEL void anv_get_rows_##name(const anv_get_rows_args a) { get_rows<id>(a); }
ANV_HIP_TYPES(ANV_TYPE_KERNELS)

// Block-wide sum / max of 32 * nwaves threads through LDS (every thread gets the result).
template <bool MAX> __device__ float block_reduce(float v, float *red) {
    const int lane = threadIdx.x % ANV_WARP, wave = threadIdx.x / ANV_WARP, nw = blockDim.x / ANV_WARP;
    v = MAX ? anv_wave_max(v) : anv_wave_sum(v);
    __syncthreads();
    if (lane == 0) red[wave] = v;
    __syncthreads();
    float r = red[0];
    for (int w = 1; w < nw; w++) r = MAX ? fmaxf(r, red[w]) : r + red[w];
    return r;
}

ANV_KERNEL void anv_rms_norm(const anv_rms_norm_args a) {
    __shared__ float red[ANV_NORM_BLOCK / ANV_WARP];
    const int64_t r = blockIdx.x;
    if (r >= a.n_rows) return;
    const float *x = (const float *)a.x + r * a.row_len;
    float *o = (float *)a.out + r * a.row_len;
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < a.row_len; i += blockDim.x) s += x[i] * x[i];
    s = block_reduce<false>(s, red);
    const float scale = 1.0f / sqrtf(s / (float)a.row_len + a.eps);
    const float *w = (const float *)a.w;
    for (int64_t i = threadIdx.x; i < a.row_len; i += blockDim.x) o[i] = x[i] * scale * (a.has_w ? w[i] : 1.0f);
}

ANV_KERNEL void anv_ew(const anv_ew_args a) {
    const float *x = (const float *)a.a, *b = (const float *)a.b;
    float *o = (float *)a.out;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += (int64_t)gridDim.x * blockDim.x) {
        const float g = x[i];
        switch (a.op) {
        case 0: o[i] = g + b[i % a.b_n]; break;
        case 1: o[i] = g * b[i % a.b_n]; break;
        case 2: o[i] = g * a.s; break;
        case 6: { const float v = g < a.s2 ? g : a.s2; o[i] = v > a.s ? v : a.s; break; }
        case 3: o[i] = g / (1.0f + expf(-g)) * b[i]; break;
        case 7: o[i] = 1.0f / (1.0f + expf(-g)) * b[i]; break;
        case 5: { // ggml_swiglu_oai: alpha 1.702, limit 7
            const float xc = fminf(g, 7.0f);
            o[i] = xc / (1.0f + expf(-1.702f * xc)) * (fminf(fmaxf(b[i], -7.0f), 7.0f) + 1.0f);
            break;
        }
        default: o[i] = 0.5f * g * (1.0f + tanhf(0.79788456080286535587989211986876f * g * (1.0f + 0.044715f * g * g))) * b[i]; break;
        }
    }
}

ANV_KERNEL void anv_rope(const anv_rope_args a) {
    const int half = a.n_rot / 2;
    const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (int64_t)a.n_tok * a.n_head * half) return;
    const int i = (int)(idx % half);
    const int64_t th = idx / half;
    const int t = (int)(th / a.n_head);
    // theta_i by the float recurrence the reference uses (ggml_rope_cache_init).
    const float theta_scale = powf(a.freq_base, -2.0f / (float)a.n_rot);
    float theta = (float)(a.pos0 + t);
    for (int k = 0; k < i; k++) theta *= theta_scale;
    const float f = a.has_ff ? ((const float *)a.freq_factors)[i] : 1.0f;
    const float extrap = theta / f;
    float ang = a.freq_scale * extrap;
    float mscale = a.attn_factor != 0.0f ? a.attn_factor : 1.0f;
    if (a.ext_factor != 0.0f) { // YaRN (ggml's rope_yarn)
        const float y = ((float)i - a.corr_lo) / fmaxf(0.001f, a.corr_hi - a.corr_lo);
        const float mix = (1.0f - fminf(1.0f, fmaxf(0.0f, y))) * a.ext_factor;
        ang = ang * (1.0f - mix) + extrap * mix;
        mscale *= 1.0f + 0.1f * logf(1.0f / a.freq_scale);
    }
    const float cs = cosf(ang) * mscale, sn = sinf(ang) * mscale;
    float *v = (float *)a.x + th * a.head_dim;
    const int i0 = a.mode == 2 ? i : 2 * i, i1 = a.mode == 2 ? i + half : 2 * i + 1;
    const float x0 = v[i0], x1 = v[i1];
    v[i0] = x0 * cs - x1 * sn;
    v[i1] = x0 * sn + x1 * cs;
}

// M-RoPE by table (backend.h rope_rows): one thread per (token, head, pair), NEOX pairs (i, i + half).
ANV_KERNEL void anv_rope_rows(const anv_rope_rows_args a) {
    const int half = a.n_rot / 2;
    const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (int64_t)a.n_tok * a.n_head * half) return;
    const int i = (int)(idx % half);
    const int64_t th = idx / half;
    const int t = (int)(th / a.n_head);
    const float *cs = (const float *)a.table + (int64_t)t * a.n_rot;
    float *v = (float *)a.x + th * a.head_dim;
    const float x0 = v[i], x1 = v[i + half], c = cs[2 * i], s = cs[2 * i + 1];
    v[i] = x0 * c - x1 * s;
    v[i + half] = x0 * s + x1 * c;
}

ANV_KERNEL void anv_store_rows(const anv_store_rows_args a) {
    const float *src = (const float *)a.src;
    uint8_t *dst = (uint8_t *)a.dst;
    const int64_t per_row = a.dst_type == 8 || a.dst_type == 2 ? a.cols / 32 : a.cols;
    const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= per_row * a.n_rows) return;
    const int64_t r = idx / per_row, c = idx % per_row;
    uint8_t *d = dst + (a.row0 + r) * a.dst_row_bytes;
    const float *s = src + r * a.cols;
    if (a.dst_type == 0) ((float *)d)[c] = s[c];
    else if (a.dst_type == 1) ((uint16_t *)d)[c] = (uint16_t)anv_f2h(s[c]);
    else if (a.dst_type == 2) { // Q4_0, as quantize_row: d = (largest-magnitude value) / -8, q = min(15, trunc(x / d + 8.5))
        const float *xb = s + c * 32;
        float amax = 0.0f, vmax = 0.0f;
        for (int j = 0; j < 32; j++)
            if (amax < fabsf(xb[j])) { amax = fabsf(xb[j]); vmax = xb[j]; }
        const float dd = vmax / -8.0f, id = dd != 0.0f ? 1.0f / dd : 0.0f;
        uint8_t *b = d + c * 18;
        const uint32_t h = anv_f2h(dd);
        b[0] = (uint8_t)(h & 0xFF);
        b[1] = (uint8_t)(h >> 8);
        for (int j = 0; j < 16; j++) { // no contraction: x * id + 8.5 rounded twice, as the reference
            const int lo = (int)__fadd_rn(__fmul_rn(xb[j], id), 8.5f), hi = (int)__fadd_rn(__fmul_rn(xb[j + 16], id), 8.5f);
            b[2 + j] = (uint8_t)((lo < 15 ? lo : 15) | ((hi < 15 ? hi : 15) << 4));
        }
    } else { // Q8_0, as quantize_row: d = amax / 127, q = round(x / d)
        const float *xb = s + c * 32;
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(xb[j]));
        const float dd = amax / 127.0f, id = dd != 0.0f ? 1.0f / dd : 0.0f;
        uint8_t *b = d + c * 34;
        const uint32_t h = anv_f2h(dd);
        b[0] = (uint8_t)(h & 0xFF);
        b[1] = (uint8_t)(h >> 8);
        for (int j = 0; j < 32; j++) b[2 + j] = (uint8_t)(int8_t)roundf(xb[j] * id);
    }
}

template <int KT> __device__ void attention(const anv_attention_args a) {
    __shared__ float qs[ANV_ATT_MAX_HEAD_DIM];
    __shared__ float ps[ANV_ATT_BLOCK];
    __shared__ float red[ANV_ATT_BLOCK / ANV_WARP];
    const int t = blockIdx.x, h = blockIdx.y, tid = threadIdx.x, hd = a.head_dim;
    const int64_t q_cols = (int64_t)a.n_head * hd;
    const int64_t koff = (int64_t)(h / (a.n_head / a.n_kv_head)) * hd;
    const float *q = (const float *)a.q + t * q_cols + (int64_t)h * hd;
    for (int d = tid; d < hd; d += blockDim.x) qs[d] = q[d];
    __syncthreads();
    const int pos = a.pos0 + t;
    int j0 = a.window > 0 && pos - a.window + 1 > 0 ? pos - a.window + 1 : 0, jhi = pos;
    if (a.noncausal) { // encoders: every key, or the symmetric window |pos - j| <= window / 2
        const int half = a.window / 2, n_kv = a.pos0 + a.n_tok;
        j0 = a.window > 0 && pos - half > 0 ? pos - half : 0;
        jhi = a.window > 0 && pos + half < n_kv - 1 ? pos + half : n_kv - 1;
    }
    const uint8_t *K = (const uint8_t *)a.k, *V = (const uint8_t *)a.v;
    float m = -INFINITY, l = 0.0f, acc0 = 0.0f, acc1 = 0.0f; // acc: d = tid, tid + 128
    for (int jc = j0; jc <= jhi; jc += ANV_ATT_BLOCK) {
        const int j = jc + tid;
        float s = -INFINITY;
        if (j <= jhi) {
            const uint8_t *kr = K + (int64_t)j * a.kv_row_bytes;
            float dot = 0.0f;
            for (int d = 0; d < hd; d++) dot += qs[d] * deq<KT>(kr, koff + d);
            s = dot * a.scale;
            if (a.softcap > 0.0f) s = a.softcap * tanhf(s / a.softcap);
        }
        const float mnew = fmaxf(m, block_reduce<true>(s, red));
        const float p = j <= jhi ? expf(s - mnew) : 0.0f;
        const float corr = m == -INFINITY ? 0.0f : expf(m - mnew);
        __syncthreads();
        ps[tid] = p;
        const float psum = block_reduce<false>(p, red); // its barriers also publish ps
        l = l * corr + psum;
        acc0 *= corr;
        acc1 *= corr;
        const int nj = jhi - jc + 1 < ANV_ATT_BLOCK ? jhi - jc + 1 : ANV_ATT_BLOCK;
        for (int jj = 0; jj < nj; jj++) {
            const uint8_t *vr = V + (int64_t)(jc + jj) * a.kv_row_bytes;
            if (tid < hd) acc0 += ps[jj] * deq<KT>(vr, koff + tid);
            if (tid + ANV_ATT_BLOCK < hd) acc1 += ps[jj] * deq<KT>(vr, koff + tid + ANV_ATT_BLOCK);
        }
        m = mnew;
        __syncthreads();
    }
    if (a.has_sinks) { // the sink's logit joins the max and the denominator
        const float sk = ((const float *)a.sinks)[h], mnew = fmaxf(m, sk);
        const float corr = m == -INFINITY ? 0.0f : expf(m - mnew);
        acc0 *= corr;
        acc1 *= corr;
        l = l * corr + expf(sk - mnew);
    }
    float *o = (float *)a.out + t * q_cols + (int64_t)h * hd;
    if (tid < hd) o[tid] = acc0 / l;
    if (tid + ANV_ATT_BLOCK < hd) o[tid + ANV_ATT_BLOCK] = acc1 / l;
}

ANV_KERNEL void anv_attention_f32(const anv_attention_args a) { attention<0>(a); }
ANV_KERNEL void anv_attention_f16(const anv_attention_args a) { attention<1>(a); }
ANV_KERNEL void anv_attention_q8_0(const anv_attention_args a) { attention<8>(a); }
ANV_KERNEL void anv_attention_q4_0(const anv_attention_args a) { attention<2>(a); }
