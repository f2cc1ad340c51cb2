/* repack: weights re-laid out at load for the CPU backend's interleaved kernels (the
 * AVX-512 VNNI GEMM/GEMV of matmul_packed_avx512.c). A packed weight keeps its original
 * (mmap'd) bytes for everything else (get_rows, views, other kernel sets) and adds one
 * copy in groups of PK_ROWS rows: per 32-element block index i, the PK_ROWS fp16 scales,
 * then the quants, four bytes of each row in turn (one 32-bit lane per row), so one
 * vpdpbusd step covers PK_ROWS rows x 4 elements. The last group is padded with zero rows
 * (scale 0). Memory: the packed copy is the size of the original (Q4_0: 18 bytes per 32
 * weights, Q8_0: 34; Q4_K/Q5_K below +2-3 %, Q6_K the same), plus at most PK_ROWS - 1 padding rows per
 * tensor. */
#ifndef ANVIL_CPU_REPACK_H
#define ANVIL_CPU_REPACK_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PK_ROWS 16

/* Q4_K / Q5_K: per 256-element superblock of a group, at these byte offsets: 16 fp16 d,
 * 16 fp16 dmin, the 6-bit scales as bytes [sub-block j][row], the 6-bit mins as byte pairs
 * [pair p][row][j = 2p, 2p+1] (widened to int16 pairs they meet the activation's 32-element
 * sums in one vpdpwssd), the nibbles [chunk c][step k][row][4 bytes of qs 32c+4k..] (low
 * nibbles: sub-block 2c, high: 2c+1), Q5_K then qh [step k][row][4 bytes of qh 4k..].
 * 2368 / 2880 bytes per 16 rows vs 2304 / 2816 in the file (+2.8 % / +2.3 %). */
#define PK_K_D 0
#define PK_K_DMIN 32
#define PK_K_SC 64
#define PK_K_MN 192
#define PK_K_QS 320
#define PK_Q4K_BYTES 2368
#define PK_Q5K_QH 2368
#define PK_Q5K_BYTES 2880
/* Q6_K: per superblock of a group: 16 fp16 d, the int8 scales as bytes [sub-block j][row],
 * 32 bytes of padding (the quant lines start on a cache line), then per half h and step
 * k 0..7 three 64-byte lines, [row][4 bytes] each: ql bytes 64h+4k.. (low nibbles:
 * elements 128h+4k.., high: +64), ql bytes 64h+32+4k.. (low: 128h+32+4k.., high: +64), qh
 * bytes 32h+4k.. (bits 2m..2m+1: element 128h+32m+4k..). A matvec reads the superblock in
 * storage order. 3360 bytes of data per 16 rows (the file's size) in 3392 (+1 %). */
#define PK_Q6K_D 0
#define PK_Q6K_SC 32
#define PK_Q6K_Q 320
/* Byte offsets of step k of half h: ql line b (0: ql 64h+4k.., 1: ql 64h+32+4k..), qh. */
#define PK_Q6K_QL(h, b, k) (PK_Q6K_Q + (size_t)(3 * (8 * (h) + (k)) + (b)) * 64)
#define PK_Q6K_QH(h, k) (PK_Q6K_Q + (size_t)(3 * (8 * (h) + (k)) + 2) * 64)
#define PK_Q6K_BYTES 3392
/* F16 / BF16: per column k the 16 rows' 16-bit values side by side (32 bytes), so one load
 * is one column of the group: cols x 32 bytes per 16 rows, the file's size. */

/* Bump whenever a packed layout above or repack.c's output changes: it names and keys the
 * repack cache files (cpu/repack_cache.c), so a file of another layout is never read.
 * (The cache also checks a fingerprint of repack_rows' output on fixed inputs.) */
#define REPACK_LAYOUT_VERSION 1

/* One block holding the packed copies of many weights (a model's, repacked together at
 * load, or its repack cache file mapped): freed / unmapped when its last weight goes. */
typedef struct cpu_packed_region {
    uint8_t *base;
    size_t size;
    bool mapped;        /* munmap (a cache file) instead of free */
    int refs;           /* weights registered on it */
} cpu_packed_region;

typedef struct {
    const void *orig;  /* the weight's own bytes (the lookup key) */
    uint32_t type;
    int64_t cols, rows;
    size_t group_bytes; /* bytes of one group of PK_ROWS rows */
    uint8_t *data;      /* 64-byte aligned, ceil(rows / PK_ROWS) groups */
    cpu_packed_region *region; /* data lies in this shared block, or NULL: data is its own */
} cpu_packed;

typedef struct {
    pthread_mutex_t lock;
    cpu_packed *items;
    int n, cap;
    size_t bytes;       /* packed bytes held (memory cost of repacking) */
} cpu_packed_set;

/* Whether the packed layout exists for this type (Q4_0, IQ4_NL, Q8_0, Q4_K, Q5_K, Q6_K, F16, BF16). */
bool repack_supported(uint32_t type);
/* Bytes of one packed group of PK_ROWS rows of `cols` elements. */
size_t repack_group_bytes(uint32_t type, int64_t cols);
/* Packs rows x cols of `type` at src into dst (repack_group_bytes * ceil(rows / PK_ROWS)). */
void repack_rows(uint32_t type, const void *src, int64_t cols, int64_t rows, uint8_t *dst);

void packed_set_init(cpu_packed_set *s);
void packed_set_free(cpu_packed_set *s);
/* Packs and registers a weight; 0, or -1 + error when out of memory. */
int packed_set_add(cpu_packed_set *s, uint32_t type, const void *data, int64_t cols, int64_t rows);
/* Bytes of the packed copy of rows x cols of type. */
size_t repack_bytes(uint32_t type, int64_t cols, int64_t rows);
/* Registers packed data already in region (one more reference to it); 0 or -1 + error. */
int packed_set_add_ref(cpu_packed_set *s, uint32_t type, const void *orig, int64_t cols, int64_t rows, uint8_t *data,
                       cpu_packed_region *region);
/* Forgets the weight whose bytes are at data (no-op when not packed). */
void packed_set_remove(cpu_packed_set *s, const void *data);
/* Copies the packed form of exactly this weight (same bytes, type, shape) to *out: true,
 * or false when there is none (e.g. a view of the weight). */
bool packed_set_find(cpu_packed_set *s, const void *data, uint32_t type, int64_t cols, int64_t rows, cpu_packed *out);
#endif
