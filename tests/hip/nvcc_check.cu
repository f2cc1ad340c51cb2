// nvcc_check: the HIP kernels (hip/hip_kernels.hip, the same source, built by nvcc through
// hip/hip_vendor.h) run on an NVIDIA GPU against the scalar reference (cpu/ref_ops.c) on
// odd shapes: every weight type through mat-vec (n_tok 1..4) and the tiled matmul, get_rows,
// rms_norm, the element-wise ops, rope, store_rows and attention over F32/F16/Q8_0/Q4_0 caches.
// Launch geometry is hip/hip_backend.c's. Built and run by tools/hip-nvcc-check.sh.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "hip_kernels.hip"
extern "C" {
#include "quant.h"
#include "ref_ops.h"
}

static int failed = 0, passed = 0;
static uint64_t rng = 42;
static float frand() { rng = rng * 6364136223846793005ull + 1442695040888963407ull; return (float)((rng >> 40) & 0xffffff) / 8388608.0f - 1.0f; }
static void fill(std::vector<float> &v) { for (auto &x : v) x = frand(); }

#define CK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); exit(2); } } while (0)

template <class T> static uint64_t up(const T *h, size_t n) {
    void *d; CK(cudaMalloc(&d, n ? n * sizeof(T) : 1)); if (n) CK(cudaMemcpy(d, h, n * sizeof(T), cudaMemcpyHostToDevice)); return (uint64_t)(uintptr_t)d;
}
static void down(float *h, uint64_t d, size_t n) { CK(cudaDeviceSynchronize()); CK(cudaMemcpy(h, (void *)(uintptr_t)d, n * sizeof(float), cudaMemcpyDeviceToHost)); }
static void dfree(uint64_t d) { (void)cudaFree((void *)(uintptr_t)d); }

static double rel_err(const float *a, const float *b, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) { num += (double)(a[i] - b[i]) * (a[i] - b[i]); den += (double)b[i] * b[i]; }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}
static void report(const char *what, double err, double tol) {
    const bool ok = err <= tol && !isnan(err);
    ok ? passed++ : failed++;
    printf("%-40s rel err %.2e %s\n", what, err, ok ? "ok" : "FAIL");
}

typedef void (*mm_kernel)(const anv_matmul_args);
typedef void (*gr_kernel)(const anv_get_rows_args);
struct tk { uint32_t type; const char *name; mm_kernel mv, mm; gr_kernel gr; };
#define ANV_TK(n, id) {id, #n, anv_matvec_##n, anv_matmul_##n, anv_get_rows_##n},
static const tk kernels[] = {ANV_HIP_TYPES(ANV_TK)};

static void check_matmul(const tk &k, int64_t rows, int n_tok) {
    const int64_t cols = k.type <= 1 || k.type == 30 ? 517 : qtype_get(k.type)->block_size == 256 ? 768 : 544;
    std::vector<float> wf(cols * rows), x(cols * n_tok), out(rows * n_tok), want(rows * n_tok);
    fill(wf); fill(x); fill(out);
    const size_t rb = qtype_row_size((qtype)k.type, cols);
    std::vector<uint8_t> wq(rb * rows);
    for (int64_t r = 0; r < rows; r++) quantize_row((qtype)k.type, &wf[r * cols], &wq[r * rb], cols);
    const bool acc = n_tok % 2 == 1;
    want = out;
    ref_matmul(k.type, wq.data(), cols, rows, x.data(), want.data(), n_tok, acc);
    anv_matmul_args a = {up(wq.data(), wq.size()), up(x.data(), x.size()), up(out.data(), out.size()), cols, rows, (int64_t)rb, n_tok, acc, (int32_t)k.type, 0};
    if (n_tok <= ANV_MV_MAX_TOK) {
        const int per = ANV_MV_WAVES * ANV_MV_ROWS_PER_WAVE;
        k.mv<<<(unsigned)((rows + per - 1) / per), ANV_MV_WAVES * ANV_WARP>>>(a);
    } else {
        k.mm<<<dim3((unsigned)((rows + ANV_MM_TILE - 1) / ANV_MM_TILE), (unsigned)((n_tok + ANV_MM_TILE - 1) / ANV_MM_TILE)), 256>>>(a);
    }
    CK(cudaGetLastError());
    down(out.data(), a.out, out.size());
    char what[96];
    snprintf(what, sizeof what, "matmul %s %lldx%lld n_tok %d", k.name, (long long)rows, (long long)cols, n_tok);
    report(what, rel_err(out.data(), want.data(), out.size()), 1e-4);
    // get_rows of the same table
    const int32_t ids[] = {0, (int32_t)rows - 1, 3, 0};
    std::vector<float> g(cols * 4), gw(cols * 4);
    ref_get_rows(k.type, wq.data(), cols, ids, 4, gw.data());
    anv_get_rows_args ga = {a.w, up(ids, 4), up(g.data(), g.size()), cols, (int64_t)rb, 4, (int32_t)k.type};
    k.gr<<<dim3((unsigned)((cols + ANV_EW_BLOCK - 1) / ANV_EW_BLOCK), 4), ANV_EW_BLOCK>>>(ga);
    CK(cudaGetLastError());
    down(g.data(), ga.out, g.size());
    if (n_tok == 1) { snprintf(what, sizeof what, "get_rows %s", k.name); report(what, rel_err(g.data(), gw.data(), g.size()), 1e-6); }
    dfree(a.w); dfree(a.x); dfree(a.out); dfree(ga.ids); dfree(ga.out);
}

