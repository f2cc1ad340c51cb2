/* digest: SHA-256 through OpenSSL's EVP interface, formatted as "sha256:<hex>". */
#include "digest.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "readfile.h"

struct digest_ctx { EVP_MD_CTX *md; };

digest_ctx *digest_new(void) {
    digest_ctx *d = malloc(sizeof *d);
    if (!d) return NULL;
    d->md = EVP_MD_CTX_new();
    if (!d->md || EVP_DigestInit_ex(d->md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(d->md);
        free(d);
        return NULL;
    }
    return d;
}

void digest_update(digest_ctx *d, const void *data, size_t n) {
    if (n) EVP_DigestUpdate(d->md, data, n);
}

void digest_final(digest_ctx *d, char out[DIGEST_STR_LEN + 1]) {
    unsigned char h[32];
    unsigned int len = 0;
    EVP_DigestFinal_ex(d->md, h, &len);
    EVP_MD_CTX_free(d->md);
    free(d);
    static const char hex[] = "0123456789abcdef";
    memcpy(out, "sha256:", 7);
    for (int i = 0; i < 32; i++) {
        out[7 + 2 * i] = hex[h[i] >> 4];
        out[8 + 2 * i] = hex[h[i] & 15];
    }
    out[DIGEST_STR_LEN] = 0;
}

void digest_bytes(const void *data, size_t n, char out[DIGEST_STR_LEN + 1]) {
    digest_ctx *d = digest_new();
    if (!d) { out[0] = 0; return; }
    digest_update(d, data, n);
    digest_final(d, out);
}

int digest_file(const char *path, char out[DIGEST_STR_LEN + 1], uint64_t *size_out) {
    int fd = anv_open_regular(path, NULL);
    if (fd < 0) return -1;
    FILE *f = fdopen(fd, "rb");
    if (!f) { anv_set_error("cannot open %s: %s", path, strerror(errno)); close(fd); return -1; }
    digest_ctx *d = digest_new();
    char *buf = malloc(1 << 20);
    if (!d || !buf) {
        fclose(f);
        free(buf);
        if (d) digest_final(d, out);
        anv_set_error("out of memory");
        return -1;
    }
    uint64_t total = 0;
    size_t n;
    while ((n = fread(buf, 1, 1 << 20, f)) > 0) {
        digest_update(d, buf, n);
        total += n;
    }
    int err = ferror(f);
    fclose(f);
    free(buf);
    digest_final(d, out);
    if (err) { anv_set_error("cannot read %s", path); return -1; }
    if (size_out) *size_out = total;
    return 0;
}

bool digest_valid(const char *s, bool dash_form) {
    if (!s || strncmp(s, dash_form ? "sha256-" : "sha256:", 7) != 0) return false;
    for (int i = 0; i < DIGEST_HEX_LEN; i++) {
        char c = s[7 + i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return s[7 + DIGEST_HEX_LEN] == 0;
}
