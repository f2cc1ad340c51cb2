/* vk_extras: the Vulkan backend's optional entries (backend_extras.h), for the device layer. */
#ifndef ANVIL_VK_EXTRAS_H
#define ANVIL_VK_EXTRAS_H
#include "backend_extras.h"

extern const backend_extras vk_backend_extras;
#endif
