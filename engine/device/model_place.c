/* model_place: device selection + layer placement + loading (see model_place.h). */
#include "model_place.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"
#include "device.h"
#include "error.h"
#include "gpu_verify.h"
#include "settings.h"
#ifdef ANVIL_HAVE_VULKAN
#include "vk_backend.h"
#endif
#include "quant.h"

int model_default_ctx(const model_hparams *hp) { return hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096; }

int model_default_ctx_for_gpu(const model_hparams *hp, uint64_t gpu_mem_total) {
    const uint64_t gib = 1ull << 30;
    const int tier = gpu_mem_total >= 48 * gib ? 262144 : gpu_mem_total >= 24 * gib ? 32768 : 4096;
    return hp->n_ctx_train > 0 && hp->n_ctx_train < tier ? hp->n_ctx_train : tier;
}

int model_ctx_default(const model *m) { return m->default_ctx > 0 ? m->default_ctx : model_default_ctx(&m->hp); }

/* The KV cache bytes of every layer for n_ctx positions of n_seq sequences. */
static void kv_bytes(const model_hparams *hp, int n_ctx, uint64_t n_seq, uint32_t kv_type, uint64_t *lkv) {
    for (int il = 0; il < hp->n_layer; il++)   /* per-layer widths; a layer sharing another's cache has none (gemma4) */
        lkv[il] = model_layer_kv_source(hp, il) != il ? 0 : 2 * (uint64_t)n_ctx * n_seq *
                  (uint64_t)qtype_row_size(kv_type, (int64_t)model_layer_n_kv_head(hp, il) * model_layer_head_dim(hp, il));
}

/* The placement of one GPU entry, or -1 (CPU only). */
static int plan_gpu(const device_list *dl, const device_plan *plan) {
    for (int i = 0; i < plan->n_entries; i++)
        if (dl->dev[plan->entries[i].device].backend != DEV_BACKEND_CPU && plan->entries[i].layer_end > plan->entries[i].layer_begin)
            return plan->entries[i].device;
    return -1;
}

/* Bytes of every tensor named "blk.<il>.*", and of the output head. */
static void layer_bytes(const gguf_file *f, int n_layer, uint64_t *per_layer, uint64_t *output, uint64_t *embd, uint64_t *tied) {
    memset(per_layer, 0, sizeof *per_layer * (size_t)n_layer);
    *output = *embd = *tied = 0;
    bool has_output = false;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        int il;
        if (t->name.len > 4 && memcmp(t->name.ptr, "blk.", 4) == 0 && sscanf(t->name.ptr + 4, "%d", &il) == 1 && il >= 0 && il < n_layer)
            per_layer[il] += t->nbytes;
        else if (gguf_str_eq(t->name, "output.weight") || gguf_str_eq(t->name, "output_norm.weight")) {
            *output += t->nbytes;
            has_output |= gguf_str_eq(t->name, "output.weight");
        } else if (gguf_str_eq(t->name, "token_embd.weight")) *embd = t->nbytes;
    }
    if (!has_output) { *output += *embd; *tied = *embd; } /* tied head: a GPU needs its own copy */
}

model *model_load_with(const char *path, int n_threads, backend *gpu, int n_gpu_layers) {
    backend *cpu = cpu_backend_new(n_threads);
    if (!cpu) return NULL;
    model_load_opts lo = {.cpu = cpu, .n_gpu_layers = gpu ? n_gpu_layers : 0, .gpu = gpu};
    model *m = model_load(path, &lo);
    if (!m) { cpu->ops->destroy(cpu); return NULL; }
    m->owns_cpu = true;
    return m;
}

/* The host memory a model may still take: MemAvailable (the loaded models' KV caches are
 * touched when made, so it has dropped by them), at most ANVIL_MAX_HOST_MEMORY less what the
 * loaded models hold (model_host_reserved_total). */
static uint64_t host_mem_available(void) {
    uint64_t avail = UINT64_MAX;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        unsigned long long kb;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) { avail = (uint64_t)kb * 1024; break; }
        fclose(f);
    }
    const char *lim = anv_setting_raw("ANVIL_MAX_HOST_MEMORY");
    if (lim && *lim) {
        char *end;
        const unsigned long long v = strtoull(lim, &end, 10), held = model_host_reserved_total();
        const uint64_t left = v > held ? v - held : 0;
        if (end != lim && !*end && left < avail) avail = left;
    }
    return avail;
}

/* ANVIL_GPU_OVERHEAD (or Ollama's OLLAMA_GPU_OVERHEAD): bytes kept free on each GPU, or -1 for
 * the default (DEVICE_DEFAULT_RESERVE); -2 + error when malformed. */
