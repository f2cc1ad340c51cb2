/* digest: SHA-256 of files and memory (OpenSSL libcrypto), and the "sha256:<64 hex>"
 * digest strings the model store and the registry protocol use. */
#ifndef ANVIL_DIGEST_H
#define ANVIL_DIGEST_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DIGEST_HEX_LEN 64
#define DIGEST_STR_LEN (7 + DIGEST_HEX_LEN)  /* "sha256:" + hex, without the NUL */

typedef struct digest_ctx digest_ctx;      /* incremental hashing */
digest_ctx *digest_new(void);
void digest_update(digest_ctx *d, const void *data, size_t n);
/* Writes "sha256:<hex>" (DIGEST_STR_LEN + 1 bytes) and frees d. */
void digest_final(digest_ctx *d, char out[DIGEST_STR_LEN + 1]);

void digest_bytes(const void *data, size_t n, char out[DIGEST_STR_LEN + 1]);
/* Hashes a whole file; *size_out (optional) gets its size. -1 + anv_last_error() on I/O errors. */
int digest_file(const char *path, char out[DIGEST_STR_LEN + 1], uint64_t *size_out);
/* True for exactly "sha256:" followed by 64 lowercase hex digits (or "sha256-" when
 * dash_form: the blob file name form). */
bool digest_valid(const char *s, bool dash_form);
#endif
