/* model_place: loads a model where the device layer says it should run: probes every
 * device, applies the policy and environment variables, plans which device holds which
 * layers (weights + KV cache at the requested context), logs one line per device (and
 * why each unused GPU is not used), opens the GPU backend and loads the model onto it. */
#ifndef ANVIL_MODEL_PLACE_H
#define ANVIL_MODEL_PLACE_H
#include <stdint.h>
#include "model.h"

typedef struct {
    int n_threads;            /* CPU threads, <= 0 = all */
    int n_ctx;                /* context per sequence the KV cache is planned for, <= 0 = model
                               * default; capped at the model's training context */
    int n_seq;                /* sequences (server slots) with their own KV cache, <= 0 = 1 */
    uint32_t kv_type;         /* QT_F16 / QT_F32 / QT_Q8_0 / QT_Q4_0 */
    int n_gpu_layers;         /* -1 = all that fit, 0 = CPU only, N = the last N layers */
    const char *tensor_split; /* "3,1" or NULL */
    bool quiet;               /* no placement log (anvil show) */
} model_place_opts;

/* NULL + anv_last_error() on a bad model, a bad environment variable or a plan that
 * cannot be honoured. The KV caches and compute buffers planned on the host must fit in
 * its available memory (/proc/meminfo MemAvailable, at most ANVIL_MAX_HOST_MEMORY bytes
 * when set): otherwise "model requires more system memory (X GiB) than is available
 * (Y GiB) ...", nothing allocated (the GPU's share is planned within its free memory). The returned model owns its GPU backend. */
model *model_load_placed(const char *path, const model_place_opts *o);
/* Loads a model with a CPU backend of n_threads that the model owns, and the last
 * n_gpu_layers (-1 = all) on gpu (borrowed: set m->owns_gpu to hand it over), or all on
 * the CPU if gpu is NULL. No device selection: the caller chose the device. */
model *model_load_with(const char *path, int n_threads, backend *gpu, int n_gpu_layers);
/* The context size model_ctx_new() uses for n_ctx <= 0 on a model loaded without placement
 * (min(4096, the trained context)). */
int model_default_ctx(const model_hparams *hp);
/* Ollama's default context by the memory of the GPU that holds the model (its envconfig: 4k;
 * 32k from 24 GiB; 256k from 48 GiB), capped at the trained context; gpu_mem_total 0 (no GPU)
 * gives model_default_ctx. model_load_placed grows a model's default to it only where every
 * layer and the larger KV caches still fit on that GPU (m->default_ctx). */
int model_default_ctx_for_gpu(const model_hparams *hp, uint64_t gpu_mem_total);
/* The context a request without num_ctx gets on m (m->default_ctx, else model_default_ctx). */
int model_ctx_default(const model *m);
#endif