static int64_t gpu_overhead_bytes(void) {
    const char *name;
    const char *v = anv_setting_value("ANVIL_GPU_OVERHEAD", &name);
    if (!v) return -1;
    char *end;
    errno = 0;
    const unsigned long long b = strtoull(v, &end, 10);
    if (errno || end == v || *end || b > (1ull << 50)) {
        anv_set_error("%s=%s: expected a byte count", name, v);
        return -2;
    }
    return (int64_t)b;
}

/* Admission: the KV caches of the layers planned on the host, plus the compute buffers,
 * must fit in its available memory (the weights are mapped from the file). */
static int check_host_memory(const model_hparams *hp, const device_plan *plan, const uint64_t *lkv, uint64_t compute,
                             int n_ctx, int n_seq, uint64_t *need_out) {
    uint64_t kv = 0;
    const int n_cpu_layers = hp->n_layer - (plan->n_gpu_layers > 0 ? plan->n_gpu_layers : 0);
    for (int il = 0; il < n_cpu_layers && il < hp->n_layer; il++) kv += lkv[il];
    const uint64_t need = kv + compute, avail = host_mem_available();
    *need_out = need;
    if (need <= avail) return 0;
    const double gib = 1024.0 * 1024.0 * 1024.0;
    anv_set_error("model requires more system memory (%.2f GiB) than is available (%.2f GiB; the loaded models hold "
                  "%.2f GiB): the KV cache for %d tokens x %d slot(s) on %d layer(s) is %.2f GiB; lower num_ctx or "
                  "ANVIL_NUM_PARALLEL, or use ANVIL_KV_CACHE_TYPE=q8_0", need / gib, avail / gib,
                  model_host_reserved_total() / gib, n_ctx, n_seq, n_cpu_layers, kv / gib);
    return -1;
}

/* The first use of a GPU device + driver checks its kernels (gpu_verify_auto); on Vulkan a
 * verified fix (optional paths to turn off) reopens the backend with them. */
static backend *self_check(backend *gpu, const dev_info *d, const model *probe) {
    char fix[128];
    if (d->backend == DEV_BACKEND_HIP) {
        gpu_verify_auto(gpu, gv_hip(d->backend_index), probe, fix, sizeof fix);
        return gpu;
    }
#ifdef ANVIL_HAVE_VULKAN
    if (d->backend != DEV_BACKEND_VULKAN) return gpu;
    const int vk_index = d->backend_index;
    gpu_verify_auto(gpu, gv_vulkan(vk_index), probe, fix, sizeof fix);
    if (!fix[0]) return gpu;
    const char *env = anv_setting_raw("ANVIL_VK_DISABLE");
    char dis[300];
    dev_fmt(dis, sizeof dis, "%s%s%s", env && *env ? env : "", env && *env ? "," : "", fix);
    backend *again = vk_backend_new_opts(vk_index, dis);
    if (!again) { anv_log("%s: reopening with ANVIL_VK_DISABLE=%s failed (%s); keeping it as is", gpu->name, dis, anv_last_error()); return gpu; }
    gpu->ops->destroy(gpu);
    return again;
#else
    return gpu;
#endif
}

/* The model on a CPU backend that does not repack: its shape and weight bytes, no more. */
static model *load_probe(const char *path) {
    backend *cpu = cpu_backend_new_unpacked(1);
    if (!cpu) return NULL;
    model_load_opts lo = {.cpu = cpu};
    model *m = model_load(path, &lo);
    if (!m) { cpu->ops->destroy(cpu); return NULL; }
    m->owns_cpu = true;
    return m;
}

