/* hash: SipHash-1-3 (Aumasson & Bernstein) under a per-process random key; see hash.h. */
#include "hash.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

static inline void sip_round(uint64_t *v0, uint64_t *v1, uint64_t *v2, uint64_t *v3) {
    *v0 += *v1; *v1 = ROTL(*v1, 13); *v1 ^= *v0; *v0 = ROTL(*v0, 32);
    *v2 += *v3; *v3 = ROTL(*v3, 16); *v3 ^= *v2;
    *v0 += *v3; *v3 = ROTL(*v3, 21); *v3 ^= *v0;
    *v2 += *v1; *v1 = ROTL(*v1, 17); *v1 ^= *v2; *v2 = ROTL(*v2, 32);
}

uint64_t anv_siphash13(const uint64_t key[2], const void *p, size_t n) {
    const uint8_t *in = p;
    uint64_t v0 = 0x736f6d6570736575ull ^ key[0], v1 = 0x646f72616e646f6dull ^ key[1];
    uint64_t v2 = 0x6c7967656e657261ull ^ key[0], v3 = 0x7465646279746573ull ^ key[1];
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t m;
        memcpy(&m, in + i, 8); /* little-endian host (gguf.c insists on it) */
        v3 ^= m;
        sip_round(&v0, &v1, &v2, &v3);
        v0 ^= m;
    }
    uint64_t b = (uint64_t)n << 56;
    for (size_t k = 0; i + k < n; k++) b |= (uint64_t)in[i + k] << (8 * k);
    v3 ^= b;
    sip_round(&v0, &v1, &v2, &v3);
    v0 ^= b;
    v2 ^= 0xff;
    for (int r = 0; r < 3; r++) sip_round(&v0, &v1, &v2, &v3);
    return v0 ^ v1 ^ v2 ^ v3;
}

static uint64_t g_key[2];
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

static void make_key(void) {
    uint64_t k[2];
    size_t got = 0;
    while (got < sizeof k) {
        ssize_t r = getrandom((uint8_t *)k + got, sizeof k - got, 0);
        if (r <= 0) break;
        got += (size_t)r;
    }
    if (got < sizeof k) { /* no getrandom (old kernel, seccomp): still unpredictable enough per run */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t seed[2] = { (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32), (uint64_t)getpid() ^ (uint64_t)(uintptr_t)&got };
        k[0] = anv_siphash13(seed, &ts, sizeof ts);
        k[1] = anv_siphash13(seed, k, sizeof k[0]);
    }
    memcpy(g_key, k, sizeof k);
}

static char g_tag[48];
static pthread_once_t g_tag_once = PTHREAD_ONCE_INIT;

static void make_tag(void) {
    pthread_once(&g_key_once, make_key);
    snprintf(g_tag, sizeof g_tag, "%ld-%012llx", (long)getpid(), (unsigned long long)(g_key[0] >> 16));
}

const char *anv_process_tag(void) {
    pthread_once(&g_tag_once, make_tag);
    return g_tag;
}

uint64_t anv_hash(const void *p, size_t n) {
    pthread_once(&g_key_once, make_key);
    return anv_siphash13(g_key, p, n);
}
