/* envvar: ANVIL_* settings with their OLLAMA_* fallbacks (see envvar.h). */
#include "envvar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the settings Ollama shares with Anvil, under Ollama's names */
static const char *const ollama[] = {
    "OLLAMA_HOST", "OLLAMA_MODELS", "OLLAMA_KEEP_ALIVE", "OLLAMA_NUM_PARALLEL",
    "OLLAMA_MAX_LOADED_MODELS", "OLLAMA_MAX_QUEUE", "OLLAMA_ORIGINS", "OLLAMA_CONTEXT_LENGTH",
    "OLLAMA_FLASH_ATTENTION", "OLLAMA_KV_CACHE_TYPE", "OLLAMA_NOPRUNE",
};

const char *anv_getenv(const char *anvil_name, const char **used_name) {
    if (used_name) *used_name = anvil_name;
    if (!anvil_name) return NULL;
    const char *v = getenv(anvil_name);
    if (v && *v) return v;
    if (strncmp(anvil_name, "ANVIL_", 6) != 0) return v;
    for (size_t i = 0; i < sizeof ollama / sizeof ollama[0]; i++) {
        if (strcmp(anvil_name + 6, ollama[i] + 7) != 0) continue;
        const char *o = getenv(ollama[i]);
        if (o && *o) {
            if (used_name) *used_name = ollama[i];
            return o;
        }
        break;
    }
    return v;
}
