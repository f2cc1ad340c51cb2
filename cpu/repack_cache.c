/* repack_cache: the repack cache file of one model: key, format, checks, atomic write
 * (see repack_cache.h). */
#include "repack_cache.h"
#include "digest.h"
#include "error.h"
#include "quant.h"
#include "repack.h"
#include "weight_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef O_BINARY
#define O_BINARY 0
#endif

static const char rpc_magic[8] = {'A', 'N', 'V', 'L', 'R', 'P', 'K', 0};

/* ---- checksum ---- */

#define P1 0x9E3779B185EBCA87ull
#define P2 0xC2B2AE3D27D4EB4Full
static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static inline uint64_t lane(uint64_t h, uint64_t w) { return rotl64(h + w * P2, 31) * P1; }

/* Fletcher-style over 64-bit words in 8 lanes (a += w, b += a: a flipped bit changes a, two
 * swapped words change b), mixed at the end; plain adds that the compiler vectorises, so
 * checking a file runs near memory speed. Not a defence against forgery, which the cache
 * does not need: it guards against truncation, torn writes and bit rot. */
uint64_t rpc_checksum(const void *p, size_t n) {
    const uint8_t *b = p;
    uint64_t a[8] = {0}, c[8] = {0};
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        uint64_t w[8];
        memcpy(w, b + i, 64);
        for (int j = 0; j < 8; j++) { a[j] += w[j]; c[j] += a[j]; }
    }
    uint64_t h = (uint64_t)n * P1;
    for (int j = 0; j < 8; j++) h = lane(lane(h, a[j]), c[j]);
    for (; i < n; i++) h = rotl64(h ^ (b[i] * P1), 11) * P2;
    h ^= h >> 33; h *= P2; h ^= h >> 29; h *= P1; h ^= h >> 32;
    return h;
}

/* ---- layout fingerprint ---- */

static uint64_t layout_print;
static pthread_once_t layout_once = PTHREAD_ONCE_INIT;

/* Each supported type repacked from the same pseudo-random bytes (17 rows: a full and a
 * padded group): any change to repack.c's output changes this. */
static void layout_print_init(void) {
    const int64_t cols = 512, rows = 17;
    uint64_t h = REPACK_LAYOUT_VERSION, s = 0x243F6A8885A308D3ull;
    for (uint32_t t = 0; t < QT_COUNT; t++) {
        if (!repack_supported(t)) continue;
        const size_t in = qtype_row_size((qtype)t, cols) * (size_t)rows, out = repack_bytes(t, cols, rows);
        uint8_t *src = malloc(in), *dst = malloc(out);
        if (!src || !dst) { free(src); free(dst); layout_print = 0; return; }
        for (size_t i = 0; i < in; i++) {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            src[i] = (uint8_t)(s >> 24);
        }
        repack_rows(t, src, cols, rows, dst);
        h = h * P1 + rpc_checksum(dst, out) + t;
        free(src);
        free(dst);
    }
    layout_print = h;
}

static uint64_t get_layout_print(void) {
    pthread_once(&layout_once, layout_print_init);
    return layout_print;
}

/* ---- key ---- */

