/* image: the entry point of image decoding. Checks the encoded size, picks the decoder from
 * the magic bytes, applies the EXIF orientation and hashes the encoded bytes (the cache key). */
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "error.h"
#include "image_internal.h"

image_limits image_limits_default(void) {
    image_limits l = {.max_bytes = (size_t)32 << 20, .max_pixels = 40000000};
    return l;
}

const char *image_format_name(const void *data, size_t size) {
    const uint8_t *d = data;
    if (!d) return NULL;
    if (size >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return "jpeg";
    if (size >= 8 && !memcmp(d, "\x89PNG\r\n\x1a\n", 8)) return "png";
    if (size >= 12 && !memcmp(d, "RIFF", 4) && !memcmp(d + 8, "WEBP", 4)) return "webp";
    if (size >= 6 && (!memcmp(d, "GIF87a", 6) || !memcmp(d, "GIF89a", 6))) return "gif";
    if (size >= 3 && d[0] == 'P' && d[1] == '6' && (d[2] == ' ' || d[2] == '\t' || d[2] == '\n' || d[2] == '\r'))
        return "ppm";
    return NULL;
}

uint8_t *image_alloc_rgb(const char *what, int64_t width, int64_t height, const image_limits *lim) {
    if (width <= 0 || height <= 0) {
        anv_set_error("image: %s has zero or negative dimensions (%lldx%lld)", what, (long long)width,
                      (long long)height);
        return NULL;
    }
    if (width > lim->max_pixels || height > lim->max_pixels || width * height > lim->max_pixels) {
        anv_set_error("image: %s is %lldx%lld pixels, over the limit of %lld pixels", what, (long long)width,
                      (long long)height, (long long)lim->max_pixels);
        return NULL;
    }
    uint8_t *rgb = malloc((size_t)width * (size_t)height * 3);
    if (!rgb) anv_set_error("image: out of memory for a %lldx%lld %s", (long long)width, (long long)height, what);
    return rgb;
}

static int hex_nibble(char c) { return c <= '9' ? c - '0' : c - 'a' + 10; }

int image_decode(const void *data, size_t size, const image_limits *lim, anv_image *out) {
    image_limits def = image_limits_default();
    if (!lim) lim = &def;
    memset(out, 0, sizeof *out);
    if (!data || size == 0) { anv_set_error("image: empty image (0 bytes)"); return -1; }
    if (size > lim->max_bytes) {
        anv_set_error("image: %zu bytes, over the limit of %zu bytes", size, lim->max_bytes);
        return -1;
    }
    const char *fmt = image_format_name(data, size);
    if (!fmt) {
        anv_set_error("image: unknown format (not JPEG, PNG, WebP, GIF or PPM by its first bytes)");
        return -1;
    }
    int orientation = 1, rc;
    if (!strcmp(fmt, "jpeg")) rc = image_decode_jpeg(data, size, lim, out, &orientation);
    else if (!strcmp(fmt, "png")) rc = image_decode_png(data, size, lim, out, &orientation);
    else if (!strcmp(fmt, "webp")) rc = image_decode_webp(data, size, lim, out);
    else if (!strcmp(fmt, "gif")) rc = image_decode_gif(data, size, lim, out);
    else rc = image_decode_ppm(data, size, lim, out);
    if (rc != 0 || (orientation != 1 && image_apply_orientation(out, orientation) != 0)) {
        image_free(out);
        return -1;
    }
    char hex[DIGEST_STR_LEN + 1];
    digest_bytes(data, size, hex);
    for (int i = 0; i < 32; i++) out->sha256[i] = (uint8_t)(hex_nibble(hex[7 + 2 * i]) << 4 | hex_nibble(hex[8 + 2 * i]));
    return 0;
}

void image_free(anv_image *img) {
    if (!img) return;
    free(img->rgb);
    memset(img, 0, sizeof *img);
}
