/* repack_load: how a model's weights get their packed copies at load (backend_ops
 * weights_begin / weights_end). Between the two, weight_new only notes the weights of the
 * model file; at the end they are packed together: from the repack cache file when one
 * matches (mapped, every slice's checksum checked on the pool), else repacked in parallel
 * on the pool into one block, which is then written as the cache file. Either way the
 * model file's pages under the packed weights are released (madvise DONTNEED, page-aligned
 * inward: the private read-only mapping faults them back from the file if get_rows or a
 * view reads them), each chunk's right after it is repacked, so the process never holds
 * both copies. */
#include "cpu_internal.h"
#include "clock.h"
#include "error.h"
#include "quant.h"
#include "repack_cache.h"
#include "weight_cache.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void cpu_load_begin(cpu_ctx *c, const be_weight_file *f) {
    cpu_load *L = &c->load;
    if (L->depth++ > 0) return; /* a load inside a load: its weights join the outer one's */
    L->n = 0;
    L->active = c->repack && f && f->base && f->size > 0;
    if (!L->active) return;
    L->file = *f;
    snprintf(L->path, sizeof L->path, "%s", f->path ? f->path : "");
    L->file.path = L->path;
}

int cpu_load_defer(cpu_ctx *c, uint32_t type, const void *data, int64_t cols, int64_t rows) {
    cpu_load *L = &c->load;
    const uint8_t *p = data, *b = L->file.base;
    if (!L->active || p < b || p >= b + L->file.size || (size_t)(p - b) + qtype_row_size((qtype)type, cols) * (size_t)rows > L->file.size)
        return 0;
    if (L->n == L->cap) {
        const int cap = L->cap ? 2 * L->cap : 256;
        cpu_pending *it = realloc(L->items, (size_t)cap * sizeof *it);
        if (!it) { anv_set_error("cpu backend: out of memory"); return -1; }
        L->items = it;
        L->cap = cap;
    }
    L->items[L->n++] = (cpu_pending){.orig = data, .type = type, .cols = cols, .rows = rows, .refs = 1};
    return 1;
}

void cpu_load_forget(cpu_ctx *c, const void *data) {
    cpu_load *L = &c->load;
    if (!L->active) return;
    for (int i = 0; i < L->n; i++)
        if (L->items[i].orig == data) { L->items[i] = L->items[--L->n]; return; }
}

void cpu_load_free(cpu_ctx *c) {
    free(c->load.items);
    memset(&c->load, 0, sizeof c->load);
}

static int by_weight(const void *a, const void *b) {
    const cpu_pending *x = a, *y = b;
    if (x->orig != y->orig) return (uintptr_t)x->orig < (uintptr_t)y->orig ? -1 : 1;
    if (x->type != y->type) return x->type < y->type ? -1 : 1;
    if (x->cols != y->cols) return x->cols < y->cols ? -1 : 1;
    return x->rows < y->rows ? -1 : x->rows > y->rows;
}

/* Sorts the pending weights by file offset and merges the same weight placed twice (tied
 * embeddings: token_embd is also the output) into one copy with refs tensors. */
static void merge_pending(cpu_load *L) {
    qsort(L->items, (size_t)L->n, sizeof *L->items, by_weight);
    int n = 0;
    for (int i = 0; i < L->n; i++) {
        if (n > 0 && by_weight(&L->items[n - 1], &L->items[i]) == 0) L->items[n - 1].refs += L->items[i].refs;
        else L->items[n++] = L->items[i];
    }
    L->n = n;
}

/* Drops the private read-only mapping's pages inside [p, p + n) (whole pages only): the
 * next read faults them back from the file. Never on a heap copy, which DONTNEED would zero. */
static void release_range(const void *p, size_t n) {
#if !defined(_WIN32)
    static long pg;
    if (!pg) pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0) return;
    const uintptr_t a = ((uintptr_t)p + (uintptr_t)pg - 1) / (uintptr_t)pg * (uintptr_t)pg;
    const uintptr_t e = ((uintptr_t)p + n) / (uintptr_t)pg * (uintptr_t)pg;
    if (e > a) madvise((void *)a, e - a, MADV_DONTNEED);
#else
    (void)p; (void)n;
#endif
}

