/* image: decodes one encoded image (JPEG, PNG, WebP, GIF's first frame, binary PPM) into RGB8 pixels with
 * the EXIF orientation applied, under limits on the encoded bytes and the decoded pixels that
 * are checked before the pixel buffer is allocated. The contract with engine/vision (the
 * encoders): an anv_image is what a vision encoder takes, and its sha256 (of the encoded bytes)
 * is the per-image embedding cache key. Depends on engine/base only. */
#ifndef ANVIL_IMAGE_H
#define ANVIL_IMAGE_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int width, height;
    uint8_t *rgb;          /* width*height*3 bytes, RGB8, rows top to bottom, EXIF orientation applied */
    uint8_t sha256[32];    /* of the encoded bytes: the per-image cache key */
} anv_image;

typedef struct {
    size_t max_bytes;      /* the encoded image's size */
    int64_t max_pixels;    /* width*height of the decoded image (and of a GIF's canvas) */
} image_limits;

/* 32 MiB encoded, 40 megapixels decoded (120 MB of RGB). */
image_limits image_limits_default(void);

/* Decodes data[0..size) (format from its magic bytes). lim NULL: the defaults. 0, or -1 with
 * anv_last_error() = one line "image: ..." naming the problem and *out zeroed. Alpha is
 * dropped (as llama.cpp's stb_image loader does for 3 channels); 16-bit samples keep their
 * high byte; palette and gray images come out as RGB; CMYK/YCCK JPEGs are converted. */
int image_decode(const void *data, size_t size, const image_limits *lim, anv_image *out);

void image_free(anv_image *img);

/* The format's name from the magic bytes ("jpeg", "png", "webp", "gif", "ppm"), or NULL. */
const char *image_format_name(const void *data, size_t size);
#endif
