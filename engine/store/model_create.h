/* model_create: Modelfiles and `anvil create`: parses FROM / PARAMETER / TEMPLATE /
 * SYSTEM / LICENSE / MESSAGE (quoted """ blocks included), renders a store entry back
 * as a Modelfile, and creates a store model from a spec (optionally re-quantized). */
#ifndef ANVIL_MODEL_CREATE_H
#define ANVIL_MODEL_CREATE_H
#include <stdbool.h>
#include "store.h"

typedef struct {
    char *from;            /* GGUF path, "sha256:<hex>" of an uploaded blob, or a store name */
    char *template_text;   /* NULL = inherit from FROM */
    char *system;          /* NULL = inherit */
    char *license;         /* NULL = inherit */
    char *params_json;     /* PARAMETERs as a JSON object, merged over FROM's; NULL = none */
    char *messages_json;   /* MESSAGEs as a JSON array, NULL = inherit */
    char *quantize;        /* "q4_K_M", "q8_0", ... or NULL */
    char *projector;       /* a second FROM: a vision projector GGUF file (general.architecture
                            * clip), stored as a projector layer as Ollama does; NULL = FROM's */
    bool from_store_only;  /* the server: FROM is a store name or an uploaded blob, never a file path */
} create_spec;

void create_spec_clear(create_spec *c);
/* Parses Modelfile text. A relative FROM path is resolved against base_dir (may be
 * NULL). -1 + anv_last_error(): "Modelfile line 3: unknown command 'FOO'",
 * "... PARAMETER temperature: 'hot' is not a number", a missing FROM ... */
int modelfile_parse(const char *text, const char *base_dir, create_spec *out);
/* `anvil show --modelfile`: the entry as a Modelfile (malloc'd). */
char *modelfile_render(const store_entry *e);

typedef void (*create_progress_fn)(const char *status, void *user);
/* Creates (or replaces) name in s from spec. Status lines as Ollama's ("parsing
 * modelfile"?, "using existing layer sha256:...", "creating new layer sha256:...",
 * "quantizing F16 model to Q4_K_M", "writing manifest", "success"). */
int store_create(store *s, const char *name, const create_spec *spec, create_progress_fn progress, void *user);
#endif