static void check_small_ops() {
    const int64_t n = 7 * 96;
    std::vector<float> a(n), b(n), w(48), got(n), want(n);
    fill(a); fill(b); fill(w);
    uint64_t da = up(a.data(), n), db = up(b.data(), n), dw = up(w.data(), 48), dout = up(got.data(), n);
    anv_rms_norm_args ra = {da, dw, dout, 14, 48, 1e-6f, 1};
    anv_rms_norm<<<14, ANV_NORM_BLOCK>>>(ra);
    down(got.data(), dout, n);
    ref_rms_norm(a.data(), w.data(), want.data(), 14, 48, 1e-6f);
    report("rms_norm 14 x 48", rel_err(got.data(), want.data(), n), 1e-5);
    for (int op = 0; op < 5; op++) {
        anv_ew_args ea = {da, db, dout, n, op < 2 ? 96 : n, 0.37f, op};
        anv_ew<<<(unsigned)((n + ANV_EW_BLOCK - 1) / ANV_EW_BLOCK), ANV_EW_BLOCK>>>(ea);
        down(got.data(), dout, n);
        if (op == 0) ref_add(a.data(), b.data(), want.data(), n, 96);
        else if (op == 1) ref_mul(a.data(), b.data(), want.data(), n, 96);
        else if (op == 2) { want = a; ref_scale(want.data(), n, 0.37f); }
        else ref_glu(a.data(), b.data(), want.data(), n, op == 3 ? BE_GLU_SILU : BE_GLU_GELU_TANH);
        const char *names[] = {"add (broadcast)", "mul (broadcast)", "scale", "glu silu", "glu gelu-tanh"};
        report(names[op], rel_err(got.data(), want.data(), n), 1e-5);
    }
    // rope: 7 tokens x 3 heads x 32 dims, n_rot 24, both modes, with freq factors
    for (int mode = 0; mode <= 2; mode += 2) {
        std::vector<float> x(7 * 96), xr, ff(12);
        fill(x);
        for (int i = 0; i < 12; i++) ff[i] = 1.0f + 0.5f * i;
        xr = x;
        ref_rope(xr.data(), 7, 3, 32, 11, 24, (be_rope_mode)mode, 10000.0f, 0.25f, ff.data());
        uint64_t dx = up(x.data(), x.size()), df = up(ff.data(), 12);
        anv_rope_args pa = {dx, df, 7, 3, 32, 11, 24, mode, 1, 0, 10000.0f, 0.25f};
        anv_rope<<<(unsigned)((7 * 3 * 12 + ANV_EW_BLOCK - 1) / ANV_EW_BLOCK), ANV_EW_BLOCK>>>(pa);
        down(x.data(), dx, x.size());
        report(mode ? "rope neox" : "rope normal", rel_err(x.data(), xr.data(), x.size()), 1e-5);
        dfree(dx); dfree(df);
    }
    dfree(da); dfree(db); dfree(dw); dfree(dout);
}

