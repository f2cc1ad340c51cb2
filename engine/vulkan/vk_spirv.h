/* vk_spirv: the table of embedded SPIR-V shader variants (generated at build time by
 * engine/vulkan/embed_spirv.cmake from shaders/ *.comp). */
#ifndef ANVIL_VK_SPIRV_H
#define ANVIL_VK_SPIRV_H
#include <stddef.h>
typedef struct { const char *name; const unsigned char *data; size_t size; } anv_spirv_blob;
extern const anv_spirv_blob anv_spirv_blobs[];
extern const int anv_spirv_count;
#endif