/* The 64 hex digits when name (a path's last part) is a store blob's "sha256-<hex>". */
static const char *blob_hex(const char *path) {
    const char *name = path;
    for (const char *p = path; *p; p++)
        if (*p == '/' || *p == '\\') name = p + 1;
    if (strncmp(name, "sha256-", 7) != 0 || strlen(name) != 7 + 64) return NULL;
    for (int i = 0; i < 64; i++) {
        const char c = name[7 + i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return NULL;
    }
    return name + 7;
}

int rpc_key_make(const be_weight_file *f, const char *isa, rpc_key *k) {
    memset(k, 0, sizeof *k);
    if (!f->mapped || f->fd < 0) { anv_set_error("repack cache: the model is not mapped (ANVIL_NO_MMAP)"); return -1; }
    if (wcache_dir(k->dir, sizeof k->dir) != 0) return -1;
    snprintf(k->isa, sizeof k->isa, "%s", isa);
    k->model_size = f->size;
    struct stat st;
    if (fstat(f->fd, &st) != 0) { anv_set_error("repack cache: cannot stat %s: %s", f->path, strerror(errno)); return -1; }
    if ((uint64_t)st.st_size != (uint64_t)f->size) { anv_set_error("repack cache: %s changed size while loading", f->path); return -1; }
    char name[80];
    const char *hex = blob_hex(f->path);
    digest_ctx *d = digest_new();
    if (!d) { anv_set_error("out of memory"); return -1; }
    if (hex) {
        digest_update(d, "blob", 5);
        digest_update(d, hex, 64);
        digest_update(d, &k->model_size, sizeof k->model_size);
        snprintf(name, sizeof name, "sha256-%.64s", hex);
    } else {
        const uint64_t id[4] = {(uint64_t)st.st_dev, (uint64_t)st.st_ino, (uint64_t)st.st_size, (uint64_t)st.st_mtime};
        digest_update(d, "file", 5);
        digest_update(d, id, sizeof id);
#if !defined(_WIN32)
        const uint64_t ns = (uint64_t)st.st_mtim.tv_nsec;
        digest_update(d, &ns, sizeof ns);
#endif
        const uint8_t *b = f->base;
        const size_t head = f->size < 65536 ? f->size : 65536;
        digest_update(d, b, head);
        for (int i = 0; i < 64 && f->size >= 4096; i++) {
            const size_t at = (size_t)((f->size - 4096) / 63 * (uint64_t)i);
            digest_update(d, b + at, 4096);
        }
        if (f->size >= 4096) digest_update(d, b + f->size - 4096, 4096);
        name[0] = 0;
    }
    char out[DIGEST_STR_LEN + 1];
    digest_final(d, out);
    memcpy(k->key, out + 7, 64);
    k->key[64] = 0;
    if (!hex) snprintf(name, sizeof name, "file-%.32s", k->key);
    snprintf(k->path, sizeof k->path, "%s/%s.%s.v%d%s", k->dir, name, k->isa, REPACK_LAYOUT_VERSION, WCACHE_EXT);
    return 0;
}

/* ---- read ---- */

static int bad(const char *path, const char *what) {
    anv_set_error("repack cache %s: %s", path, what);
    return -1;
}

int rpc_open(const rpc_key *k, rpc_file *out) {
    memset(out, 0, sizeof *out);
    const int fd = open(k->path, O_RDONLY | O_CLOEXEC | O_BINARY);
    if (fd < 0) {
        if (errno == ENOENT) return 1;
        anv_set_error("repack cache %s: cannot open: %s", k->path, strerror(errno));
        return -1;
    }
    struct stat st;
    rpc_header h;
    int rc = -1;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof h) { bad(k->path, "shorter than its header (truncated)"); goto out; }
    if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h) { bad(k->path, "cannot read its header"); goto out; }
    if (memcmp(h.magic, rpc_magic, sizeof rpc_magic) != 0) { bad(k->path, "not a repack cache file (bad magic)"); goto out; }
    if (rpc_checksum(&h, offsetof(rpc_header, header_sum)) != h.header_sum) { bad(k->path, "header checksum mismatch (corrupt)"); goto out; }
    if (h.layout_version != REPACK_LAYOUT_VERSION || h.header_bytes != sizeof h || h.pk_rows != PK_ROWS) {
        anv_set_error("repack cache %s: layout version %u, this build has %d", k->path, h.layout_version, REPACK_LAYOUT_VERSION);
        goto out;
    }
    if (h.layout_print != get_layout_print()) { bad(k->path, "written by a build with other repack layouts"); goto out; }
    if (strncmp(h.isa, k->isa, sizeof h.isa) != 0) {
        anv_set_error("repack cache %s: made for %.16s kernels, this run uses %s", k->path, h.isa, k->isa);
        goto out;
    }
    if (memcmp(h.key, k->key, 64) != 0 || h.model_size != k->model_size) { bad(k->path, "made from another model file"); goto out; }
    if ((uint64_t)st.st_size != h.file_bytes) {
        anv_set_error("repack cache %s: %lld bytes, its header says %llu (truncated or grown)", k->path, (long long)st.st_size,
                      (unsigned long long)h.file_bytes);
        goto out;
    }
    const uint64_t n_slices = (h.payload_bytes + RPC_SLICE - 1) / RPC_SLICE;
    if (h.slice_bytes != RPC_SLICE || h.n_slices != n_slices || h.entries_off != sizeof h ||
        h.sums_off != h.entries_off + (uint64_t)h.n_entries * sizeof(rpc_entry) || h.sums_off + 8 * n_slices > h.payload_off ||
        h.payload_off % 4096 != 0 || h.payload_off + h.payload_bytes != h.file_bytes || h.file_bytes > SIZE_MAX) {
        bad(k->path, "inconsistent table offsets (corrupt)");
        goto out;
    }
    void *map = mmap(NULL, (size_t)h.file_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) { anv_set_error("repack cache %s: cannot mmap: %s", k->path, strerror(errno)); goto out; }
    out->map = map;
    out->map_size = (size_t)h.file_bytes;
    out->entries = (const rpc_entry *)(const void *)(out->map + h.entries_off);
    out->n_entries = h.n_entries;
    out->sums = (const uint64_t *)(const void *)(out->map + h.sums_off);
    out->n_slices = n_slices;
    out->payload = out->map + h.payload_off;
    out->payload_bytes = h.payload_bytes;
    if (rpc_checksum(out->map + h.entries_off, (size_t)(h.sums_off + 8 * n_slices - h.entries_off)) != h.meta_sum) {
        bad(k->path, "table checksum mismatch (corrupt)");
        rpc_close(out);
        goto out;
    }
    for (uint32_t i = 0; i < h.n_entries; i++) {
        const rpc_entry *e = &out->entries[i];
        const qtype_info *qi = qtype_get(e->type);
        if (!qi || !repack_supported(e->type) || e->cols <= 0 || e->rows <= 0 || e->cols % qi->block_size != 0 ||
            e->off % RPC_ALIGN != 0 || e->bytes != repack_bytes(e->type, e->cols, e->rows) || e->off > h.payload_bytes ||
            e->bytes > h.payload_bytes - e->off) {
            bad(k->path, "a weight entry is out of range (corrupt)");
            rpc_close(out);
            goto out;
        }
    }
    wcache_touch_fd(fd); /* most recently used: the size bound deletes it last */
    rc = 0;
