/* replica: the name this server reports as its replica when several run behind a router
 * (README "Running several replicas"): ANVIL_REPLICA_ID, else the host name (a Kubernetes
 * pod's name), else "anvil". /api/ps and /metrics carry it. */
#ifndef ANVIL_REPLICA_H
#define ANVIL_REPLICA_H
#include <stddef.h>

#define REPLICA_ID_MAX 128

/* Writes the replica id into out (cap >= REPLICA_ID_MAX); -1 + anv_last_error() when
 * ANVIL_REPLICA_ID is empty, longer than 127 bytes, or holds control characters or
 * spaces. */
int replica_id_read(char *out, size_t cap);
#endif
