/* vk_int8: which integer-dot (VK_KHR_shader_integer_dot_product) mat-vec kernel a matmul's
 * weight gets: mul_mat_vecq_q4_0 / _q8_0 (shaders/mul_mat_vecq.comp) and the kernels of
 * shaders/mul_mat_vecq_x.comp (Q4_1, Q5_0, Q5_1 in both weight layouts; Q4_K, Q5_K, Q6_K),
 * all against the activation quantized once by quantize_q8_1; their pipeline descriptions.
 * Off with ANVIL_VK_DISABLE=int8 or on devices without 8-bit packed dot products; Q4_K's and
 * Q5_K's only with ANVIL_VK_INT8_K=1 (see vk_int8.c). */
#ifndef ANVIL_VK_INT8_H
#define ANVIL_VK_INT8_H
#include <stdbool.h>
#include <stdint.h>
#include "backend.h"
#include "vk_pipelines.h"

struct vk_ctx;

/* True if weights of qtype have an integer-dot mat-vec (the 8-bit activation tolerance applies). */
bool vkq_covers(uint32_t qtype);
/* ANVIL_VK_INT8_K=1: Q4_K's and Q5_K's kernels too (read once per backend: vk_ctx.use_int8_k). */
bool vkq_kquants_requested(void);
/* The integer-dot mat-vec pipeline for weight w with K columns, or -1 (path off, type not
 * covered, K not a multiple of the block, misaligned view). */
int vkq_matmul_pipe(struct vk_ctx *c, const be_tensor *w, int64_t K);
/* vkp_describe's entries VKP_MMVQ_X..VKP_MMVQ_X_LAST; false for any other id. */
bool vkq_describe(int id, vkp_desc *d);
#endif