model *model_load_placed(const char *path, const model_place_opts *o) {
    /* Read the shape first (the mapping is shared by the OS with the load below; the probe
     * repacks nothing: the GPU self-check reads only the file layout). */
    model *probe = load_probe(path);
    if (!probe) return NULL;
    const model_hparams hp = probe->hp;
    uint64_t *lw = calloc((size_t)hp.n_layer, sizeof *lw), *lkv = calloc((size_t)hp.n_layer, sizeof *lkv);
    uint64_t out_bytes, embd_bytes, tied_bytes;
    layer_bytes(probe->gguf, hp.n_layer, lw, &out_bytes, &embd_bytes, &tied_bytes);

    int n_ctx = o->n_ctx > 0 ? o->n_ctx : model_default_ctx(&hp);
    if (hp.n_ctx_train > 0 && n_ctx > hp.n_ctx_train) n_ctx = hp.n_ctx_train;
    const uint64_t n_seq = o->n_seq > 0 ? (uint64_t)o->n_seq : 1;
    const uint64_t kvd = (uint64_t)hp.n_kv_head * hp.head_dim_k;
    kv_bytes(&hp, n_ctx, n_seq, o->kv_type, lkv);
    const uint64_t nb = 512;
    const uint64_t qd = (uint64_t)hp.n_head * hp.head_dim_k;
    uint64_t compute = nb * 4 * (3 * (uint64_t)hp.n_embd + 2 * qd + 2 * kvd + 2 * (uint64_t)hp.n_ff) + (64u << 20);

    model *m = NULL;
    device_list *dl = device_list_probe();
    if (!dl) { anv_set_error("out of memory"); goto done; }
    device_env env;
    device_env_from_process(&env);
    if (device_list_select(dl, &env) != 0) goto done;
    const int64_t overhead = gpu_overhead_bytes();
    if (overhead == -2) goto done;
    device_plan_request rq = {
        .n_layer = hp.n_layer, .layer_weight_bytes = lw, .layer_kv_bytes = lkv,
        .output_bytes = out_bytes, .output_tied_bytes = tied_bytes, .compute_bytes = compute, .cpu_bytes = embd_bytes,
        .n_gpu_layers = o->n_gpu_layers, .tensor_split = o->tensor_split, .reserve_bytes = overhead,
    };
    device_plan plan;
    if (device_plan_make(dl, &rq, &plan) != 0) goto done;
    /* No num_ctx: a GPU holding the whole model grows the default context by its memory
     * (Ollama's tiers), as far as every layer and the larger KV caches still fit on it. */
    const int dev0 = plan_gpu(dl, &plan);
    if (o->n_ctx <= 0 && dev0 >= 0 && plan.n_gpu_layers == hp.n_layer) {
        for (int want = model_default_ctx_for_gpu(&hp, dl->dev[dev0].mem_total); want > n_ctx; want /= 8) {
            kv_bytes(&hp, want, n_seq, o->kv_type, lkv);
            device_plan bigger;
            if (device_plan_make(dl, &rq, &bigger) == 0 && bigger.n_gpu_layers == hp.n_layer && plan_gpu(dl, &bigger) == dev0) {
                plan = bigger;
                n_ctx = want;
                break;
            }
        }
        kv_bytes(&hp, n_ctx, n_seq, o->kv_type, lkv);
    }
    uint64_t host_need = 0;
    if (check_host_memory(&hp, &plan, lkv, compute, n_ctx, (int)n_seq, &host_need) != 0) goto done;
    int gpu_entries = 0, gpu_dev = -1;
    for (int i = 0; i < plan.n_entries; i++)
        if (dl->dev[plan.entries[i].device].backend != DEV_BACKEND_CPU && plan.entries[i].layer_end > plan.entries[i].layer_begin) {
            gpu_entries++;
            gpu_dev = plan.entries[i].device;
        }
    if (gpu_entries > 1) {
        anv_set_error("layers planned on %d GPUs, but splitting a model across several GPUs is not implemented yet: "
                      "pick one with ANVIL_DEVICE=vulkanN", gpu_entries);
        goto done;
    }
    backend *gpu = NULL;
    if (gpu_dev >= 0) {
        gpu = device_open(dl, gpu_dev, o->n_threads);
        if (!gpu) goto done;
        gpu = self_check(gpu, &dl->dev[gpu_dev], probe);
        if (!gpu) goto done;
    }
    model_free(probe); /* (ANVIL_NO_MMAP: a copy of the weights) */
    probe = NULL;
    if (!o->quiet) device_plan_log(&plan);
    int n_gpu = plan.n_gpu_layers;
    m = model_load_with(path, o->n_threads, gpu, n_gpu);
    /* The GPU ran out of memory while the weights went up (its free memory was less than it
     * reported, or another process took some): fewer GPU layers, with a log line, until it
     * fits or the model runs on the CPU alone. */
    while (!m && gpu && n_gpu > 0 && strstr(anv_last_error(), "out of device memory")) {
        const int fewer = n_gpu - (n_gpu + 3) / 4;
        anv_log("%s: %s; retrying with %d GPU layer%s instead of %d", gpu->name, anv_last_error(), fewer,
                fewer == 1 ? "" : "s", n_gpu);
        n_gpu = fewer;
        m = model_load_with(path, o->n_threads, n_gpu > 0 ? gpu : NULL, n_gpu);
    }
    if (!m || n_gpu == 0) {
        if (gpu) gpu->ops->destroy(gpu);
        gpu = NULL;
        if (!m) goto done;
    }
    m->owns_gpu = gpu != NULL;
    m->default_ctx = o->n_ctx > 0 ? 0 : n_ctx;
    model_reserve_host(m, host_need);
done:
    model_free(probe);
    device_list_free(dl);
    free(lw);
    free(lkv);
    return m;
}
