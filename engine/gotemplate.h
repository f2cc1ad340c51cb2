/* gotemplate: the subset of Go's text/template that Ollama chat templates use, so a
 * TEMPLATE from a Modelfile or an Ollama manifest renders as Ollama renders it:
 * {{ .System }} {{ .Prompt }} {{ .Response }}, {{ if }}/{{ else if }}/{{ else }}/{{ end }},
 * {{ range .Messages }} / {{ range $i, $m := .Messages }} with .Role .Content, $.System,
 * {{- and -}} whitespace trimming, comparison helpers (eq, ne, and, or, not, len, slice,
 * index), {{ $var := ... }}, string literals. Anything else is a parse error naming the
 * construct and its position, never a wrong rendering. */
#ifndef ANVIL_GOTEMPLATE_H
#define ANVIL_GOTEMPLATE_H
#include <stdbool.h>
#include "chat.h"

typedef struct gotmpl gotmpl;

gotmpl *gotmpl_parse(const char *text);        /* NULL + anv_last_error() */
void gotmpl_free(gotmpl *t);
/* True if the template ranges over .Messages (else Ollama renders turn by turn). */
bool gotmpl_uses_messages(const gotmpl *t);

typedef struct {
    const char *system;             /* .System ("" when none) */
    const char *prompt;             /* .Prompt */
    const char *response;           /* .Response */
    const chat_message *messages;   /* .Messages (role, content) */
    int n_messages;
} gotmpl_vars;

/* malloc'd text, or NULL + anv_last_error() (e.g. a field that does not exist). */
char *gotmpl_render(const gotmpl *t, const gotmpl_vars *v);
#endif
