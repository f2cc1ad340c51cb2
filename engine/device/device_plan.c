/* device_plan: placement of a model's layers on the devices device_list_select() chose.
 * The CPU keeps the first layers, the GPUs the last ones (with the output head), split in
 * proportion to free memory or by a --tensor-split override; with n_gpu_layers = -1 as
 * many layers as fit go to the GPUs. Writes the placement log: one line per device that
 * holds something, and one per device not used with the reason. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "device.h"
#include "error.h"

static uint64_t layer_bytes(const device_plan_request *r, int il) {
    return r->layer_weight_bytes[il] + (r->layer_kv_bytes ? r->layer_kv_bytes[il] : 0);
}

/* Splits layers [first, n_layer) over n_g GPUs by weights w: GPU g gets [b[g], b[g+1]). */
static void split_layers(int first, int n_layer, const double *w, int n_g, int *b) {
    double total = 0;
    for (int g = 0; g < n_g; g++) total += w[g];
    int n = n_layer - first;
    double cum = 0;
    b[0] = first;
    for (int g = 0; g < n_g; g++) {
        cum += w[g];
        int end = g == n_g - 1 ? n_layer : first + (int)(n * (cum / total) + 0.5);
        if (end < b[g]) end = b[g];
        if (end > n_layer) end = n_layer;
        b[g + 1] = end;
    }
}

/* Bytes GPU g needs for layers [b0, b1): weights + KV, scratch, and the head if it holds the last layer. */
static uint64_t gpu_need(const device_plan_request *r, int b0, int b1) {
    if (b1 <= b0) return 0;
    uint64_t s = r->compute_bytes;
    for (int il = b0; il < b1; il++) s += layer_bytes(r, il);
    if (b1 == r->n_layer) s += r->output_bytes;
    return s;
}

static void range_text(char *out, size_t out_len, int b0, int b1) {
    if (b1 - b0 == 1) snprintf(out, out_len, "layer %d", b0);
    else snprintf(out, out_len, "layers %d-%d", b0, b1 - 1);
}

static void entry_fill(device_plan_entry *e, const device_list *l, int dev, const device_plan_request *r, int b0, int b1, bool gpu) {
    memset(e, 0, sizeof *e);
    e->device = dev;
    e->layer_begin = b0;
    e->layer_end = b1;
    e->has_output = b1 == r->n_layer && b1 > b0;
    for (int il = b0; il < b1; il++) {
        e->weight_bytes += r->layer_weight_bytes[il];
        e->kv_bytes += r->layer_kv_bytes ? r->layer_kv_bytes[il] : 0;
    }
    if (e->has_output) e->weight_bytes += r->output_bytes;
    /* a tied head on the CPU reads the embedding table itself: counted once */
    if (e->has_output && !gpu && r->output_tied_bytes) e->weight_bytes -= r->output_tied_bytes;
    if (!gpu) e->weight_bytes += r->cpu_bytes;
    if (gpu && b1 > b0) e->compute_bytes = r->compute_bytes;
    char what[96] = "", w[32], kv[32];
    if (b1 > b0) range_text(what, sizeof what, b0, b1);
    if (e->has_output) strncat(what, " + output", sizeof what - strlen(what) - 1);
    if (!gpu && r->cpu_bytes) strncat(what, what[0] ? " + embeddings" : "embeddings", sizeof what - strlen(what) - 1);
    dev_format_bytes(e->weight_bytes, w, sizeof w);
    dev_format_bytes(e->kv_bytes, kv, sizeof kv);
    const dev_info *d = &l->dev[dev];
    dev_fmt(e->line, sizeof e->line, "%s (%s): %s, %s weights, %s KV", d->id, d->desc, what, w, kv);
}

static void plan_note(device_plan *p, const char *fmt, ...) ANV_PRINTF(2, 3);
static void plan_note(device_plan *p, const char *fmt, ...) {
    if (p->n_notes >= DEVICE_MAX) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->notes[p->n_notes++], sizeof p->notes[0], fmt, ap);
    va_end(ap);
}

