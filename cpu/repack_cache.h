/* repack_cache: the file that keeps one model's repacked weights (repack.h) between runs,
 * so a second start maps it instead of repacking: its key, format, checks and atomic write.
 * Where it lives, its size bound and its removal with the model: engine/base/weight_cache.h.
 *
 * Key: a store blob (a file named sha256-<64 hex>, as both Anvil's and Ollama's stores
 * name them) is its digest plus its size: the store verified the content when it wrote
 * it. A loose .gguf is keyed on its identity (device, inode, size, mtime) plus a SHA-256
 * of 64 KiB at its start, 64 spread samples of 4 KiB and its last 4 KiB: reading the
 * whole file at every start to digest it would cost what the cache saves. An in-place
 * edit that keeps size and mtime and misses every sample goes unnoticed (say so where it
 * matters: ANVIL_REPACK_CACHE=0). The key, the kernel set's ISA, REPACK_LAYOUT_VERSION and
 * a fingerprint of repack_rows' output on fixed inputs must all match for a file to be used.
 *
 * Format (little-endian, this machine's): rpc_header; n_entries rpc_entry (one per packed
 * weight, by its offset in the model file); n_slices 64-bit checksums, one per RPC_SLICE
 * bytes of payload; zero padding to a 4096-byte boundary; the payload (each weight's
 * packed copy 64-byte aligned). The header carries a checksum of itself and one of the
 * entry and slice tables; the file's size must be exactly file_bytes (a truncated file is
 * refused before it is mapped). Slices are checked at load (repack_load.c, on the pool). */
#ifndef ANVIL_CPU_REPACK_CACHE_H
#define ANVIL_CPU_REPACK_CACHE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "backend.h"

#define RPC_SLICE ((uint64_t)4 << 20)
#define RPC_ALIGN 64

/* The file's first bytes (public for the tests that forge old versions and other ISAs). */
typedef struct {
    char magic[8];
    uint32_t layout_version; /* REPACK_LAYOUT_VERSION */
    uint32_t header_bytes;   /* sizeof(rpc_header) */
    uint64_t layout_print;   /* repack_rows' output on fixed inputs */
    char isa[16];
    char key[64];
    uint64_t model_size;
    uint32_t pk_rows, n_entries;
    uint64_t slice_bytes, n_slices;
    uint64_t entries_off, sums_off, payload_off, payload_bytes, file_bytes;
    uint64_t meta_sum;       /* of the entry and slice tables */
    uint64_t header_sum;     /* of every byte above */
} rpc_header;

typedef struct {
    uint64_t src_off;    /* the weight's byte offset in the model file */
    uint32_t type, reserved;
    int64_t cols, rows;
    uint64_t off, bytes; /* its packed copy: offset in the payload, size */
} rpc_entry;

typedef struct {
    char dir[4096];
    char path[4096 + 160]; /* the cache file */
    char key[65];          /* hex SHA-256 of the model's identity */
    char isa[16];
    uint64_t model_size;
} rpc_key;

typedef struct {
    uint8_t *map;        /* the whole file, read-only */
    size_t map_size;
    const rpc_entry *entries;
    uint32_t n_entries;
    const uint64_t *sums;
    uint64_t n_slices;
    uint8_t *payload;
    uint64_t payload_bytes;
} rpc_file;

/* The key and file name of the model in f for kernels of this ISA ("avx512"): 0, or -1 +
 * error (no usable identity or folder: the load goes on without a cache). */
int rpc_key_make(const be_weight_file *f, const char *isa, rpc_key *k);
/* Opens, checks and maps the cache file: 0; 1 when there is none; -1 + error naming what
 * is wrong (version, ISA, key, size, checksums of the tables) when it cannot be used. */
int rpc_open(const rpc_key *k, rpc_file *out);
/* Whether payload slice i matches its checksum. */
bool rpc_slice_ok(const rpc_file *f, uint64_t i);
void rpc_close(rpc_file *f);
/* Writes the cache file atomically (temporary beside it, fsync, rename over), first
 * pruning the folder to max_bytes less its size: 0, or -1 + error (the file is larger
 * than max_bytes, or an I/O error). sums: the payload's slice checksums. */
int rpc_write(const rpc_key *k, const rpc_entry *entries, uint32_t n, const uint8_t *payload, uint64_t payload_bytes,
              const uint64_t *sums, uint64_t max_bytes);
/* The checksum of slices and tables (8-lane Fletcher-style sums, mixed: near memory speed). */
uint64_t rpc_checksum(const void *p, size_t n);
#endif
