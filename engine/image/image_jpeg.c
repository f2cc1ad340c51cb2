/* image_jpeg: JPEG through libjpeg(-turbo): baseline and progressive, grayscale, YCbCr, and
 * CMYK/YCCK converted to RGB the way stb_image does (Adobe-inverted ink times K). Errors and
 * the warnings that mean lost data (truncation, corrupt entropy data) end in one line; the
 * EXIF orientation comes from the APP1 "Exif" marker. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>

#include "error.h"
#include "image_internal.h"

#define JPEG_MAX_SCANS 1000   /* a progressive file with more scans is a CPU bomb */

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    char msg[JMSG_LENGTH_MAX];
    int data_lost;            /* a warning that means the pixels are incomplete or wrong */
} jpeg_err;

typedef struct {
    struct jpeg_progress_mgr pub;
    j_decompress_ptr cinfo;
} jpeg_progress;

static void on_error(j_common_ptr cinfo) {
    jpeg_err *e = (jpeg_err *)cinfo->err;
    e->pub.format_message(cinfo, e->msg);
    longjmp(e->jump, 1);
}

static void on_message(j_common_ptr cinfo, int level) {
    jpeg_err *e = (jpeg_err *)cinfo->err;
    if (level >= 0) return;   /* trace messages */
    int code = e->pub.msg_code;
    if (code == JWRN_JPEG_EOF || code == JWRN_HIT_MARKER || code == JWRN_HUFF_BAD_CODE || code == JWRN_MUST_RESYNC ||
        code == JWRN_BOGUS_PROGRESSION || code == JWRN_NOT_SEQUENTIAL) {
        if (!e->data_lost) e->pub.format_message(cinfo, e->msg);
        e->data_lost = 1;
    }
}

static void on_progress(j_common_ptr cinfo) {
    jpeg_progress *p = (jpeg_progress *)cinfo->progress;
    if (p->cinfo->input_scan_number > JPEG_MAX_SCANS) {
        jpeg_err *e = (jpeg_err *)cinfo->err;
        snprintf(e->msg, sizeof e->msg, "more than %d progressive scans", JPEG_MAX_SCANS);
        longjmp(e->jump, 1);
    }
}

static int exif_orientation_of(j_decompress_ptr cinfo) {
    for (jpeg_saved_marker_ptr m = cinfo->marker_list; m; m = m->next)
        if (m->marker == JPEG_APP0 + 1 && m->data_length > 6 && !memcmp(m->data, "Exif\0\0", 6))
            return image_exif_orientation(m->data + 6, m->data_length - 6);
    return 1;
}

static uint8_t ink(unsigned x, unsigned k) {   /* stb_image's blinn_8x8: x*k/255 rounded */
    unsigned t = x * k + 128;
    return (uint8_t)((t + (t >> 8)) >> 8);
}

int image_decode_jpeg(const uint8_t *data, size_t size, const image_limits *lim, anv_image *out, int *orientation) {
    struct jpeg_decompress_struct cinfo;
    jpeg_err err;
    jpeg_progress prog;
    memset(&cinfo, 0, sizeof cinfo);
    memset(&err, 0, sizeof err);
    /* volatile: changed between setjmp and a longjmp back to it */
    uint8_t *volatile rgb = NULL;
    JSAMPLE *volatile row = NULL;
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = on_error;
    err.pub.emit_message = on_message;
    if (setjmp(err.jump)) {
        anv_set_error("image: invalid JPEG: %s", err.msg);
        jpeg_destroy_decompress(&cinfo);
        free(rgb);
        free(row);
        return -1;
    }
    jpeg_create_decompress(&cinfo);
    prog.pub.progress_monitor = on_progress;
    prog.cinfo = &cinfo;
    cinfo.progress = &prog.pub;
    jpeg_mem_src(&cinfo, data, (unsigned long)size);
    jpeg_save_markers(&cinfo, JPEG_APP0 + 1, 0xFFFF);
    jpeg_read_header(&cinfo, TRUE);
    int cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
    if (cinfo.num_components != 1 && cinfo.num_components != 3 && !cmyk) {
        anv_set_error("image: unsupported JPEG with %d color components", cinfo.num_components);
        jpeg_destroy_decompress(&cinfo);
        return -1;
    }
    cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
    rgb = image_alloc_rgb("JPEG", cinfo.image_width, cinfo.image_height, lim);
    if (!rgb) { jpeg_destroy_decompress(&cinfo); return -1; }
    *orientation = exif_orientation_of(&cinfo);
    jpeg_start_decompress(&cinfo);
    int w = (int)cinfo.output_width, h = (int)cinfo.output_height;
    row = malloc((size_t)w * 4);
    if (!row) longjmp(err.jump, 1);
    while ((int)cinfo.output_scanline < h) {
        uint8_t *dst = rgb + (size_t)cinfo.output_scanline * w * 3;
        JSAMPROW rows[1] = {cmyk ? row : dst};
        if (jpeg_read_scanlines(&cinfo, rows, 1) != 1) break;
        if (cmyk)
            for (int x = 0; x < w; x++) {
                const uint8_t *p = row + x * 4;
                dst[x * 3 + 0] = ink(p[0], p[3]);
                dst[x * 3 + 1] = ink(p[1], p[3]);
                dst[x * 3 + 2] = ink(p[2], p[3]);
            }
        if (err.data_lost) break;
    }
    if (!err.data_lost && (int)cinfo.output_scanline == h) jpeg_finish_decompress(&cinfo);
    if (err.data_lost || (int)cinfo.output_scanline != h) {
        anv_set_error("image: truncated or corrupt JPEG: %s", err.data_lost ? err.msg : "missing rows");
        jpeg_destroy_decompress(&cinfo);
        free(rgb);
        free(row);
        return -1;
    }
    jpeg_destroy_decompress(&cinfo);
    free(row);
    out->width = w;
    out->height = h;
    out->rgb = rgb;
    return 0;
}
