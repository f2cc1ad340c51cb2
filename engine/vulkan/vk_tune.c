/* vk_tune: first-run autotuning of the mat-vec kernels. The first time a (kernel, weight
 * width class, token-count class) is used, each rows-per-workgroup variant (1, 2, 4, 8; the
 * ROWS spec constant) runs the real weights and the real batch (1, 2, 4 or 8 tokens: the NTOK
 * variant the call uses, so batched decode and the server's parallel streams are timed as they
 * run) on the device a few times, into a scratch output, and the fastest wins; choices are
 * cached per device + driver version + kernel build in
 * <cache>/anvil/vk-tune-<vendor>-<device>-<driver>-<kernels>.txt next to the pipeline cache.
 * ANVIL_VK_TUNE=0 turns it off (the default rows), =1 re-times everything (`anvil bench
 * --tune`); ANVIL_VK_MV_ROWS=N forces one variant. Every variant computes the same sums in
 * the same order (rows only change which workgroup owns a row), so tuning never changes
 * results; tests run the op suite under each variant (ANVIL_VK_MV_ROWS).
 * Prompts: where the device has the cooperative-matrix mat-mat (vk_coopmat.c), the first use
 * of a (kernel, K class) times it against the scalar tiled kernel on the real weights (up to
 * 64 tokens) and keeps the faster (cached the same way: rows 1 = coopmat, 0 = tiled); with
 * tuning off the coopmat kernel is used. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "vk_internal.h"
#include "vk_coopmat.h"
#include "hash.h"
#include "settings.h"

#define TUNE_REPS 6
static const uint32_t k_rows[4] = { 1, 2, 4, 8 };

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int kclass(uint32_t k) { int c = 0; while ((1u << c) < k && c < 31) c++; return c; }

static int pipe_by_name(const vk_ctx *c, const char *name) {
    for (int p = 0; p < VKP_COUNT; p++) {
        char n[72];
        const vkp_desc *d = &c->pipes[p].desc;
        if (d->spec != VKP_SPEC_MV && d->spec != VKP_SPEC_CM) continue;
        snprintf(n, sizeof n, "%s%s", d->name, d->has_sg && c->use_subgroup ? "_sg" : "");
        if (!strcmp(n, name)) return p;
    }
    return -1;
}

/* The token-count class of a batch: the NTOK variant's token count (1, 2, 4 or 8). */
static int tclass(uint32_t n_tok) { return 1 << vkp_ntok_variant((int)n_tok); }

static vk_tune_entry *find(vk_ctx *c, int pipe, int kc, int tc) {
    for (int i = 0; i < c->n_tune; i++)
        if (c->tune[i].pipe == pipe && c->tune[i].kclass == kc && c->tune[i].tclass == tc) return &c->tune[i];
    return NULL;
}

static vk_tune_entry *add(vk_ctx *c, int pipe, int kc, int tc, uint32_t rows) {
    if (c->n_tune == c->cap_tune) {
        int cap = c->cap_tune ? c->cap_tune * 2 : 16;
        vk_tune_entry *n = realloc(c->tune, (size_t)cap * sizeof *n);
        if (!n) return NULL;
        c->tune = n;
        c->cap_tune = cap;
    }
    vk_tune_entry *e = &c->tune[c->n_tune++];
    memset(e, 0, sizeof *e);
    e->pipe = pipe; e->kclass = kc; e->tclass = tc; e->rows = rows;
    return e;
}

static const char *pipe_name(const vk_ctx *c, int p, char *buf, size_t n) {
    const vkp_desc *d = &c->pipes[p].desc;
    snprintf(buf, n, "%s%s", d->name, d->has_sg && c->use_subgroup ? "_sg" : "");
    return buf;
}

void vk_tune_init(vk_ctx *c) {
    const char *t = anv_setting_raw("ANVIL_VK_TUNE");
    c->tune_mode = t && !strcmp(t, "0") ? 0 : t && !strcmp(t, "1") ? 2 : 1;
    if (c->mv_rows_forced) c->tune_mode = 0;
    char cache[480], dir[512] = "";
    if (anv_user_cache_dir(cache, sizeof cache)) snprintf(dir, sizeof dir, "%s/anvil", cache);
    if (dir[0])
        snprintf(c->tune_path, sizeof c->tune_path, "%s/vk-tune-%04x-%04x-%08x-%08x.txt", dir, c->info.vendor_id, c->info.device_id,
                 c->info.driver_version, vk_kernels_digest());
    if (c->tune_mode != 1 || !c->tune_path[0]) return;
    FILE *f = fopen(c->tune_path, "r");
    if (!f) return;
    char name[72];
    int kc, tc;
    unsigned rows;
    while (fscanf(f, "%71s %d t%d %u%*[^\n]", name, &kc, &tc, &rows) == 4) { /* name K-class t<tokens> rows */
        int p = pipe_by_name(c, name);
        const bool cm = p >= 0 && c->pipes[p].desc.spec == VKP_SPEC_CM; /* coopmat choice: t1, rows 1 coopmat / 0 tiled */
        if (p >= 0 && cm && tc == 1 && rows <= 1 && !find(c, p, kc, tc)) add(c, p, kc, tc, rows);
        else if (p >= 0 && !cm && (rows == 1 || rows == 2 || rows == 4 || rows == 8) && (tc == 1 || tc == 2 || tc == 4 || tc == 8) &&
                 !find(c, p, kc, tc))
            add(c, p, kc, tc, rows);
    }
    fclose(f);
}

