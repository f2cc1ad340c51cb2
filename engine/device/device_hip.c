/* device_hip: the HIP side of device selection that needs no ROCm: which gfx targets a
 * HIP build covers (exact targets, xnack/sramecc feature suffixes, LLVM generic targets
 * such as gfx10-3-generic), HSA_OVERRIDE_GFX_VERSION parsing, and the override a
 * user could try when a card's exact target is missing but a sibling is built. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"

/* LLVM's generic targets (code object v6) and the processors each one covers. */
static const struct { const char *generic; const char *members; } hip_generic_targets[] = {
    {"gfx9-generic", "gfx900,gfx902,gfx904,gfx906,gfx909,gfx90c"},
    {"gfx9-4-generic", "gfx940,gfx941,gfx942,gfx950"},
    {"gfx10-1-generic", "gfx1010,gfx1011,gfx1012,gfx1013"},
    {"gfx10-3-generic", "gfx1030,gfx1031,gfx1032,gfx1033,gfx1034,gfx1035,gfx1036"},
    {"gfx11-generic", "gfx1100,gfx1101,gfx1102,gfx1103,gfx1150,gfx1151,gfx1152,gfx1153"},
    {"gfx12-generic", "gfx1200,gfx1201"},
};

/* A target split into its processor name and feature settings (-1 = unspecified). */
typedef struct { char base[32]; int xnack, sramecc; } hip_target;

static int hip_target_parse(const char *s, size_t len, hip_target *t) {
    while (len && isspace((unsigned char)*s)) { s++; len--; }
    while (len && isspace((unsigned char)s[len - 1])) len--;
    t->xnack = t->sramecc = -1;
    size_t base_len = 0;
    while (base_len < len && s[base_len] != ':') base_len++;
    if (base_len == 0 || base_len >= sizeof t->base) return -1;
    for (size_t i = 0; i < base_len; i++) t->base[i] = (char)tolower((unsigned char)s[i]);
    t->base[base_len] = 0;
    size_t i = base_len;
    while (i < len) { /* ":xnack-" ":sramecc+" */
        i++;
        size_t j = i;
        while (j < len && s[j] != ':') j++;
        if (j - i >= 2) {
            int on = s[j - 1] == '+' ? 1 : s[j - 1] == '-' ? 0 : -1;
            if (!strncmp(s + i, "xnack", 5)) t->xnack = on;
            else if (!strncmp(s + i, "sramecc", 7)) t->sramecc = on;
        }
        i = j;
    }
    return 0;
}

static bool hip_feature_compatible(int build, int dev) {
    return build < 0 || dev < 0 || build == dev;
}

static bool hip_base_in_list(const char *base, const char *list) {
    size_t n = strlen(base);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, base, n)) return true;
        if (!e) break;
        p = e + 1;
    }
    return false;
}

bool hip_target_in_build(const char *gfx, const char *targets) {
    if (!gfx || !*gfx || !targets) return false;
    hip_target dev;
    if (hip_target_parse(gfx, strlen(gfx), &dev) != 0) return false;
    for (const char *p = targets; *p;) {
        const char *e = p;
        while (*e && *e != ',' && *e != ';' && *e != ' ') e++;
        hip_target bt;
        if (e > p && hip_target_parse(p, (size_t)(e - p), &bt) == 0 &&
            hip_feature_compatible(bt.xnack, dev.xnack) && hip_feature_compatible(bt.sramecc, dev.sramecc)) {
            if (!strcmp(bt.base, dev.base)) return true;
            for (size_t g = 0; g < sizeof hip_generic_targets / sizeof hip_generic_targets[0]; g++)
                if (!strcmp(bt.base, hip_generic_targets[g].generic) && hip_base_in_list(dev.base, hip_generic_targets[g].members))
                    return true;
        }
        p = *e ? e + 1 : e;
    }
    return false;
}

/* "gfx1031" -> major 10, minor 3, stepping 1; "gfx90a" -> 9, 0, 10. */
static int hip_gfx_split(const char *base, int *major, int *minor, int *stepping) {
    if (strncmp(base, "gfx", 3)) return -1;
    const char *s = base + 3;
    size_t n = strlen(s);
    if (n < 3 || n > 4) return -1;
    for (size_t i = 0; i + 2 < n; i++) if (!isdigit((unsigned char)s[i])) return -1;
    if (!isxdigit((unsigned char)s[n - 2]) || !isxdigit((unsigned char)s[n - 1])) return -1;
    char maj[3] = {0};
    memcpy(maj, s, n - 2);
    *major = atoi(maj);
    char mi[2] = {s[n - 2], 0}, st[2] = {s[n - 1], 0};
    *minor = (int)strtol(mi, NULL, 16);
    *stepping = (int)strtol(st, NULL, 16);
    return 0;
}

int hip_gfx_from_version(const char *version, char *out, size_t out_len) {
    if (!version) return -1;
    int v[3], k = 0;
    const char *p = version;
    for (; k < 3; k++) {
        if (!isdigit((unsigned char)*p)) return -1;
        char *end;
        long x = strtol(p, &end, 10);
        if (end - p > 3 || x > 255) return -1;
        v[k] = (int)x;
        p = end;
        if (k < 2) { if (*p != '.') return -1; p++; }
    }
    if (*p || v[0] < 6 || v[0] > 99 || v[1] > 15 || v[2] > 15) return -1;
    snprintf(out, out_len, "gfx%d%x%x", v[0], v[1], v[2]);
    return 0;
}

bool hip_override_suggestion(const char *gfx, const char *targets, char *out, size_t out_len) {
    if (!gfx || !targets || hip_target_in_build(gfx, targets)) return false;
    hip_target dev;
    int maj, min, step;
    if (hip_target_parse(gfx, strlen(gfx), &dev) || hip_gfx_split(dev.base, &maj, &min, &step)) return false;
    for (const char *p = targets; *p;) {
        const char *e = p;
        while (*e && *e != ',' && *e != ';' && *e != ' ') e++;
        hip_target bt;
        int bmaj, bmin, bstep;
        if (e > p && hip_target_parse(p, (size_t)(e - p), &bt) == 0 &&
            hip_gfx_split(bt.base, &bmaj, &bmin, &bstep) == 0 && bmaj == maj && bmin == min) {
            snprintf(out, out_len, "%d.%d.%d", bmaj, bmin, bstep);
            return true;
        }
        p = *e ? e + 1 : e;
    }
    return false;
}
