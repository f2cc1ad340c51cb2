/* vision_resize: the image preprocessing of llama.cpp's mtmd for the fixed-size projectors:
 * Pillow's separable resampling (bilinear, bicubic a = -0.5) in 22-bit fixed point, and the
 * aspect-preserving resize onto a padded square (PAD_CEIL). Pixel-exact with llama.cpp's
 * img_tool::resize; host code, RGB8 in and out. */
#include "vision_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

#define PRECISION_BITS (32 - 8 - 2)

static double filter_weight(vision_resize_algo algo, double x) {
    if (x < 0.0) x = -x;
    if (algo == VISION_RESIZE_BILINEAR) return x < 1.0 ? 1.0 - x : 0.0;
    const double a = -0.5;   /* Pillow's bicubic */
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}

/* Per output pixel: the first input pixel, their count, ksize fixed-point weights. */
typedef struct { int ksize; int *bounds; int32_t *weights; } resample_plan;

static int plan_new(resample_plan *p, vision_resize_algo algo, int in_size, int out_size) {
    const double support_unit = algo == VISION_RESIZE_BILINEAR ? 1.0 : 2.0;
    double scale = (double)in_size / out_size, filterscale = scale < 1.0 ? 1.0 : scale;
    const double support = support_unit * filterscale;
    p->ksize = (int)ceil(support) * 2 + 1;
    p->bounds = malloc((size_t)out_size * 2 * sizeof(int));
    p->weights = malloc((size_t)out_size * (size_t)p->ksize * sizeof(int32_t));
    double *w = malloc((size_t)p->ksize * sizeof(double));
    if (!p->bounds || !p->weights || !w) { free(w); anv_set_error("out of memory"); return -1; }
    for (int xx = 0; xx < out_size; xx++) {
        const double center = (xx + 0.5) * scale, ss = 1.0 / filterscale;
        int xmin = (int)(center - support + 0.5), xmax = (int)(center + support + 0.5);
        if (xmin < 0) xmin = 0;
        if (xmax > in_size) xmax = in_size;
        xmax -= xmin;
        double ww = 0.0;
        int x = 0;
        for (; x < xmax; x++) { w[x] = filter_weight(algo, (x + xmin - center + 0.5) * ss); ww += w[x]; }
        for (x = 0; x < xmax; x++)
            if (ww != 0.0) w[x] /= ww;
        for (; x < p->ksize; x++) w[x] = 0;
        p->bounds[xx * 2] = xmin;
        p->bounds[xx * 2 + 1] = xmax;
        for (x = 0; x < p->ksize; x++) {
            const double r = w[x] * (double)(1 << PRECISION_BITS) + (w[x] < 0 ? -0.5 : 0.5);
            p->weights[(size_t)xx * p->ksize + x] = (int32_t)r;
        }
    }
    free(w);
    return 0;
}

static void plan_free(resample_plan *p) { free(p->bounds); free(p->weights); }

static uint8_t clip8(int32_t v) { return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v; }

/* One pass along x (horizontal) or y (vertical) of an RGB8 image. */
static void resample_h(const uint8_t *src, int in_w, int h, uint8_t *dst, int out_w, const resample_plan *p) {
    for (int y = 0; y < h; y++) {
        const uint8_t *row = src + (size_t)y * in_w * 3;
        for (int xx = 0; xx < out_w; xx++) {
            const int xmin = p->bounds[xx * 2], cnt = p->bounds[xx * 2 + 1];
            const int32_t *k = p->weights + (size_t)xx * p->ksize;
            int32_t s[3] = {1 << (PRECISION_BITS - 1), 1 << (PRECISION_BITS - 1), 1 << (PRECISION_BITS - 1)};
            for (int x = 0; x < cnt; x++)
                for (int c = 0; c < 3; c++) s[c] += row[(size_t)(xmin + x) * 3 + c] * k[x];
            for (int c = 0; c < 3; c++) dst[((size_t)y * out_w + xx) * 3 + c] = clip8(s[c] >> PRECISION_BITS);
        }
    }
}

static void resample_v(const uint8_t *src, int w, uint8_t *dst, int out_h, const resample_plan *p) {
    const size_t n = (size_t)w * 3;
    for (int yy = 0; yy < out_h; yy++) {
        const int ymin = p->bounds[yy * 2], cnt = p->bounds[yy * 2 + 1];
        const int32_t *k = p->weights + (size_t)yy * p->ksize;
        for (size_t i = 0; i < n; i++) {
            int32_t s = 1 << (PRECISION_BITS - 1);
            for (int y = 0; y < cnt; y++) s += src[(size_t)(ymin + y) * n + i] * k[y];
            dst[(size_t)yy * n + i] = clip8(s >> PRECISION_BITS);
        }
    }
}

