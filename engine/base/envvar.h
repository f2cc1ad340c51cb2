/* envvar: reads an ANVIL_* setting with Ollama's OLLAMA_* name as the fallback, so a
 * service file written for Ollama keeps working: the settings both share under one meaning
 * (HOST, MODELS, KEEP_ALIVE, NUM_PARALLEL, MAX_LOADED_MODELS, MAX_QUEUE, ORIGINS,
 * CONTEXT_LENGTH, FLASH_ATTENTION, KV_CACHE_TYPE, NOPRUNE) and the ones that map with a
 * translation (OLLAMA_IGPU_ENABLE -> ANVIL_IGPU, OLLAMA_LLM_LIBRARY -> ANVIL_BACKEND,
 * OLLAMA_DEBUG -> ANVIL_DEBUG, OLLAMA_GPU_OVERHEAD -> ANVIL_GPU_OVERHEAD). The ANVIL_ name wins
 * when both are set. Every other OLLAMA_* variable that is set gets one warning line
 * (anv_env_warn_ollama), never silence. */
#ifndef ANVIL_ENVVAR_H
#define ANVIL_ENVVAR_H
#include <stdio.h>

/* $ANVIL_<x> when set and non-empty, else its Ollama twin (translated) when set, else NULL.
 * If used_name is given it receives the name that was read (for error messages). */
const char *anv_getenv(const char *anvil_name, const char **used_name);

/* Prints to out one line per OLLAMA_* variable that is set but has no effect here (a setting
 * Anvil does not have, or a value it cannot map, e.g. OLLAMA_LLM_LIBRARY=cuda_v12), saying
 * what to do instead. Returns the number of lines. */
int anv_env_warn_ollama(FILE *out);
#endif
