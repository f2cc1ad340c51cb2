/* platform_win_crypto: SHA-256 over BCrypt and base64 over CryptBinaryToStringA, behind
 * OpenSSL's EVP names (engine/base/win32/openssl/evp.h) for the Windows build. BCrypt is
 * the better dependency there: part of Windows, FIPS-validated, nothing to cross-build.
 * Compiled empty on every other platform. */
#ifdef _WIN32
#include <windows.h>
#include <bcrypt.h>
#include <wincrypt.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

struct evp_md_ctx_st { BCRYPT_HASH_HANDLE h; };
struct evp_md_st { int unused; };
static const EVP_MD sha256_md;
static BCRYPT_ALG_HANDLE sha256_alg;
static INIT_ONCE sha256_once = INIT_ONCE_STATIC_INIT;

static BOOL CALLBACK open_alg(PINIT_ONCE o, PVOID p, PVOID *c) {
    (void)o; (void)p; (void)c;
    return BCryptOpenAlgorithmProvider(&sha256_alg, BCRYPT_SHA256_ALGORITHM, NULL, 0) == 0;
}

const EVP_MD *EVP_sha256(void) { return &sha256_md; }

EVP_MD_CTX *EVP_MD_CTX_new(void) { return calloc(1, sizeof(EVP_MD_CTX)); }

void EVP_MD_CTX_free(EVP_MD_CTX *c) {
    if (!c) return;
    if (c->h) BCryptDestroyHash(c->h);
    free(c);
}

int EVP_DigestInit_ex(EVP_MD_CTX *c, const EVP_MD *md, ENGINE *e) {
    (void)e;
    if (md != &sha256_md || !InitOnceExecuteOnce(&sha256_once, open_alg, NULL, NULL)) return 0;
    if (c->h) BCryptDestroyHash(c->h);
    c->h = NULL;
    return BCryptCreateHash(sha256_alg, &c->h, NULL, 0, NULL, 0, 0) == 0;
}

int EVP_DigestUpdate(EVP_MD_CTX *c, const void *d, size_t n) {
    const unsigned char *p = d;
    while (n) { /* BCryptHashData takes a ULONG length */
        ULONG k = n > 0x40000000u ? 0x40000000u : (ULONG)n;
        if (BCryptHashData(c->h, (PUCHAR)p, k, 0) != 0) return 0;
        p += k;
        n -= k;
    }
    return 1;
}

int EVP_DigestFinal_ex(EVP_MD_CTX *c, unsigned char *out, unsigned int *n) {
    if (BCryptFinishHash(c->h, out, 32, 0) != 0) return 0;
    if (n) *n = 32;
    return 1;
}

/* OpenSSL's contract: out gets 4*ceil(n/3) characters and a NUL; returns that length. */
int EVP_EncodeBlock(unsigned char *out, const unsigned char *in, int n) {
    DWORD len = (DWORD)(4 * ((n + 2) / 3) + 1);
    if (n == 0) { out[0] = 0; return 0; }
    if (!CryptBinaryToStringA(in, (DWORD)n, CRYPT_STRING_BASE64 | CRYPT_STRING_NOCRLF, (LPSTR)out, &len)) {
        out[0] = 0;
        return -1;
    }
    return (int)len;
}
#else
typedef int platform_win_crypto_unused; /* ISO C forbids an empty translation unit */
#endif
