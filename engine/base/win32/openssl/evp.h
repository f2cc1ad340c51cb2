/* openssl/evp.h (Windows build): the few OpenSSL EVP calls Anvil makes (SHA-256 for
 * digest.c, base64 for api_openai.c), under OpenSSL's names over Windows' own BCrypt and
 * CryptBinaryToString (engine/base/platform_win_crypto.c): no OpenSSL to cross-build or ship. */
#ifndef ANVIL_WIN_OPENSSL_EVP_H
#define ANVIL_WIN_OPENSSL_EVP_H
#include <stddef.h>
typedef struct evp_md_ctx_st EVP_MD_CTX;
typedef struct evp_md_st EVP_MD;
typedef struct engine_st ENGINE;
const EVP_MD *EVP_sha256(void);
EVP_MD_CTX *EVP_MD_CTX_new(void);
void EVP_MD_CTX_free(EVP_MD_CTX *c);
int EVP_DigestInit_ex(EVP_MD_CTX *c, const EVP_MD *md, ENGINE *e);
int EVP_DigestUpdate(EVP_MD_CTX *c, const void *d, size_t n);
int EVP_DigestFinal_ex(EVP_MD_CTX *c, unsigned char *out, unsigned int *n);
int EVP_EncodeBlock(unsigned char *out, const unsigned char *in, int n);
#endif