/* ---- parallel work on the pool ---- */

typedef struct { int item; int64_t g0, g1; } repack_chunk;

typedef struct {
    const cpu_load *L;
    const rpc_entry *entries;   /* per pending weight: its place in the payload */
    const repack_chunk *chunks;
    uint8_t *payload;
    uint64_t payload_bytes;
    uint64_t *sums;             /* compute (write) */
    const rpc_file *file;       /* or verify */
    atomic_int bad_slices;
} load_job;

static void repack_chunk_fn(void *ctx, int64_t i, int ith) {
    (void)ith;
    const load_job *j = ctx;
    const repack_chunk *ch = &j->chunks[i];
    const cpu_pending *w = &j->L->items[ch->item];
    const size_t rb = qtype_row_size((qtype)w->type, w->cols), gb = repack_group_bytes(w->type, w->cols);
    const int64_t r0 = ch->g0 * PK_ROWS, rows = (ch->g1 * PK_ROWS < w->rows ? ch->g1 * PK_ROWS : w->rows) - r0;
    const uint8_t *src = (const uint8_t *)w->orig + (size_t)r0 * rb;
    repack_rows(w->type, src, w->cols, rows, j->payload + j->entries[ch->item].off + (size_t)ch->g0 * gb);
    if (j->L->file.mapped) release_range(src, (size_t)rows * rb); /* the peak stays near one copy */
}

static void sum_slice_fn(void *ctx, int64_t i, int ith) {
    (void)ith;
    load_job *j = ctx;
    const uint64_t at = (uint64_t)i * RPC_SLICE, n = j->payload_bytes - at < RPC_SLICE ? j->payload_bytes - at : RPC_SLICE;
    j->sums[i] = rpc_checksum(j->payload + at, (size_t)n);
}

static void verify_slice_fn(void *ctx, int64_t i, int ith) {
    (void)ith;
    load_job *j = ctx;
    if (!rpc_slice_ok(j->file, (uint64_t)i)) atomic_fetch_add(&j->bad_slices, 1);
}

/* ---- the end of a load ---- */

/* Releases the model file's pages under each packed weight (see the top comment). */
static void release_file_pages(const cpu_load *L) {
    if (!L->file.mapped) return;
    for (int i = 0; i < L->n; i++)
        release_range(L->items[i].orig, qtype_row_size((qtype)L->items[i].type, L->items[i].cols) * (size_t)L->items[i].rows);
}

/* Registers every pending weight (refs times) on its packed copy in region. */
static int register_all(cpu_ctx *c, const rpc_entry *entries, cpu_packed_region *region) {
    const cpu_load *L = &c->load;
    for (int i = 0; i < L->n; i++) {
        const cpu_pending *w = &L->items[i];
        for (int r = 0; r < w->refs; r++)
            if (packed_set_add_ref(&c->packed, w->type, w->orig, w->cols, w->rows, region->base + entries[i].off, region) != 0)
                return -1;
    }
    return 0;
}

static cpu_packed_region *region_new(uint8_t *base, size_t size, bool mapped) {
    cpu_packed_region *r = calloc(1, sizeof *r);
    if (r) *r = (cpu_packed_region){.base = base, .size = size, .mapped = mapped};
    return r;
}

/* A region no weight took (a failure before the first registration) is freed here. */
static void region_drop_unused(cpu_packed_region *r) {
    if (!r || r->refs > 0) return;
    if (r->mapped) munmap(r->base, r->size);
    else free(r->base);
    free(r);
}

/* Orders a cache entry against a pending weight at file offset off as by_weight does. */
static int entry_cmp(const rpc_entry *e, uint64_t off, const cpu_pending *w) {
    if (e->src_off != off) return e->src_off < off ? -1 : 1;
    if (e->type != w->type) return e->type < w->type ? -1 : 1;
    if (e->cols != w->cols) return e->cols < w->cols ? -1 : 1;
    return e->rows < w->rows ? -1 : e->rows > w->rows;
}

/* The cache file's entry for each pending weight (both sorted the same way): true when
 * every one is there (the file may hold more: weights another run placed on the CPU). */
