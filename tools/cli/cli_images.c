/* cli_images: image files named in a prompt, by Ollama's CLI rules (cli_images.h). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bytebuf.h"
#include "cli_images.h"
#include "error.h"
#include "image.h"

#define CLI_IMAGE_MAX_BYTES ((size_t)100 << 20)   /* Ollama's getImageData limit */

/* Ollama's pattern less ".wav" (no audio here): an optional drive letter, then "./", "/" or
 * "\", then the shortest run of non-space characters, backslashes and spaces up to an image
 * extension at a word boundary. */
static const char PATTERN[] = "(?:[a-zA-Z]:)?(?:\\./|/|\\\\)[\\S\\\\ ]+?\\.(?i:jpg|jpeg|png|webp)\\b";

char **cli_image_names(const char *input, int *n_out) {
    *n_out = 0;
    int err;
    PCRE2_SIZE err_at;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)PATTERN, PCRE2_ZERO_TERMINATED, 0, &err, &err_at, NULL);
    if (!re) return NULL;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    char **names = NULL;
    int n = 0;
    size_t len = strlen(input), at = 0;
    while (md && at <= len && pcre2_match(re, (PCRE2_SPTR)input, len, at, 0, md, NULL) >= 0) {
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        char **grown = realloc(names, (size_t)(n + 1) * sizeof *names);
        if (!grown) break;
        names = grown;
        names[n] = strndup(input + ov[0], ov[1] - ov[0]);
        if (!names[n]) break;
        n++;
        at = ov[1] > ov[0] ? ov[1] : ov[0] + 1;
    }
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    *n_out = n;
    return names;
}

static void free_names(char **names, int n) {
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

bool cli_line_names_image(const char *line, const char *word) {
    int n;
    char **names = cli_image_names(line, &n);
    bool found = false;
    for (int i = 0; i < n && !found; i++) found = !strncmp(names[i], word, strlen(word));
    free_names(names, n);
    return found;
}

/* Ollama's normalizeFilePath: "\ " "\(" "\)" "\[" "\]" "\{" "\}" "\$" "\&" "\;" "\'" "\\" "\*"
 * "\?" "\~" lose their backslash (one pass, left to right). */
static char *unescape_path(const char *p) {
    char *out = malloc(strlen(p) + 1), *o = out;
    if (!out) return NULL;
    while (*p) {
        if (p[0] == '\\' && p[1] && strchr(" ()[]{}$&;'\\*?~", p[1])) { *o++ = p[1]; p += 2; }
        else *o++ = *p++;
    }
    *o = 0;
    return out;
}

/* Removes every occurrence of what from the text in b. */
static void remove_all(bytebuf *b, const char *what) {
    size_t k = strlen(what);
    if (!k || !b->data) return;
    char *at;
    while ((at = strstr(b->data, what))) {
        memmove(at, at + k, strlen(at + k) + 1);
        b->len -= k;
    }
}

/* 1 read, 0 no such file, -1 + error. */
static int read_image(const char *path, uint8_t **data, size_t *size) {
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) return 0;
        anv_set_error("couldn't process file '%s': %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) { anv_set_error("couldn't process file '%s': not a regular file", path); return -1; }
    if ((uint64_t)st.st_size > CLI_IMAGE_MAX_BYTES) {
        anv_set_error("couldn't process file '%s': file size exceeds maximum limit (100MB)", path);
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (!f) { anv_set_error("couldn't process file '%s': %s", path, strerror(errno)); return -1; }
    size_t n = (size_t)st.st_size;
    uint8_t *buf = malloc(n ? n : 1);
    size_t got = buf ? fread(buf, 1, n, f) : 0;
    fclose(f);
    if (!buf || got != n) { free(buf); anv_set_error("couldn't process file '%s': read failed", path); return -1; }
    if (!image_format_name(buf, n)) {
        free(buf);
        anv_set_error("couldn't process file '%s': not a JPEG, PNG, WebP or GIF image", path);
        return -1;
    }
    *data = buf;
    *size = n;
    return 1;
}

char *cli_images_extract(const char *input, cli_images *out) {
    memset(out, 0, sizeof *out);
    int n;
    char **names = cli_image_names(input, &n);
    bytebuf text = {0};
    bytebuf_add(&text, input, strlen(input));
    bool ok = !text.oom;
    for (int i = 0; ok && i < n; i++) {
        char *path = unescape_path(names[i]);
        if (!path) { anv_set_error("out of memory"); ok = false; break; }
        uint8_t *data = NULL;
        size_t size = 0;
        int rc = read_image(path, &data, &size);
        if (rc < 0) ok = false;
        if (rc == 1) {
            struct cli_image_file *grown = realloc(out->files, (size_t)(out->n + 1) * sizeof *grown);
            if (!grown) { free(data); free(path); anv_set_error("out of memory"); ok = false; break; }
            out->files = grown;
            out->files[out->n++] = (struct cli_image_file){.path = path, .data = data, .size = size};
            /* as Ollama: the quoted unescaped path, the quoted path as typed, then the path as typed */
            size_t k = strlen(names[i]) > strlen(path) ? strlen(names[i]) : strlen(path);
            char *quoted = malloc(k + 3);
            if (quoted) {
                snprintf(quoted, k + 3, "'%s'", path);
                remove_all(&text, quoted);
                snprintf(quoted, k + 3, "'%s'", names[i]);
                remove_all(&text, quoted);
                free(quoted);
            }
            remove_all(&text, names[i]);
            continue;
        }
        free(path);
    }
    free_names(names, n);
    if (!ok) { bytebuf_free(&text); cli_images_free(out); return NULL; }
    /* strings.TrimSpace */
    const char *s = text.data;
    size_t len = text.len;
    while (len && strchr(" \t\r\n\v\f", *s)) { s++; len--; }
    while (len && strchr(" \t\r\n\v\f", s[len - 1])) len--;
    char *res = strndup(s, len);
    bytebuf_free(&text);
    if (!res) { anv_set_error("out of memory"); cli_images_free(out); }
    return res;
}

void cli_images_free(cli_images *im) {
    for (int i = 0; i < im->n; i++) {
        free(im->files[i].path);
        free(im->files[i].data);
    }
    free(im->files);
    memset(im, 0, sizeof *im);
}
