/* fnv_flood: names whose FNV-1a hashes agree in their low 16 bits (every one lands in the
 * same bucket of an open-addressing table of up to 65536 slots indexed by an unkeyed FNV-1a:
 * the hash-flooding input of the hardening issue). 64-bit FNV-1a for the GGUF name index,
 * 32-bit for the tokenizer's. The low 16 bits of FNV-1a depend only on the low 16 bits of
 * the state, and the prime is odd (invertible mod 2^16), so the last byte can be solved for:
 * after "<prefix><b0><b1>", the byte b2 = s ^ target * P^-1 hits the target iff that is < 256
 * (about 1 in 256 choices of b0, b1). Header-only, for tests. */
#ifndef ANVIL_TEST_FNV_FLOOD_H
#define ANVIL_TEST_FNV_FLOOD_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct { uint16_t basis, prime; } fnv16;
static const fnv16 FNV64_LOW16 = { 0x2325, 0x01b3 }; /* 0xcbf29ce484222325, 0x100000001b3 */
static const fnv16 FNV32_LOW16 = { 0x9dc5, 0x0193 }; /* 2166136261, 16777619 */

static inline uint16_t fnv16_step(fnv16 f, uint16_t h, uint8_t b) { return (uint16_t)((h ^ b) * f.prime); }
static inline uint16_t fnv16_of(fnv16 f, const char *s, size_t n) {
    uint16_t h = f.basis;
    for (size_t i = 0; i < n; i++) h = fnv16_step(f, h, (uint8_t)s[i]);
    return h;
}
static inline uint16_t fnv16_inverse(uint16_t p) {
    uint16_t x = p; /* Newton: x = x (2 - p x), doubling the correct bits */
    for (int i = 0; i < 5; i++) x = (uint16_t)(x * (uint16_t)(2 - p * x));
    return x;
}

/* Writes "<prefix><b0><b1><b2>" (NUL-terminated, length *len) with the low 16 bits of its
 * FNV-1a equal to target; no byte is 0. Returns false if none works (practically never:
 * each (b0, b1) succeeds with probability ~1/256). */
static inline bool fnv16_collide(fnv16 f, const char *prefix, uint16_t target, char *out, size_t cap, size_t *len) {
    size_t n = strlen(prefix);
    if (n + 4 > cap) return false;
    memcpy(out, prefix, n);
    uint16_t h = fnv16_of(f, prefix, n), u = (uint16_t)(target * fnv16_inverse(f.prime));
    for (unsigned b0 = 1; b0 < 256; b0++) {
        uint16_t h0 = fnv16_step(f, h, (uint8_t)b0);
        for (unsigned b1 = 1; b1 < 256; b1++) {
            uint16_t h1 = fnv16_step(f, h0, (uint8_t)b1);
            unsigned b2 = (unsigned)(h1 ^ u);
            if (b2 == 0 || b2 > 255) continue;
            out[n] = (char)b0;
            out[n + 1] = (char)b1;
            out[n + 2] = (char)b2;
            out[n + 3] = '\0';
            *len = n + 3;
            return true;
        }
    }
    return false;
}
#endif