static void save(vk_ctx *c) {
    if (!c->tune_dirty || !c->tune_path[0]) return;
    char tmp[640];
    snprintf(tmp, sizeof tmp, "%s.%s.tmp", c->tune_path, anv_process_tag());
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') { *p = 0; mkdir(tmp, 0755); *p = '/'; }
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    for (int i = 0; i < c->n_tune; i++) {
        const vk_tune_entry *e = &c->tune[i];
        char n[72];
        fprintf(f, "%s %d t%d %u", pipe_name(c, e->pipe, n, sizeof n), e->kclass, e->tclass, e->rows);
        if (e->timed && c->pipes[e->pipe].desc.spec == VKP_SPEC_CM) fprintf(f, "   # us tiled/coopmat: %.1f %.1f", e->us[0], e->us[1]);
        else if (e->timed) fprintf(f, "   # us: %.1f %.1f %.1f %.1f", e->us[0], e->us[1], e->us[2], e->us[3]);
        fputc('\n', f);
    }
    if (fclose(f) == 0) rename(tmp, c->tune_path);
    else remove(tmp);
    c->tune_dirty = false;
}

void vk_tune_shutdown(vk_ctx *c) {
    save(c);
    free(c->tune);
    c->tune = NULL;
    c->n_tune = c->cap_tune = 0;
}

uint32_t vk_tune_mv_rows(vk_ctx *c, int pipe, const vk_binding *b, const uint32_t *pc, uint32_t nrows, uint64_t w_bytes) {
    if (c->tune_mode == 0 || be_failed(&c->base)) return c->mv_rows;
    const int kc = kclass(pc[0]), tc = tclass(pc[2]);
    vk_tune_entry *e = find(c, pipe, kc, tc);
    if (e) return e->rows;
    /* time each variant on these weights and this batch's tokens into a scratch output */
    if (vk_flush(c) != 0) return c->mv_rows;
    vk_storage *out = vk_storage_new(c, (size_t)nrows * pc[2] * 4 + 64, 4, false);
    if (!out || out->n_chunks != 1) { if (out) vk_storage_free(c, out); return c->mv_rows; }
    vk_binding tb[3] = { b[0], b[1], { &out->chunk[0], true } };
    uint32_t tpc[11];
    memcpy(tpc, pc, sizeof tpc);
    tpc[7] = 0; tpc[8] = nrows; tpc[9] = 0; /* tokens (tpc[2]) and x as the call's */
    double best = 0;
    uint32_t best_rows = c->mv_rows;
    double us[4] = { 0 };
    for (int v = 0; v < 4 && !be_failed(&c->base); v++) {
        const uint32_t r = k_rows[v], groups = (nrows + r - 1) / r;
        uint32_t gx = groups < 65535u ? groups : 65535u, gy;
        if (!gx) gx = 1;
        gy = (groups + gx - 1) / gx;
        tpc[10] = gx;
        vk_dispatch(c, pipe, vkp_mv_variant((int)pc[2], r), tb, 3, tpc, gx, gy, 1, w_bytes); /* warm-up, pipeline creation */
        vk_flush(c);
        double t = 1e30;
        for (int rep = 0; rep < 2; rep++) {
            double t0 = now_us();
            for (int k = 0; k < TUNE_REPS; k++) vk_dispatch(c, pipe, vkp_mv_variant((int)pc[2], r), tb, 3, tpc, gx, gy, 1, w_bytes);
            vk_flush(c);
            double dt = (now_us() - t0) / TUNE_REPS;
            if (dt < t) t = dt;
        }
        us[v] = t;
        if (v == 0 || t < best) { best = t; best_rows = r; }
    }
    vk_storage_free(c, out);
    if (be_failed(&c->base)) return c->mv_rows;
    e = add(c, pipe, kc, tc, best_rows);
    if (e) { memcpy(e->us, us, sizeof us); e->timed = true; }
    c->tune_dirty = true;
    save(c);
    char n[72];
    anv_log("%s: tuned %s (K %u, %u rows, %u tokens): %u rows per workgroup (1/2/4/8: %.1f/%.1f/%.1f/%.1f us)", c->name,
            pipe_name(c, pipe, n, sizeof n), pc[0], nrows, pc[2], best_rows, us[0], us[1], us[2], us[3]);
    return best_rows;
}

