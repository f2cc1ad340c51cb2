/* image_ppm: binary PPM (P6, 8-bit: maxval 255), which llama.cpp's loader (stb_image) also
 * reads and the vision tests use as their neutral format. Header: "P6", width, height and
 * maxval as decimal numbers separated by whitespace and '#' comments, one whitespace byte,
 * then width*height*3 bytes. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "image_internal.h"

static int is_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

/* The next header number at *at (skipping whitespace and comments); -1 when there is none or
 * it is over 1e9. */
static int64_t header_number(const uint8_t *d, size_t n, size_t *at) {
    for (;;) {
        while (*at < n && is_space(d[*at])) (*at)++;
        if (*at < n && d[*at] == '#') {
            while (*at < n && d[*at] != '\n') (*at)++;
            continue;
        }
        break;
    }
    int64_t v = 0;
    size_t start = *at;
    while (*at < n && d[*at] >= '0' && d[*at] <= '9') {
        v = v * 10 + (d[*at] - '0');
        if (v > 1000000000) return -1;
        (*at)++;
    }
    return *at > start ? v : -1;
}

int image_decode_ppm(const uint8_t *data, size_t size, const image_limits *lim, anv_image *out) {
    size_t at = 2;
    int64_t w = header_number(data, size, &at), h = header_number(data, size, &at);
    int64_t maxval = header_number(data, size, &at);
    if (w < 0 || h < 0 || maxval < 0 || at >= size || !is_space(data[at])) {
        anv_set_error("image: invalid PPM header");
        return -1;
    }
    if (maxval != 255) { anv_set_error("image: PPM with maxval %lld is not supported (only 8-bit, 255)", (long long)maxval); return -1; }
    at++;
    uint8_t *rgb = image_alloc_rgb("PPM", w, h, lim);
    if (!rgb) return -1;
    size_t need = (size_t)w * (size_t)h * 3;
    if (size - at < need) {
        free(rgb);
        anv_set_error("image: truncated PPM (%zu of %zu pixel bytes)", size - at, need);
        return -1;
    }
    memcpy(rgb, data + at, need);
    out->width = (int)w;
    out->height = (int)h;
    out->rgb = rgb;
    return 0;
}