static bool match_entries(const cpu_load *L, const rpc_file *f, rpc_entry *out) {
    uint32_t k = 0;
    for (int i = 0; i < L->n; i++) {
        const cpu_pending *w = &L->items[i];
        const uint64_t off = (uint64_t)((const uint8_t *)w->orig - (const uint8_t *)L->file.base);
        while (k < f->n_entries && entry_cmp(&f->entries[k], off, w) < 0) k++;
        if (k == f->n_entries || entry_cmp(&f->entries[k], off, w) != 0) return false;
        out[i] = f->entries[k];
    }
    return true;
}

/* Logs why the cache file was not used or written, and keeps it for cpu_backend_repack_info. */
static void cache_note(cpu_ctx *c, const char *msg) {
    anv_log("%s", msg);
    snprintf(c->info.reason, sizeof c->info.reason, "%s", msg);
}

/* Second start: the cache file, when it exists and is sound. 0 = used; 1 = not used. */
static int load_from_cache(cpu_ctx *c, const rpc_key *key, rpc_entry *entries) {
    cpu_load *L = &c->load;
    rpc_file f;
    const int r = rpc_open(key, &f);
    if (r == 1) return 1;
    char msg[sizeof c->info.reason];
    if (r < 0) {
        snprintf(msg, sizeof msg, "%s; repacking and rewriting it", anv_last_error());
        cache_note(c, msg);
        c->info.rebuilt = true;
        return 1;
    }
    if (!match_entries(L, &f, entries)) {
        snprintf(msg, sizeof msg, "repack cache %s: does not hold this load's weights; repacking and rewriting it", key->path);
        cache_note(c, msg);
        c->info.rebuilt = true;
        rpc_close(&f);
        return 1;
    }
    madvise(f.map, f.map_size, MADV_WILLNEED);
    load_job j = {.L = L, .file = &f};
    atomic_init(&j.bad_slices, 0);
    tp_run(c->tp, verify_slice_fn, &j, (int64_t)f.n_slices);
    if (atomic_load(&j.bad_slices) > 0) {
        snprintf(msg, sizeof msg, "repack cache %s: %d of %llu slices fail their checksum (corrupt); repacking and rewriting it",
                 key->path, atomic_load(&j.bad_slices), (unsigned long long)f.n_slices);
        cache_note(c, msg);
        c->info.rebuilt = true;
        rpc_close(&f);
        return 1;
    }
    cpu_packed_region *region = region_new(f.map, f.map_size, true);
    if (!region) { rpc_close(&f); return 1; }
    const size_t shift = (size_t)(f.payload - f.map);
    for (int i = 0; i < L->n; i++) entries[i].off += shift; /* offsets from the mapping's start */
    if (register_all(c, entries, region) != 0) {
        region_drop_unused(region);
        return -1;
    }
    c->info.cache = CPU_REPACK_CACHE_HIT;
    c->info.packed_bytes = f.payload_bytes;
    return 0;
}

