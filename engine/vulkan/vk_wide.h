/* vk_wide: the repacked ("wide") weight layout of the Vulkan backend. Weights of the
 * 32-element block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) and Q6_K are stored per row as the
 * quants of every block (16 or 32 bytes each; Q6_K: ql + qh, 192 bytes; contiguous and
 * 16-byte aligned), then the rest of each block (f16 scale, min, high bits; Q6_K: its 16
 * int8 scales and d), the row padded to 16 bytes; the "_w" kernels
 * (dequant.glsl DQ_WIDE) read it with 16-byte loads; Q4_K / Q5_K keep the GGUF layout (their
 * blocks are 16-byte multiples) and get a uvec4 mat-vec. Chosen at weight upload, unless
 * ANVIL_VK_DISABLE=wide; tensors made with tensor_new keep the GGUF layout. */
#ifndef ANVIL_VK_WIDE_H
#define ANVIL_VK_WIDE_H
#include <stddef.h>
#include <stdint.h>
#include "backend.h"
#include "vk_pipelines.h"

struct vk_ctx;

/* Index of qtype among the repacked types (the "_w" kernel ranges), or -1. */
int vkw_type_index(uint32_t qtype);
/* Bytes of one repacked row (the GGUF row rounded up to 16); 0 if not a repacked type or cols
 * not a multiple of its block (32; Q6_K 256). */
size_t vkw_row_stride(uint32_t qtype, int64_t cols);
/* GGUF rows -> repacked rows (dst stride vkw_row_stride, padding zeroed) and back. */
void vkw_pack_rows(uint32_t qtype, int64_t cols, const uint8_t *src, uint8_t *dst, int64_t n_rows);
void vkw_unpack_rows(uint32_t qtype, int64_t cols, const uint8_t *src, uint8_t *dst, int64_t n_rows);

/* For the ops: the byte stride of t's storage rows and the storage byte of its first row
 * (views of a repacked weight select whole rows; SIZE_MAX for a view that does not: a
 * reshape or a partial row). */
size_t vkw_stride(const be_tensor *t);
size_t vkw_base(const be_tensor *t);
/* True if t's storage is repacked. */
bool vkw_is_wide(const be_tensor *t);
/* The pipeline reading t: pipe itself for the GGUF layout, its "_w" twin for a repacked t
 * (pipe is VKP_GET_ROWS/VKP_MMV/VKP_MM + type index or VKP_MMVQ_Q4_0/Q8_0); Q4_K / Q5_K
 * (GGUF layout, 16-byte blocks) get their uvec4 mat-vec unless ANVIL_VK_DISABLE=wide. */
int vkw_pick(const be_tensor *t, int pipe);

/* Description of the "_w" pipelines (vkp_describe's entries for them). */
void vkw_describe(int id, vkp_desc *d);

/* weight_new for a repacked type: the storage, its rows packed straight into mapped memory
 * (UMA) or through the staging ring. NULL + anv_last_error() on failure. */
be_tensor *vkw_weight_new(struct vk_ctx *c, uint32_t type, int64_t cols, int64_t rows, const void *host);
/* upload / download of whole GGUF-layout rows to / from a repacked tensor (download also
 * partial rows); errors are the backend's sticky error. */
void vkw_upload(struct vk_ctx *c, be_tensor *t, size_t off, const void *src, size_t n);
void vkw_download(struct vk_ctx *c, const be_tensor *t, size_t off, void *dst, size_t n);
#endif
