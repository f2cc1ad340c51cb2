/* gpu_verify: `anvil doctor --verify`, the GPU backend checked against cpu/ref_ops.c (the
 * scalar reference) on the device it runs on. Every kernel a model would use (each
 * distinct weight type + shape at decode, multi-token and prefill batch sizes; RMSNorm,
 * QK-norm, RoPE, bias add, residual add, GLU, KV store, attention at the model's heads,
 * window and KV types) runs once on the GPU and once in the reference, on the model's own
 * shapes and weights (rows capped: the kernels are row-uniform), and each case gets its
 * relative error, a pass/fail verdict against a per-kernel tolerance and, when it fails,
 * the fix: each optional path the failing kernels belong to is disabled in turn on a
 * fresh backend and the case re-run, so a fix is only printed once it was seen to work.
 *
 * The result is cached per device + driver version (<cache>/anvil/vk-verify-<vendor>-
 * <device>-<driver>-<kernels>.txt for Vulkan, hip-verify-<gfx>-<runtime>-<bus>-<code object>
 * .txt for HIP; <cache> = $XDG_CACHE_HOME or ~/.cache): model loads run the check
 * automatically the first time a device + driver is seen (ANVIL_VK_AUTOVERIFY=0 skips it)
 * and apply a verified fix (ANVIL_VK_DISABLE: Vulkan only; HIP has no optional paths, so a
 * failing HIP device is reported with the advice to run on Vulkan or the CPU). */
#ifndef ANVIL_GPU_VERIFY_H
#define ANVIL_GPU_VERIFY_H
#include <stdbool.h>
#include <stdio.h>
#include "backend.h"
#include "device.h"
#include "model.h"

#define GV_MAX_CASES 160

typedef struct {
    char op[16];          /* "matmul", "rms_norm", "rope", "add", "glu", "store_rows", "attention" */
    char shape[96];       /* "q4_K 2048x640 n_tok 1", "n_head 8 head_dim 64 pos0 255 kv f16" */
    char kernels[192];    /* the SPIR-V variants it ran ("mul_mat_vec_q4_k_sg") */
    double err, tol;      /* relative L2 error against the reference; the verdict's bound */
    bool pass;
    char fix[160];        /* failed: "ANVIL_VK_DISABLE=subgroup (checked: passes with it)" or advice */
} gv_case;

typedef struct {
    char device[1024];    /* the backend's description */
    char source[160];     /* "model X" or "standard shapes" */
    int n, n_fail;
    gv_case c[GV_MAX_CASES];
    char fix[128];        /* the ANVIL_VK_DISABLE value that fixes every failure, "" if none or none needed */
    const char *fix_setting; /* the variable fix is a value of (backend_extras.fix_setting), NULL if none */
    bool fix_complete;    /* every failure is fixed by it */
} gv_report;

/* The device a check runs on: its backend kind and the backend's own device index
 * (dev_info.backend / backend_index). */
typedef struct { dev_backend_kind kind; int index; } gv_target;
static inline gv_target gv_vulkan(int vk_index) { gv_target t = { DEV_BACKEND_VULKAN, vk_index }; return t; }
static inline gv_target gv_hip(int hip_index) { gv_target t = { DEV_BACKEND_HIP, hip_index }; return t; }

/* Runs the check on gpu (the backend opened on device t) for the kernels model m would
 * use (m loaded on the CPU: its shapes and weights), or a standard set of shapes when m
 * is NULL. Returns the number of failed cases, or -1 with anv_last_error(). */
int gpu_verify_run(backend *gpu, gv_target t, const model *m, gv_report *r);
/* Prints the report: one line per case, a summary, the fix. */
void gpu_verify_print(FILE *f, const gv_report *r, bool all_cases);
/* Path of the cached result for device t (false if no cache dir is known or the device
 * cannot be identified). */
bool gpu_verify_cache_path(gv_target t, char *out, size_t out_len);
/* Writes / reads the cached verdict ("pass" or "fail", the fix). */
int gpu_verify_cache_write(gv_target t, const gv_report *r);
bool gpu_verify_cache_read(gv_target t, bool *pass, char *fix, size_t fix_len);
/* Model load: the first time this device + driver is seen (no cache entry), runs the
 * check for m_cpu's kernels and caches it; a cached or new failure is logged. Writes the
 * ANVIL_VK_DISABLE value to apply into fix ("" = none). Never fails the load. */
void gpu_verify_auto(backend *gpu, gv_target t, const model *m_cpu, char *fix, size_t fix_len);
#endif
