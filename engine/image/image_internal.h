/* image_internal: what the format decoders (image_jpeg.c, image_png.c, image_webp.c,
 * image_gif.c) and the EXIF orientation code (image_exif.c) share with image.c. */
#ifndef ANVIL_IMAGE_INTERNAL_H
#define ANVIL_IMAGE_INTERNAL_H
#include <stddef.h>
#include <stdint.h>
#include "image.h"

/* Each fills out->width, out->height, out->rgb (and *orientation, 1..8, where the format
 * carries EXIF), or returns -1 with anv_last_error() set ("image: ..."), out->rgb NULL. */
int image_decode_jpeg(const uint8_t *data, size_t size, const image_limits *lim, anv_image *out, int *orientation);
int image_decode_png(const uint8_t *data, size_t size, const image_limits *lim, anv_image *out, int *orientation);
int image_decode_webp(const uint8_t *data, size_t size, const image_limits *lim, anv_image *out);
int image_decode_gif(const uint8_t *data, size_t size, const image_limits *lim, anv_image *out);
int image_decode_ppm(const uint8_t *data, size_t size, const image_limits *lim, anv_image *out);

/* The RGB buffer for width x height after checking both are > 0 and their product is within
 * lim->max_pixels (what = "JPEG", ...: named in the error). NULL + anv_last_error(). */
uint8_t *image_alloc_rgb(const char *what, int64_t width, int64_t height, const image_limits *lim);

/* The orientation tag (0x0112) of an EXIF TIFF block (starting at "II*\0" or "MM\0*"), 1..8;
 * 1 for a missing, malformed or out-of-range tag. */
int image_exif_orientation(const uint8_t *tiff, size_t size);
/* Rewrites img to orientation 1 (a new buffer; width/height swap for 5..8). -1 on no memory. */
int image_apply_orientation(anv_image *img, int orientation);
#endif