int vision_resample(const uint8_t *src, int w, int h, uint8_t *dst, int out_w, int out_h, vision_resize_algo algo) {
    if (w == out_w && h == out_h) { memcpy(dst, src, (size_t)w * h * 3); return 0; }
    resample_plan ph = {0}, pv = {0};
    uint8_t *tmp = NULL;
    int rc = -1;
    const bool need_h = out_w != w, need_v = out_h != h;
    if (need_h && plan_new(&ph, algo, w, out_w) != 0) goto done;
    if (need_v && plan_new(&pv, algo, h, out_h) != 0) goto done;
    if (need_h && need_v) {
        if (!(tmp = malloc((size_t)out_w * h * 3))) { anv_set_error("out of memory"); goto done; }
        resample_h(src, w, h, tmp, out_w, &ph);
        resample_v(tmp, out_w, dst, out_h, &pv);
    } else if (need_h) {
        resample_h(src, w, h, dst, out_w, &ph);
    } else {
        resample_v(src, w, dst, out_h, &pv);
    }
    rc = 0;
done:
    plan_free(&ph);
    plan_free(&pv);
    free(tmp);
    return rc;
}

int vision_resize_padded(const uint8_t *src, int w, int h, uint8_t *dst, int size, vision_resize_algo algo, const uint8_t pad[3]) {
    return vision_resize_padded_wh(src, w, h, dst, size, size, algo, pad);
}

int vision_resize_padded_wh(const uint8_t *src, int w, int h, uint8_t *dst, int tw, int th, vision_resize_algo algo, const uint8_t pad[3]) {
    if (w == tw && h == th) { memcpy(dst, src, (size_t)w * h * 3); return 0; }
    /* llama.cpp's PAD_CEIL: the float scale of the tighter side, sides rounded up */
    const float sw = (float)tw / (float)w, sh = (float)th / (float)h, s = sw < sh ? sw : sh;
    int nw = (int)ceilf((float)w * s), nh = (int)ceilf((float)h * s);
    if (nw > tw) nw = tw;
    if (nh > th) nh = th;
    if (nw < 1) nw = 1;
    if (nh < 1) nh = 1;
    uint8_t *tmp = malloc((size_t)nw * nh * 3);
    if (!tmp) { anv_set_error("out of memory"); return -1; }
    if (vision_resample(src, w, h, tmp, nw, nh, algo) != 0) { free(tmp); return -1; }
    for (size_t i = 0; i < (size_t)tw * th; i++) memcpy(dst + i * 3, pad, 3);
    const int ox = (tw - nw) / 2, oy = (th - nh) / 2;
    for (int y = 0; y < nh; y++) memcpy(dst + ((size_t)(y + oy) * tw + ox) * 3, tmp + (size_t)y * nw * 3, (size_t)nw * 3);
    free(tmp);
    return 0;
}

/* clip.cpp's calc_size_preserved_ratio (float arithmetic as there): the dyn_size target. */
void vision_dyn_size(int f, int64_t min_pixels, int64_t max_pixels, int width, int height, int *ow, int *oh) {
#define ROUND_BY(x) ((int)roundf((x) / (float)f) * f)
#define CEIL_BY(x) ((int)ceilf((x) / (float)f) * f)
#define FLOOR_BY(x) ((int)floorf((x) / (float)f) * f)
    int w = ROUND_BY((float)width), h = ROUND_BY((float)height);
    if (w < f) w = f;
    if (h < f) h = f;
    if ((int64_t)h * w > max_pixels) {
        const float beta = sqrtf((float)height * (float)width / (float)max_pixels);
        h = FLOOR_BY((float)height / beta);
        w = FLOOR_BY((float)width / beta);
        if (h < f) h = f;
        if (w < f) w = f;
    } else if ((int64_t)h * w < min_pixels) {
        const float beta = sqrtf((float)min_pixels / ((float)height * (float)width));
        h = CEIL_BY((float)height * beta);
        w = CEIL_BY((float)width * beta);
    }
#undef ROUND_BY
#undef CEIL_BY
#undef FLOOR_BY
    *ow = w;
    *oh = h;
}