int device_plan_make(const device_list *l, const device_plan_request *r, device_plan *out) {
    memset(out, 0, sizeof *out);
    if (!l || !l->selected) { anv_set_error("device_plan_make: the device list has not been selected"); return -1; }
    if (!r || r->n_layer <= 0 || !r->layer_weight_bytes) { anv_set_error("device_plan_make: no layers to place"); return -1; }
    if (r->n_gpu_layers < -1) {
        anv_set_error("-ngl %d: use 0..%d layers, or -1 for as many as fit", r->n_gpu_layers, r->n_layer);
        return -1;
    }
    /* -ngl N above the layer count means every layer (llama.cpp's and Ollama's -ngl 99/999) */
    device_plan_request clamped = *r;
    if (clamped.n_gpu_layers > clamped.n_layer) clamped.n_gpu_layers = clamped.n_layer;
    r = &clamped;
    int gpus[DEVICE_MAX];
    int n_g = device_list_used_gpus(l, gpus, DEVICE_MAX);
    int cpu = device_list_find(l, "cpu");
    if (cpu < 0) { anv_set_error("device_plan_make: the device list has no CPU"); return -1; }

    double w[DEVICE_MAX];
    int64_t reserve = r->reserve_bytes < 0 ? (int64_t)DEVICE_DEFAULT_RESERVE : r->reserve_bytes;
    if (n_g > 0 && r->tensor_split) {
        float ts[DEVICE_MAX];
        int n = device_parse_split("--tensor-split", r->tensor_split, ts, DEVICE_MAX);
        if (n < 0) return -1;
        if (n != n_g) {
            char ids[200] = "";
            for (int g = 0; g < n_g; g++) { strncat(ids, g ? ", " : "", sizeof ids - strlen(ids) - 1); strncat(ids, l->dev[gpus[g]].id, sizeof ids - strlen(ids) - 1); }
            anv_set_error("--tensor-split=%s: %d values for %d GPU%s in use (%s)", r->tensor_split, n, n_g, n_g == 1 ? "" : "s", ids);
            return -1;
        }
        for (int g = 0; g < n_g; g++) w[g] = ts[g];
    } else {
        bool any = false;
        for (int g = 0; g < n_g; g++) {
            int64_t avail = (int64_t)l->dev[gpus[g]].mem_free - reserve - (int64_t)r->compute_bytes;
            w[g] = avail > 0 ? (double)avail : 0;
            any |= avail > 0;
        }
        if (!any) for (int g = 0; g < n_g; g++) w[g] = 1;
    }

    int want = r->n_gpu_layers < 0 ? r->n_layer : r->n_gpu_layers;
    if (n_g == 0) want = 0;
    int b[DEVICE_MAX + 1];
    int n_gpu = 0;
    int bad_g = -1;
    uint64_t bad_need = 0;
    for (int n = want; n >= (r->n_gpu_layers < 0 ? 0 : want); n--) {
        split_layers(r->n_layer - n, r->n_layer, w, n_g, b);
        bool fits = true;
        for (int g = 0; g < n_g && fits; g++) {
            uint64_t need = gpu_need(r, b[g], b[g + 1]);
            int64_t cap = (int64_t)l->dev[gpus[g]].mem_free - reserve;
            if (need > 0 && (int64_t)need > cap) {
                fits = false;
                if (n == want) { bad_g = g; bad_need = need; }
            }
        }
        if (fits) { n_gpu = n; break; }
    }
    if (r->n_gpu_layers > 0 && n_g > 0 && bad_g >= 0 && n_gpu != want) {
        const dev_info *d = &l->dev[gpus[bad_g]];
        char need[32], have[32], res[32];
        dev_format_bytes(bad_need, need, sizeof need);
        dev_format_bytes(d->mem_free, have, sizeof have);
        dev_format_bytes((uint64_t)reserve, res, sizeof res);
        anv_set_error("-ngl %d: %s (%s) would need %s but has %s free (%s kept in reserve); use fewer layers or -ngl -1",
                      r->n_gpu_layers, d->id, d->desc, need, have, res);
        return -1;
    }
    if (n_gpu == 0 && n_g > 0) split_layers(r->n_layer, r->n_layer, w, n_g, b);
    out->n_gpu_layers = n_gpu;

    int n_cpu = r->n_layer - n_gpu;
    if (n_cpu > 0 || r->cpu_bytes) entry_fill(&out->entries[out->n_entries++], l, cpu, r, 0, n_cpu, false);
    for (int g = 0; g < n_g; g++) {
        const dev_info *d = &l->dev[gpus[g]];
        if (b[g + 1] > b[g]) { entry_fill(&out->entries[out->n_entries++], l, gpus[g], r, b[g], b[g + 1], true); continue; }
        char free_s[32];
        dev_format_bytes(d->mem_free, free_s, sizeof free_s);
        if (r->n_gpu_layers == 0) plan_note(out, "%s (%s): not used: -ngl 0 keeps every layer on the CPU", d->id, d->desc);
        else if (r->tensor_split && w[g] == 0) plan_note(out, "%s (%s): not used: --tensor-split gives it no layers", d->id, d->desc);
        else if (n_gpu == 0) plan_note(out, "%s (%s): not used: not even one layer fits in its %s free memory", d->id, d->desc, free_s);
        else plan_note(out, "%s (%s): not used: its share of the %d GPU layers rounds to none", d->id, d->desc, n_gpu);
    }
    if (n_g > 0 && r->n_gpu_layers < 0 && n_gpu > 0 && n_gpu < r->n_layer)
        plan_note(out, "only %d of %d layers fit on the GPU%s; layers 0-%d run on the CPU", n_gpu, r->n_layer, n_g > 1 ? "s" : "", n_cpu - 1);
    for (int i = 0; i < l->n; i++) {
        const dev_info *d = &l->dev[i];
        if (d->used || d->backend == DEV_BACKEND_CPU) continue;
        const char *id = strcmp(d->id, "-") ? d->id : dev_backend_name(d->backend);
        plan_note(out, "%s (%s): not used: %s%s%s", id, d->desc, d->why, d->fix[0] ? "; fix: " : "", d->fix);
    }
    if (n_g == 0 && r->n_gpu_layers > 0)
        plan_note(out, "-ngl %d asks for GPU layers, but no GPU is in use (reasons above): everything runs on the CPU", r->n_gpu_layers);
    return 0;
}

int device_plan_layer_entry(const device_plan *p, int il) {
    for (int i = 0; i < p->n_entries; i++)
        if (il >= p->entries[i].layer_begin && il < p->entries[i].layer_end) return i;
    return -1;
}

void device_plan_log(const device_plan *p) {
    for (int i = 0; i < p->n_entries; i++) anv_log("%s", p->entries[i].line);
    for (int i = 0; i < p->n_notes; i++) anv_log("%s", p->notes[i]);
}
