/* vk_membw: the read-bandwidth probe of a Vulkan device: one large device-local buffer
 * summed by a compute shader (shaders/membw_read.comp), timed with timestamp queries (wall
 * clock around the submit where the queue has none); the best of 5 passes after a warm-up.
 * Built with the Vulkan backend (ANVIL_HAVE_VULKAN). */
#ifndef ANVIL_VK_MEMBW_H
#define ANVIL_VK_MEMBW_H
#include <stddef.h>
#include "backend.h"

#ifdef ANVIL_HAVE_VULKAN
/* vk: a Vulkan backend (name "vulkanN"). bytes: buffer size asked for (>= 1 MiB; lowered to
 * the device's allocation / binding limits). Every pass's sum is checked. 0 and *gbps, or
 * -1 with anv_last_error(). */
int vk_membw_read(backend *vk, size_t bytes, double *gbps);
#endif
#endif
