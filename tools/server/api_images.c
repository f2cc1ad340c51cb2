/* api_images: a request's images, from the JSON of each API to decoded pixels and the
 * markers in the prompt text (api_images.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_images.h"
#include "error.h"

void api_image_marker(int i, char out[API_IMAGE_MARKER_MAX]) { snprintf(out, API_IMAGE_MARKER_MAX, "[img-%d]", i); }

static int b64_value(unsigned char ch) {
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '+') return 62;
    if (ch == '/') return 63;
    return -1;
}

int api_image_base64(const char *s, uint8_t **out, size_t *n_out) {
    size_t len = strlen(s);
    uint8_t *o = malloc(len / 4 * 3 + 3);
    if (!o) return -2;
    size_t n = 0, pad = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '\r' || ch == '\n') continue;
        if (ch == '=') { pad++; continue; }
        int v = b64_value(ch);
        if (v < 0 || pad) { free(o); return -1; }
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            o[n++] = (uint8_t)(acc >> bits);
        }
    }
    if (pad > 2 || bits >= 6 || (acc & ((1u << bits) - 1))) { free(o); return -1; }
    *out = o;
    *n_out = n;
    return 0;
}

static int add_bytes(api_req *c, uint8_t *data, size_t size) {
    api_images *im = c->images;
    if (im->n == im->cap) {
        int cap = im->cap ? im->cap * 2 : 4;
        void *p = realloc(im->src, (size_t)cap * sizeof *im->src);
        if (!p) { free(data); aj_fail(c, 500, NULL, "out of memory"); return -1; }
        im->src = p;
        im->cap = cap;
    }
    im->src[im->n].data = data;
    im->src[im->n].size = size;
    return im->n++;
}

int api_images_add_base64(api_req *c, const char *b64, const char *field) {
    if (c->failed) return -1;
    if (!c->images) { aj_fail(c, 400, field, "image input is not supported in '%s'", field); return -1; }
    uint8_t *data;
    size_t size;
    int rc = api_image_base64(b64, &data, &size);
    if (rc == -2) { aj_fail(c, 500, NULL, "out of memory"); return -1; }
    if (rc < 0) { aj_fail(c, 400, field, "invalid image in '%s': not valid base64", field); return -1; }
    if (size == 0) { free(data); aj_fail(c, 400, field, "invalid image in '%s': empty", field); return -1; }
    return add_bytes(c, data, size);
}

const char *api_image_url_payload(const char *url, const char **why) {
    if (!strncmp(url, "http://", 7) || !strncmp(url, "https://", 8)) {
        *why = "image URLs are not supported: send the image as a base64 data URI";
        return NULL;
    }
    static const char *const prefixes[] = {"data:;base64,", "data:image/jpeg;base64,", "data:image/jpg;base64,",
                                           "data:image/png;base64,", "data:image/webp;base64,"};
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
        size_t k = strlen(prefixes[i]);
        if (!strncmp(url, prefixes[i], k)) return url + k;
    }
    *why = "invalid image: expected a data URI data:image/{jpeg,png,webp};base64,...";
    return NULL;
}

int api_images_add_url(api_req *c, const char *url, const char *field) {
    if (c->failed) return -1;
    if (!c->images) { aj_fail(c, 400, field, "image input is not supported in '%s'", field); return -1; }
    const char *why = NULL;
    const char *b64 = api_image_url_payload(url, &why);
    if (!b64) { aj_fail(c, 400, field, "%s ('%s')", why, field); return -1; }
    return api_images_add_base64(c, b64, field);
}

char *api_image_tag_text(const char *text, int first, int count) {
    bytebuf prefix = {0}, body = {0};
    bytebuf_add(&prefix, "", 0);
    bytebuf_add(&body, "", 0);
    const char *rest = text;
    for (int i = 0; i < count; i++) {
        char mk[API_IMAGE_MARKER_MAX];
        api_image_marker(first + i, mk);
        const char *at = strstr(rest, "[img]");
        if (!at) { bytebuf_add(&prefix, mk, strlen(mk)); continue; }
        bytebuf_add(&body, rest, (size_t)(at - rest));
        bytebuf_add(&body, mk, strlen(mk));
        rest = at + 5;
    }
    bytebuf_add(&body, rest, strlen(rest));
    bytebuf_add(&prefix, body.data, body.len);
    bool oom = body.oom || prefix.oom;
    bytebuf_free(&body);
    if (oom) { bytebuf_free(&prefix); return NULL; }
    return prefix.data;
}

char *api_images_tag(api_req *c, const char *text, int first, int count) {
    char *t = api_image_tag_text(text, first, count);
    if (!t) aj_fail(c, 500, NULL, "out of memory");
    return t;
}

char *api_images_to_marker(const char *text, const char *marker, int n_images, int *order, int *n_order) {
    *n_order = 0;
    bytebuf b = {0};
    bytebuf_add(&b, "", 0);
    const char *p = text;
    for (;;) {
        const char *at = strstr(p, "[img-");
        if (!at) break;
        char *end;
        long idx = strtol(at + 5, &end, 10);
        if (end == at + 5 || *end != ']' || at[5] == '-' || at[5] == '+' || at[5] == ' ') {   /* not a marker: keep it */
            bytebuf_add(&b, p, (size_t)(at + 5 - p));
            p = at + 5;
            continue;
        }
        if (idx >= n_images || *n_order >= n_images) {
            bytebuf_free(&b);
            anv_set_error("image marker [img-%ld] names no image (the prompt has %d)", idx, n_images);
            return NULL;
        }
        for (int k = 0; k < *n_order; k++)
            if (order[k] == idx) {
                bytebuf_free(&b);
                anv_set_error("image marker [img-%ld] appears twice", idx);
                return NULL;
            }
        order[(*n_order)++] = (int)idx;
        bytebuf_add(&b, p, (size_t)(at - p));
        bytebuf_add(&b, marker, strlen(marker));
        p = end + 1;
    }
    bytebuf_add(&b, p, strlen(p));
    if (*n_order != n_images) {
        bytebuf_free(&b);
        anv_set_error("%d image(s) but %d marker(s) in the prompt", n_images, *n_order);
        return NULL;
    }
    if (b.oom) { bytebuf_free(&b); anv_set_error("out of memory"); return NULL; }
    return b.data;
}

int api_images_decode_all(api_images *im, const image_limits *lim) {
    if (!im->decoded) im->decoded = calloc((size_t)(im->n ? im->n : 1), sizeof *im->decoded);
    if (!im->decoded) { anv_set_error("image: out of memory"); return 0; }
    for (int i = 0; i < im->n; i++)
        if (image_decode(im->src[i].data, im->src[i].size, lim, &im->decoded[i]) != 0) return i;
    return -1;
}

bool api_images_ready(api_req *c, api_images *im, const char *model, bool model_has_vision, const image_limits *lim) {
    if (c->failed) return false;
    if (!im || im->n == 0) return true;
    if (!model_has_vision) {
        aj_fail(c, 400, "images", "model '%s' does not support image input (it is a text-only model)", model);
        return false;
    }
    int bad = api_images_decode_all(im, lim);
    if (bad >= 0) aj_fail(c, 400, "images", "image %d: %s", bad, anv_last_error());
    return bad < 0;
}

void api_images_free(api_images *im) {
    if (!im) return;
    for (int i = 0; i < im->n; i++) {
        free(im->src[i].data);
        if (im->decoded) image_free(&im->decoded[i]);
    }
    free(im->src);
    free(im->decoded);
    memset(im, 0, sizeof *im);
}