static void check_attention(uint32_t kv_type, int n_tok, int pos0, int n_head, int n_kv, int hd, int window, float softcap) {
    const int ctx = pos0 + n_tok + 3;
    const int64_t kvc = (int64_t)n_kv * hd;
    const size_t rb = qtype_row_size((qtype)kv_type, kvc);
    std::vector<float> kf(ctx * kvc), vf(ctx * kvc), q((size_t)n_tok * n_head * hd), out(q.size()), want(q.size());
    fill(kf); fill(vf); fill(q);
    std::vector<uint8_t> kh(rb * ctx), vh(rb * ctx), kd(rb * ctx);
    ref_store_rows(kf.data(), kv_type, kh.data(), kvc, 0, ctx);
    ref_store_rows(vf.data(), kv_type, vh.data(), kvc, 0, ctx);
    // store_rows on the GPU must produce the same bytes
    uint64_t dsrc = up(kf.data(), kf.size()), dk = up(kd.data(), kd.size());
    const int64_t per_row = kv_type == 8 || kv_type == 2 ? kvc / 32 : kvc;
    anv_store_rows_args sa = {dsrc, dk, kvc, 0, ctx, (int64_t)rb, (int32_t)kv_type, 0};
    anv_store_rows<<<(unsigned)((per_row * ctx + ANV_EW_BLOCK - 1) / ANV_EW_BLOCK), ANV_EW_BLOCK>>>(sa);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(kd.data(), (void *)(uintptr_t)dk, kd.size(), cudaMemcpyDeviceToHost));
    size_t diff = 0;
    for (size_t i = 0; i < kd.size(); i++) diff += kd[i] != kh[i];
    char what[128];
    snprintf(what, sizeof what, "store_rows %s (bytes differing: %zu)", qtype_get(kv_type)->name, diff);
    report(what, diff ? 1.0 : 0.0, 0.0);
    be_attn_params p = {n_tok, pos0, n_head, n_kv, hd, 1.0f / sqrtf((float)hd), window, softcap};
    ref_attention(q.data(), kv_type, kh.data(), vh.data(), want.data(), &p);
    anv_attention_args aa = {up(q.data(), q.size()), up(kh.data(), kh.size()), up(vh.data(), vh.size()), up(out.data(), out.size()), (int64_t)rb,
                             n_tok, pos0, n_head, n_kv, hd, window, (int32_t)kv_type, 0, p.scale, softcap};
    dim3 grid((unsigned)n_tok, (unsigned)n_head);
    if (kv_type == 0) anv_attention_f32<<<grid, ANV_ATT_BLOCK>>>(aa);
    else if (kv_type == 1) anv_attention_f16<<<grid, ANV_ATT_BLOCK>>>(aa);
    else if (kv_type == 2) anv_attention_q4_0<<<grid, ANV_ATT_BLOCK>>>(aa);
    else anv_attention_q8_0<<<grid, ANV_ATT_BLOCK>>>(aa);
    CK(cudaGetLastError());
    down(out.data(), aa.out, out.size());
    snprintf(what, sizeof what, "attention %s tok %d pos0 %d h %d/%d d %d w %d", qtype_get(kv_type)->name, n_tok, pos0, n_head, n_kv, hd, window);
    report(what, rel_err(out.data(), want.data(), out.size()), 1e-4);
    dfree(dsrc); dfree(dk); dfree(aa.q); dfree(aa.k); dfree(aa.v); dfree(aa.out);
}

int main() {
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
    for (const tk &k : kernels)
        for (int nt : {1, 2, 3, 4, 5, 70, 129}) check_matmul(k, nt < 5 ? 1003 : 77, nt);
    check_small_ops();
    for (uint32_t kt : {0u, 1u, 8u, 2u}) {
        check_attention(kt, 1, 300, 8, 2, 64, 0, 0.0f);   // decode, GQA 4
        check_attention(kt, 37, 5, 6, 6, 128, 0, 0.0f);   // prefill, odd
        check_attention(kt, 9, 200, 4, 1, 256, 31, 30.0f); // window + softcap, head_dim 256
        check_attention(kt, 3, 0, 2, 2, 80, 0, 0.0f);     // head_dim 80
    }
    printf("nvcc check: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
