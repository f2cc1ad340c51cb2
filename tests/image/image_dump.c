/* image_dump: engine/image's decoder from the command line, for tests/image/image_cases.py.
 *   image_dump [--max-bytes N] [--max-pixels N] FILE OUT.rgb   decodes FILE: prints "W H" and writes
 *       the RGB8 pixels to OUT.rgb; on failure prints the error line to stderr and exits 1.
 *   image_dump --serve   the same for many files in one process (one Wine start, not one per file):
 *       reads lines "FILE<TAB>OUT.rgb<TAB>MAX_BYTES<TAB>MAX_PIXELS" (0: the default limit) from stdin and
 *       answers each with one line on stdout, "ok W H" or "error MESSAGE"; stderr is left to the
 *       libraries (the caller checks that nothing else is written there).
 *   image_dump --mangle FILE...   decodes every truncation of each file (every byte for small files,
 *       ~600 cut points for larger ones) and 300 copies with random bytes changed (fixed seed); each
 *       must succeed or fail with one line "image: ..."; prints the counts, exits 1 on a bad message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "image.h"
#include "readfile.h"

static int check_one(const uint8_t *d, size_t n, const char *what, size_t at, int *ok, int *refused) {
    anv_image img;
    if (image_decode(d, n, NULL, &img) == 0) {
        (*ok)++;
        image_free(&img);
        return 0;
    }
    (*refused)++;
    const char *e = anv_last_error();
    if (strncmp(e, "image: ", 7) || strchr(e, '\n') || img.rgb) {
        fprintf(stderr, "image_dump: %s at %zu: bad error '%s'\n", what, at, e);
        return 1;
    }
    return 0;
}

static int mangle(const char *path) {
    size_t n;
    uint8_t *d = (uint8_t *)anv_read_file(path, (size_t)1 << 30, &n);
    if (!d) { fprintf(stderr, "image_dump: %s\n", anv_last_error()); return 1; }
    int ok = 0, refused = 0, bad = 0;
    size_t step = n > 600 ? n / 600 : 1;
    for (size_t cut = 0; cut < n; cut += step) {
        uint8_t *copy = malloc(cut ? cut : 1);   /* an exact-size copy: ASan sees any overread */
        memcpy(copy, d, cut);
        bad |= check_one(copy, cut, "truncation", cut, &ok, &refused);
        free(copy);
    }
    uint32_t seed = 12345;
    uint8_t *copy = malloc(n);
    for (int k = 0; k < 300; k++) {
        memcpy(copy, d, n);
        for (int j = 0; j < 1 + k % 4; j++) {
            seed = seed * 1664525u + 1013904223u;
            size_t at = (seed >> 8) % n;
            seed = seed * 1664525u + 1013904223u;
            copy[at] = (uint8_t)(seed >> 24);
        }
        bad |= check_one(copy, n, "mangled copy", (size_t)k, &ok, &refused);
    }
    free(copy);
    free(d);
    printf("%s: %d decoded, %d refused with one line\n", path, ok, refused);
    return bad;
}

/* Decodes path with lim into out_path; 0, or -1 with anv_last_error() set. */
static int decode_to(const char *path, const image_limits *lim, const char *out_path, int *w, int *h) {
    size_t n;
    char *d = anv_read_file(path, (size_t)1 << 30, &n);
    if (!d) return -1;
    anv_image img;
    int rc = image_decode(d, n, lim, &img);
    free(d);
    if (rc) return -1;
    FILE *f = fopen(out_path, "wb");
    const size_t px = (size_t)img.width * img.height;
    const int wrote = f && fwrite(img.rgb, 3, px, f) == px;
    if (f) fclose(f);
    *w = img.width;
    *h = img.height;
    image_free(&img);
    if (!wrote) { anv_set_error("image_dump: cannot write %s", out_path); return -1; }
    return 0;
}

static int serve(void) {
    char line[4096];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\r\n")] = 0;
        char *fields[4] = {line, NULL, NULL, NULL};
        for (int k = 1; k < 4 && fields[k - 1]; k++) {
            char *tab = strchr(fields[k - 1], '\t');
            if (tab) *tab = 0;
            fields[k] = tab ? tab + 1 : NULL;
        }
        if (!fields[3]) { printf("error image_dump: bad request line\n"); fflush(stdout); continue; }
        image_limits lim = image_limits_default();
        const unsigned long long max_bytes = strtoull(fields[2], NULL, 10);
        const long long max_pixels = strtoll(fields[3], NULL, 10);
        if (max_bytes) lim.max_bytes = (size_t)max_bytes;
        if (max_pixels) lim.max_pixels = max_pixels;
        int w = 0, h = 0;
        if (decode_to(fields[0], &lim, fields[1], &w, &h) == 0) printf("ok %d %d\n", w, h);
        else printf("error %s\n", anv_last_error());
        fflush(stdout);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "--serve")) return serve();
    if (argc >= 2 && !strcmp(argv[1], "--mangle")) {
        int bad = 0;
        for (int i = 2; i < argc; i++) bad |= mangle(argv[i]);
        return bad;
    }
    image_limits lim = image_limits_default();
    int i = 1;
    for (; i + 1 < argc && !strncmp(argv[i], "--max-", 6); i += 2) {
        if (!strcmp(argv[i], "--max-bytes")) lim.max_bytes = (size_t)strtoull(argv[i + 1], NULL, 10);
        else lim.max_pixels = strtoll(argv[i + 1], NULL, 10);
    }
    if (argc - i != 2) { fprintf(stderr, "usage: image_dump [--max-bytes N] [--max-pixels N] FILE OUT.rgb\n"); return 2; }
    size_t n;
    char *d = anv_read_file(argv[i], (size_t)1 << 30, &n);
    if (!d) { fprintf(stderr, "%s\n", anv_last_error()); return 2; }
    anv_image img;
    int rc = image_decode(d, n, &lim, &img);
    free(d);
    if (rc) { fprintf(stderr, "%s\n", anv_last_error()); return 1; }
    FILE *f = fopen(argv[i + 1], "wb");
    if (!f || fwrite(img.rgb, 3, (size_t)img.width * img.height, f) != (size_t)img.width * img.height) return 2;
    fclose(f);
    printf("%d %d\n", img.width, img.height);
    image_free(&img);
    return 0;
}
