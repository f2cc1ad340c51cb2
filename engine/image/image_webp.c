/* image_webp: WebP (lossy and lossless, alpha dropped) through libwebp. Animated WebP is
 * refused with one line (its first frame can be smaller than the canvas). */
#include <stdlib.h>

#include <webp/decode.h>

#include "error.h"
#include "image_internal.h"

int image_decode_webp(const uint8_t *data, size_t size, const image_limits *lim, anv_image *out) {
    WebPBitstreamFeatures f;
    VP8StatusCode st = WebPGetFeatures(data, size, &f);
    if (st != VP8_STATUS_OK) {
        anv_set_error("image: invalid WebP (%s)", st == VP8_STATUS_NOT_ENOUGH_DATA ? "truncated header" : "bad header");
        return -1;
    }
    if (f.has_animation) { anv_set_error("image: animated WebP is not supported"); return -1; }
    uint8_t *rgb = image_alloc_rgb("WebP", f.width, f.height, lim);
    if (!rgb) return -1;
    size_t stride = (size_t)f.width * 3;
    if (!WebPDecodeRGBInto(data, size, rgb, stride * (size_t)f.height, (int)stride)) {
        free(rgb);
        anv_set_error("image: truncated or corrupt WebP image data");
        return -1;
    }
    out->width = f.width;
    out->height = f.height;
    out->rgb = rgb;
    return 0;
}
