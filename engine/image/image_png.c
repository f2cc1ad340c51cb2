/* image_png: PNG through libpng: 1/2/4/8/16-bit gray, RGB, palette, with or without alpha,
 * interlaced or not, all to RGB8 the way stb_image does (16-bit keeps the high byte, alpha and
 * tRNS are dropped, low-bit gray scaled to 0..255). The EXIF orientation comes from eXIf. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>

#include "error.h"
#include "image_internal.h"

typedef struct {
    const uint8_t *data;
    size_t size, at;
    char msg[160];
} png_src;

static void on_read(png_structp png, png_bytep dst, size_t n) {
    png_src *s = png_get_io_ptr(png);
    if (n > s->size - s->at) png_error(png, "file ends early (truncated)");
    memcpy(dst, s->data + s->at, n);
    s->at += n;
}

static void on_error(png_structp png, png_const_charp msg) {
    png_src *s = png_get_error_ptr(png);
    snprintf(s->msg, sizeof s->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg) { (void)png; (void)msg; }

int image_decode_png(const uint8_t *data, size_t size, const image_limits *lim, anv_image *out, int *orientation) {
    png_src src = {.data = data, .size = size};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, on_error, on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        anv_set_error("image: out of memory starting the PNG decoder");
        return -1;
    }
    uint8_t *volatile rgb = NULL;
    png_bytep *volatile rows = NULL;
    if (setjmp(png_jmpbuf(png))) {
        anv_set_error("image: invalid PNG: %s", src.msg);
        png_destroy_read_struct(&png, &info, NULL);
        free(rgb);
        free(rows);
        return -1;
    }
    png_set_read_fn(png, &src, on_read);
    png_set_user_limits(png, 0x7fffffff, 0x7fffffff);   /* our own pixel limit is checked below */
    png_read_info(png, info);
    png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
    rgb = image_alloc_rgb("PNG", w, h, lim);
    if (!rgb) { png_destroy_read_struct(&png, &info, NULL); return -1; }
    png_bytep exif = NULL;
    png_uint_32 exif_len = 0;
#ifdef PNG_eXIf_SUPPORTED
    if (png_get_eXIf_1(png, info, &exif_len, &exif) && exif) *orientation = image_exif_orientation(exif, exif_len);
#endif
    if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (depth == 16) png_set_strip_16(png);
    if ((color & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS)) png_set_strip_alpha(png);
    if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_rowbytes(png, info) != (size_t)w * 3) png_error(png, "unexpected row size after conversion");
    rows = malloc((size_t)h * sizeof *rows);
    if (!rows) png_error(png, "out of memory");
    for (png_uint_32 y = 0; y < h; y++) rows[y] = rgb + (size_t)y * w * 3;
    png_read_image(png, rows);
    png_read_end(png, NULL);
    png_destroy_read_struct(&png, &info, NULL);
    free(rows);
    out->width = (int)w;
    out->height = (int)h;
    out->rgb = rgb;
    return 0;
}
