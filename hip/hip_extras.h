/* hip_extras: the HIP backend's optional entries (backend_extras.h), for the device layer. */
#ifndef ANVIL_HIP_EXTRAS_H
#define ANVIL_HIP_EXTRAS_H
#include "backend_extras.h"

extern const backend_extras hip_backend_extras;
#endif
