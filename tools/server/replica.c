/* replica: the server's replica id (replica.h): ANVIL_REPLICA_ID, the host name, "anvil". */
#include "replica.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <unistd.h>
#endif

#include "error.h"
#include "settings.h"

/* Printable, no spaces: it is a JSON string and a Prometheus label value, and names a pod. */
static bool usable(const char *s) {
    if (!s || !*s || strlen(s) >= REPLICA_ID_MAX) return false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p <= ' ' || *p == 0x7f) return false;
    return true;
}

int replica_id_read(char *out, size_t cap) {
    const char *env = anv_setting_raw("ANVIL_REPLICA_ID");
    if (env) {
        if (!usable(env)) {
            anv_set_error("ANVIL_REPLICA_ID='%.40s%s' is not a replica id (1 to %d printable characters, no spaces)", env,
                          strlen(env) > 40 ? "..." : "", REPLICA_ID_MAX - 1);
            return -1;
        }
        snprintf(out, cap, "%s", env);
        return 0;
    }
    char host[256] = "";
#ifdef _WIN32
    const char *cn = anv_setting_raw("COMPUTERNAME");
    if (cn) snprintf(host, sizeof host, "%s", cn);
#else
    if (gethostname(host, sizeof host) != 0) host[0] = 0;
    host[sizeof host - 1] = 0;
#endif
    snprintf(out, cap, "%s", usable(host) ? host : "anvil");
    return 0;
}
