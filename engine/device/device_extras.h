/* device_extras: which backend_extras (backend_extras.h) belong to a backend or a backend
 * kind. The one place above the backends that names them, so the self-check (gpu_verify.c)
 * and the tools (anvil bench, -v) are written once for CPU, Vulkan and HIP. */
#ifndef ANVIL_DEVICE_EXTRAS_H
#define ANVIL_DEVICE_EXTRAS_H
#include "backend_extras.h"
#include "device.h"

/* The entries of be's backend; NULL for a backend this build does not know. */
const backend_extras *device_extras(const backend *be);
/* The entries of a backend kind; NULL when it is not built in. */
const backend_extras *device_kind_extras(dev_backend_kind kind);
/* be's one-line description (backend_extras.describe) into out; its length, 0 if none. */
int device_describe(backend *be, char *out, size_t out_len);
#endif
