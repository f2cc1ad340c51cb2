/* image_exif: the EXIF orientation tag (TIFF IFD0, tag 0x0112) and the eight rotations and
 * mirrorings it names, applied to decoded RGB pixels. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "image_internal.h"

static unsigned rd16(const uint8_t *p, int big) { return big ? (unsigned)p[0] << 8 | p[1] : (unsigned)p[1] << 8 | p[0]; }
static uint32_t rd32(const uint8_t *p, int big) {
    return big ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
               : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

int image_exif_orientation(const uint8_t *t, size_t n) {
    if (!t || n < 8) return 1;
    int big;
    if (!memcmp(t, "II*\0", 4)) big = 0;
    else if (!memcmp(t, "MM\0*", 4)) big = 1;
    else return 1;
    uint32_t ifd = rd32(t + 4, big);
    if (ifd > n || n - ifd < 2) return 1;
    unsigned count = rd16(t + ifd, big);
    for (unsigned i = 0; i < count; i++) {
        size_t at = (size_t)ifd + 2 + (size_t)i * 12;
        if (at + 12 > n) return 1;
        if (rd16(t + at, big) != 0x0112) continue;
        if (rd16(t + at + 2, big) != 3 /* SHORT */) return 1;
        unsigned v = rd16(t + at + 8, big);
        return v >= 1 && v <= 8 ? (int)v : 1;
    }
    return 1;
}

int image_apply_orientation(anv_image *img, int o) {
    if (o < 2 || o > 8) return 0;
    int w = img->width, h = img->height;
    int swap = o >= 5;
    int ow = swap ? h : w, oh = swap ? w : h;
    uint8_t *dst = malloc((size_t)w * (size_t)h * 3);
    if (!dst) { anv_set_error("image: out of memory applying the EXIF orientation"); return -1; }
    for (int y = 0; y < oh; y++) {
        for (int x = 0; x < ow; x++) {
            int sx, sy;
            switch (o) {
            case 2: sx = w - 1 - x; sy = y; break;              /* mirrored left-right */
            case 3: sx = w - 1 - x; sy = h - 1 - y; break;      /* rotated 180 */
            case 4: sx = x; sy = h - 1 - y; break;              /* mirrored top-bottom */
            case 5: sx = y; sy = x; break;                      /* transposed */
            case 6: sx = y; sy = h - 1 - x; break;              /* turned 90 degrees clockwise */
            case 7: sx = w - 1 - y; sy = h - 1 - x; break;      /* transversed */
            default: sx = w - 1 - y; sy = x; break;             /* 8: turned 90 degrees counter-clockwise */
            }
            memcpy(dst + ((size_t)y * ow + x) * 3, img->rgb + ((size_t)sy * w + sx) * 3, 3);
        }
    }
    free(img->rgb);
    img->rgb = dst;
    img->width = ow;
    img->height = oh;
    return 0;
}