out:
    close(fd);
    return rc;
}

bool rpc_slice_ok(const rpc_file *f, uint64_t i) {
    const uint64_t at = i * RPC_SLICE, n = f->payload_bytes - at < RPC_SLICE ? f->payload_bytes - at : RPC_SLICE;
    return rpc_checksum(f->payload + at, (size_t)n) == f->sums[i];
}

void rpc_close(rpc_file *f) {
    if (f->map) munmap(f->map, f->map_size);
    memset(f, 0, sizeof *f);
}

/* ---- write ---- */

static int write_all(int fd, const void *data, uint64_t n, const char *path) {
    const uint8_t *p = data;
    while (n) {
        const size_t chunk = n > ((size_t)1 << 30) ? ((size_t)1 << 30) : (size_t)n;
        const ssize_t w = write(fd, p, chunk);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) { anv_set_error("cannot write %s: %s", path, w < 0 ? strerror(errno) : "no space"); return -1; }
        p += w;
        n -= (uint64_t)w;
    }
    return 0;
}

int rpc_write(const rpc_key *k, const rpc_entry *entries, uint32_t n, const uint8_t *payload, uint64_t payload_bytes,
              const uint64_t *sums, uint64_t max_bytes) {
    rpc_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, rpc_magic, sizeof rpc_magic);
    h.layout_version = REPACK_LAYOUT_VERSION;
    h.header_bytes = sizeof h;
    h.layout_print = get_layout_print();
    memcpy(h.isa, k->isa, sizeof h.isa);
    memcpy(h.key, k->key, 64);
    h.model_size = k->model_size;
    h.pk_rows = PK_ROWS;
    h.n_entries = n;
    h.slice_bytes = RPC_SLICE;
    h.n_slices = (payload_bytes + RPC_SLICE - 1) / RPC_SLICE;
    h.entries_off = sizeof h;
    h.sums_off = h.entries_off + (uint64_t)n * sizeof(rpc_entry);
    h.payload_off = (h.sums_off + 8 * h.n_slices + 4095) / 4096 * 4096;
    h.payload_bytes = payload_bytes;
    h.file_bytes = h.payload_off + payload_bytes;
    if (h.file_bytes > max_bytes) {
        anv_set_error("repack cache: the model's %.2f GB of repacked weights exceed ANVIL_REPACK_CACHE_MAX_GB (%.2f GB); not cached",
                      (double)h.file_bytes / 1e9, (double)max_bytes / 1e9);
        return -1;
    }
    uint8_t *meta = calloc(1, (size_t)h.payload_off);
    if (!meta) { anv_set_error("out of memory"); return -1; }
    memcpy(meta + h.entries_off, entries, (size_t)n * sizeof(rpc_entry));
    memcpy(meta + h.sums_off, sums, (size_t)(8 * h.n_slices));
    h.meta_sum = rpc_checksum(meta + h.entries_off, (size_t)(h.sums_off + 8 * h.n_slices - h.entries_off));
    h.header_sum = rpc_checksum(&h, offsetof(rpc_header, header_sum));
    memcpy(meta, &h, sizeof h);

    int rc = -1;
    if (wcache_mkdirs(k->dir) != 0) { free(meta); return -1; }
    wcache_prune(k->dir, max_bytes, h.file_bytes, k->path);
    char *tmp = NULL;
    const int fd = wcache_create_temp(k->path, &tmp);
    if (fd < 0) { free(meta); return -1; }
    rc = write_all(fd, meta, h.payload_off, tmp);
    if (rc == 0) rc = write_all(fd, payload, payload_bytes, tmp);
    if (rc == 0 && fsync(fd) != 0) { anv_set_error("cannot sync %s: %s", tmp, strerror(errno)); rc = -1; }
    if (close(fd) != 0 && rc == 0) { anv_set_error("cannot write %s: %s", tmp, strerror(errno)); rc = -1; }
    /* another process writing the same model renames an identical file: either wins */
    if (rc == 0 && rename(tmp, k->path) != 0) { anv_set_error("cannot rename %s to %s: %s", tmp, k->path, strerror(errno)); rc = -1; }
    if (rc != 0) unlink(tmp);
    free(tmp);
    free(meta);
    return rc;
}
