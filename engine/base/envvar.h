/* envvar: reads an ANVIL_* setting with Ollama's OLLAMA_* name as the fallback, so a
 * service file written for Ollama (OLLAMA_HOST, OLLAMA_MODELS, OLLAMA_KEEP_ALIVE ...) keeps
 * working. The ANVIL_ name wins when both are set. */
#ifndef ANVIL_ENVVAR_H
#define ANVIL_ENVVAR_H

/* $ANVIL_<x> when set and non-empty, else $OLLAMA_<x> when <x> is one of the settings
 * Ollama shares (HOST, MODELS, KEEP_ALIVE, NUM_PARALLEL, MAX_LOADED_MODELS, MAX_QUEUE,
 * ORIGINS, CONTEXT_LENGTH, FLASH_ATTENTION, KV_CACHE_TYPE, NOPRUNE), else NULL.
 * If used_name is given it receives the name that was read (for error messages). */
const char *anv_getenv(const char *anvil_name, const char **used_name);

#endif