/* First start: all pending weights repacked in parallel into one block; then the file. */
static int repack_all(cpu_ctx *c, const rpc_key *key, uint64_t max_bytes, rpc_entry *entries) {
    cpu_load *L = &c->load;
    uint64_t total = 0, n_chunks = 0;
    const uint64_t chunk_target = (uint64_t)1 << 18;
    for (int i = 0; i < L->n; i++) {
        const cpu_pending *w = &L->items[i];
        const uint64_t bytes = repack_bytes(w->type, w->cols, w->rows), gb = repack_group_bytes(w->type, w->cols);
        const int64_t groups = (w->rows + PK_ROWS - 1) / PK_ROWS, per = gb >= chunk_target ? 1 : (int64_t)(chunk_target / gb);
        entries[i] = (rpc_entry){.src_off = (uint64_t)((const uint8_t *)w->orig - (const uint8_t *)L->file.base), .type = w->type,
                                 .cols = w->cols, .rows = w->rows, .off = total, .bytes = bytes};
        total += (bytes + RPC_ALIGN - 1) / RPC_ALIGN * RPC_ALIGN;
        n_chunks += (uint64_t)((groups + per - 1) / per);
    }
    /* 2 MiB-aligned: transparent huge pages where the system allows them (a fault per
     * 2 MiB instead of per 4 KiB while the block fills) */
    const size_t huge = (size_t)2 << 20, alloc = (size_t)((total + huge - 1) / huge * huge);
    uint8_t *payload = aligned_alloc(huge, alloc ? alloc : huge);
#ifdef MADV_HUGEPAGE
    if (payload && alloc) madvise(payload, alloc, MADV_HUGEPAGE);
#endif
    repack_chunk *chunks = malloc((size_t)n_chunks * sizeof *chunks);
    cpu_packed_region *region = payload ? region_new(payload, alloc, false) : NULL;
    if (!payload || !chunks || !region) {
        free(payload); free(chunks); free(region);
        anv_set_error("cpu backend: out of memory repacking %.1f MB of weights", (double)total / 1e6);
        return -1;
    }
    memset(payload + total, 0, alloc - (size_t)total);
    n_chunks = 0;
    for (int i = 0; i < L->n; i++) {
        const cpu_pending *w = &L->items[i];
        const uint64_t gb = repack_group_bytes(w->type, w->cols);
        const int64_t groups = (w->rows + PK_ROWS - 1) / PK_ROWS, per = gb >= chunk_target ? 1 : (int64_t)(chunk_target / gb);
        const uint64_t pad0 = entries[i].off + entries[i].bytes, pad1 = (pad0 + RPC_ALIGN - 1) / RPC_ALIGN * RPC_ALIGN;
        memset(payload + pad0, 0, (size_t)(pad1 - pad0)); /* the file's bytes are all defined */
        for (int64_t g = 0; g < groups; g += per) chunks[n_chunks++] = (repack_chunk){i, g, g + per < groups ? g + per : groups};
    }
    load_job j = {.L = L, .entries = entries, .chunks = chunks, .payload = payload, .payload_bytes = total};
    tp_run(c->tp, repack_chunk_fn, &j, (int64_t)n_chunks);
    free(chunks);
    if (register_all(c, entries, region) != 0) {
        region_drop_unused(region);
        return -1;
    }
    c->info.packed_bytes = total;
    if (!key) return 0;
    const uint64_t n_slices = (total + RPC_SLICE - 1) / RPC_SLICE;
    uint64_t *sums = malloc((size_t)(n_slices ? n_slices : 1) * sizeof *sums);
    if (!sums) return 0; /* no file this time; the weights are packed */
    j.sums = sums;
    tp_run(c->tp, sum_slice_fn, &j, (int64_t)n_slices);
    if (rpc_write(key, entries, (uint32_t)L->n, payload, total, sums, max_bytes) == 0) c->info.cache = CPU_REPACK_CACHE_WRITTEN;
    else cache_note(c, anv_last_error());
    free(sums);
    return 0;
}

int cpu_load_end(cpu_ctx *c, bool ok) {
    cpu_load *L = &c->load;
    if (L->depth > 0 && --L->depth > 0) return 0;
    if (!L->active) return 0;
    L->active = false;
    if (!ok || L->n == 0) { L->n = 0; return 0; }
    const double t0 = anv_mono_s();
    memset(&c->info, 0, sizeof c->info);
    merge_pending(L);
    rpc_entry *entries = malloc((size_t)L->n * sizeof *entries);
    if (!entries) { L->n = 0; anv_set_error("cpu backend: out of memory"); return -1; }
    uint64_t packed = 0;
    for (int i = 0; i < L->n; i++) packed += repack_bytes(L->items[i].type, L->items[i].cols, L->items[i].rows);
    rpc_key key;
    bool keyed = false;
    if (c->cache.enabled && packed >= c->cache.min_bytes) {
        keyed = rpc_key_make(&L->file, c->kernels_isa, &key) == 0;
        if (keyed) snprintf(c->info.path, sizeof c->info.path, "%s", key.path);
        else snprintf(c->info.reason, sizeof c->info.reason, "%s", anv_last_error()); /* no file: not an error */
    }
    int rc = keyed ? load_from_cache(c, &key, entries) : 1;
    if (rc == 1) rc = repack_all(c, keyed ? &key : NULL, c->cache.max_bytes, entries);
    if (rc == 0) release_file_pages(L);
    c->info.n_weights = L->n;
    c->info.seconds = anv_mono_s() - t0;
    free(entries);
    L->n = 0;
    return rc;
}
