/* image_gif: a GIF's first frame through giflib, painted the way stb_image paints it: on a
 * black canvas of the logical screen size, pixels the frame does not cover get the background
 * colour (when its index is > 0), transparent pixels stay black. Reads records only up to the
 * first image, so a file with many frames costs no more than one. */
#include <stdlib.h>
#include <string.h>

#include <gif_lib.h>

#include "error.h"
#include "image_internal.h"

typedef struct {
    const uint8_t *data;
    size_t size, at;
} gif_src;

static int on_read(GifFileType *g, GifByteType *dst, int n) {
    gif_src *s = g->UserData;
    size_t k = n < 0 ? 0 : (size_t)n;
    if (k > s->size - s->at) k = s->size - s->at;
    memcpy(dst, s->data + s->at, k);
    s->at += k;
    return (int)k;
}

static int fail(GifFileType *g, const char *what, int code) {
    const char *why = GifErrorString(code);
    anv_set_error("image: invalid GIF: %s (%s)", what, why ? why : "unknown error");
    if (g) DGifCloseFile(g, NULL);
    return -1;
}

int image_decode_gif(const uint8_t *data, size_t size, const image_limits *lim, anv_image *out) {
    gif_src src = {.data = data, .size = size};
    int code = 0;
    GifFileType *g = DGifOpen(&src, on_read, &code);
    if (!g) return fail(NULL, "header", code);
    int transparent = -1;
    for (;;) {
        GifRecordType rec;
        if (DGifGetRecordType(g, &rec) == GIF_ERROR) return fail(g, "record", g->Error);
        if (rec == TERMINATE_RECORD_TYPE) {
            DGifCloseFile(g, NULL);
            anv_set_error("image: GIF has no image frame");
            return -1;
        }
        if (rec == EXTENSION_RECORD_TYPE) {
            int ext_code;
            GifByteType *ext;
            if (DGifGetExtension(g, &ext_code, &ext) == GIF_ERROR) return fail(g, "extension", g->Error);
            if (ext_code == GRAPHICS_EXT_FUNC_CODE && ext && ext[0] >= 4)
                transparent = (ext[1] & 1) ? ext[4] : -1;
            while (ext)
                if (DGifGetExtensionNext(g, &ext) == GIF_ERROR) return fail(g, "extension", g->Error);
            continue;
        }
        if (rec != IMAGE_DESC_RECORD_TYPE) continue;
        if (DGifGetImageDesc(g) == GIF_ERROR) return fail(g, "image descriptor", g->Error);
        break;
    }
    int W = g->SWidth, H = g->SHeight;
    GifImageDesc *d = &g->Image;
    uint8_t *rgb = image_alloc_rgb("GIF", W, H, lim);
    if (!rgb) { DGifCloseFile(g, NULL); return -1; }
    ColorMapObject *cmap = d->ColorMap ? d->ColorMap : g->SColorMap;
    if (!cmap || d->Width <= 0 || d->Height <= 0 || (int64_t)d->Width * d->Height > lim->max_pixels) {
        free(rgb);
        DGifCloseFile(g, NULL);
        anv_set_error(cmap ? "image: GIF frame has bad dimensions" : "image: GIF has no color table");
        return -1;
    }
    uint8_t *drawn = calloc((size_t)W * H, 1);
    GifPixelType *line = malloc((size_t)d->Width);
    if (!drawn || !line) {
        free(rgb); free(drawn); free(line);
        DGifCloseFile(g, NULL);
        anv_set_error("image: out of memory decoding a GIF");
        return -1;
    }
    memset(rgb, 0, (size_t)W * H * 3);
    static const int pass_start[4] = {0, 4, 2, 1}, pass_step[4] = {8, 8, 4, 2};
    int passes = d->Interlace ? 4 : 1;
    for (int p = 0; p < passes; p++) {
        int y0 = d->Interlace ? pass_start[p] : 0, step = d->Interlace ? pass_step[p] : 1;
        for (int y = y0; y < d->Height; y += step) {
            if (DGifGetLine(g, line, d->Width) == GIF_ERROR) {
                free(rgb); free(drawn); free(line);
                return fail(g, "image data", g->Error);
            }
            int cy = d->Top + y;
            if (cy < 0 || cy >= H) continue;
            for (int x = 0; x < d->Width; x++) {
                int cx = d->Left + x;
                if (cx < 0 || cx >= W) continue;
                drawn[(size_t)cy * W + cx] = 1;
                int idx = line[x];
                if (idx == transparent || idx >= cmap->ColorCount) continue;
                GifColorType c = cmap->Colors[idx];
                uint8_t *o = rgb + ((size_t)cy * W + cx) * 3;
                o[0] = c.Red; o[1] = c.Green; o[2] = c.Blue;
            }
        }
    }
    int bg = g->SBackGroundColor;
    if (bg > 0 && g->SColorMap && bg < g->SColorMap->ColorCount) {
        GifColorType c = g->SColorMap->Colors[bg];
        for (size_t i = 0; i < (size_t)W * H; i++)
            if (!drawn[i]) { rgb[i * 3] = c.Red; rgb[i * 3 + 1] = c.Green; rgb[i * 3 + 2] = c.Blue; }
    }
    free(drawn);
    free(line);
    DGifCloseFile(g, NULL);
    out->width = W;
    out->height = H;
    out->rgb = rgb;
    return 0;
}
