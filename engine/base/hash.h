/* hash: the keyed string hash every name index uses (GGUF keys and tensor names, the
 * tokenizer's piece and merge tables). SipHash-1-3 under a 128-bit key drawn once per
 * process from getrandom(), so a file cannot be built whose names all land in one bucket
 * (an unkeyed hash such as FNV-1a lets 32k crafted keys make loading quadratic). */
#ifndef ANVIL_HASH_H
#define ANVIL_HASH_H
#include <stddef.h>
#include <stdint.h>

/* SipHash-1-3 of n bytes under the process key (thread-safe; the key is made on first use). */
uint64_t anv_hash(const void *p, size_t n);
/* The same under an explicit key (tests, reproducible vectors). */
uint64_t anv_siphash13(const uint64_t key[2], const void *p, size_t n);
/* "<pid>-<12 hex digits>": this process's name in temporary file names, unique among every
 * process that may share a folder (the pid alone is not: each container's server is pid 1 on a
 * shared model volume); the digits come from the process key. */
const char *anv_process_tag(void);
#endif