/* One timed dispatch series (min of 2 after a warm-up that also creates the pipeline), in us. */
static double time_mm(vk_ctx *c, int pipe, const vk_binding *b, const uint32_t *pc, uint32_t gx, uint32_t gy, uint64_t bytes) {
    vk_dispatch(c, pipe, 0, b, 3, pc, gx, gy, 1, bytes);
    vk_flush(c);
    double t = 1e30;
    for (int rep = 0; rep < 2 && !be_failed(&c->base); rep++) {
        double t0 = now_us();
        vk_dispatch(c, pipe, 0, b, 3, pc, gx, gy, 1, bytes);
        vk_flush(c);
        double dt = now_us() - t0;
        if (dt < t) t = dt;
    }
    return t;
}

bool vk_tune_mm_coopmat(vk_ctx *c, int mm, int cm, const vk_binding *b, const uint32_t *pc, uint32_t nrows, uint32_t nt, uint64_t bytes) {
    if (c->tune_mode == 0 || be_failed(&c->base)) return true;
    const int kc = kclass(pc[0]);
    vk_tune_entry *e = find(c, cm, kc, 1); /* coopmat choices: token class 1 */
    if (e) return e->rows == 1;
    if (vk_flush(c) != 0) return true;
    const uint32_t tt = nt < 64 ? nt : 64;
    vk_storage *out = vk_storage_new(c, (size_t)nrows * tt * 4 + 64, 4, false);
    if (!out || out->n_chunks != 1) { if (out) vk_storage_free(c, out); return true; }
    vk_binding tb[3] = { b[0], b[1], { &out->chunk[0], true } };
    uint32_t tpc[11];
    memcpy(tpc, pc, sizeof tpc);
    tpc[2] = tt; tpc[7] = 0; tpc[8] = nrows; tpc[9] = 0;
    const uint32_t bm = vk_coopmat_rows(&c->info), bn = vk_coopmat_toks(&c->info);
    double us[2];
    us[0] = time_mm(c, mm, tb, tpc, (nrows + 63) / 64, (tt + 63) / 64, bytes);
    us[1] = time_mm(c, cm, tb, tpc, (nrows + bm - 1) / bm, (tt + bn - 1) / bn, bytes);
    vk_storage_free(c, out);
    if (be_failed(&c->base)) return true;
    const bool use_cm = us[1] <= us[0];
    e = add(c, cm, kc, 1, use_cm ? 1u : 0u);
    if (e) { e->us[0] = us[0]; e->us[1] = us[1]; e->timed = true; }
    c->tune_dirty = true;
    save(c);
    char n[72];
    anv_log("%s: tuned %s (K %u, %u rows, %u tokens): %s (tiled/coopmat: %.1f/%.1f us)", c->name, pipe_name(c, cm, n, sizeof n),
            pc[0], nrows, tt, use_cm ? "coopmat" : "tiled", us[0], us[1]);
    return use_cm;
}

int vk_backend_tuning(backend *be, char *out, size_t out_len) {
    if (out_len) out[0] = 0;
    if (!vk_backend_is(be)) return 0;
    vk_ctx *c = vk_of(be);
    size_t o = 0;
    for (int i = 0; i < c->n_tune; i++) {
        char n[72];
        const bool cm = c->pipes[c->tune[i].pipe].desc.spec == VKP_SPEC_CM;
        int w = cm ? snprintf(out + o, o < out_len ? out_len - o : 0, "%s%s K~2^%d: %s", i ? "; " : "", pipe_name(c, c->tune[i].pipe, n, sizeof n),
                              c->tune[i].kclass, c->tune[i].rows ? "coopmat" : "tiled")
                   : snprintf(out + o, o < out_len ? out_len - o : 0, "%s%s K~2^%d t%d: %u rows", i ? "; " : "",
                              pipe_name(c, c->tune[i].pipe, n, sizeof n), c->tune[i].kclass, c->tune[i].tclass, c->tune[i].rows);
        if (w > 0) o += (size_t)w;
        if (o >= out_len) { o = out_len ? out_len - 1 : 0; break; }
    }
    return c->n_tune;
}
