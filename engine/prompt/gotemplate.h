/* gotemplate: the subset of Go's text/template that Ollama chat templates use, so a
 * TEMPLATE from a Modelfile or an Ollama manifest renders as Ollama renders it:
 * {{ .System }} {{ .Prompt }} {{ .Response }}, {{ if }}/{{ else if }}/{{ else }}/{{ end }},
 * {{ range .Messages }} / {{ range $i, $m := .Messages }} with .Role .Content, $.System,
 * {{- and -}} whitespace trimming, comparison helpers (eq, ne, lt, le, gt, ge, and, or,
 * not, len, slice, index, print, println, Ollama's json for scalars), {{ with }},
 * {{ break }}/{{ continue }}, {{ $var := ... }} / {{ $var = ... }}, string and integer
 * literals, pipelines (a | f). Anything else is an error naming the construct and its
 * position (line, column, byte offset), never a wrong rendering. */
#ifndef ANVIL_GOTEMPLATE_H
#define ANVIL_GOTEMPLATE_H
#include <stdbool.h>
#include <stddef.h>
#include "chat.h"

typedef struct gotmpl gotmpl;

/* Parses as Ollama's template.Parse does, which also appends {{ .Response }} to a
 * template that uses neither .Messages nor .Response. NULL + anv_last_error(). */
gotmpl *gotmpl_parse(const char *text);
void gotmpl_free(gotmpl *t);
/* True if the template names .Messages (or .Document) anywhere, Ollama's test for
 * rendering once over the whole conversation (else it renders turn by turn). */
bool gotmpl_uses_messages(const gotmpl *t);

/* The data is Ollama's map: with messages != NULL (n_messages may be 0) it holds System,
 * Messages, Tools, Response, Think, IsThinkSet, Query, Document, Instruction (""); with
 * messages == NULL (per-turn rendering) System, Prompt, Response, Think, IsThinkSet. A key that is absent prints "<no value>" and is false, as in
 * Ollama (missingkey=zero on a map[string]any). A message has Role, Content, Thinking,
 * ToolName, ToolCallID (""), Images (empty) and ToolCalls. Tools and tool calls have the
 * fields of Ollama's template types (gotemplate_tools.c): .Function.Name, .Description,
 * .Parameters.Properties (a map: range $name, $p), $p.Type/.Description/.Enum,
 * .Function.Arguments; $.Tools, Properties and Arguments print as JSON (their String
 * methods), json prints any of them; a struct printed bare is an error, not a guess. */
typedef struct {
    const char *system;             /* .System ("" when none) */
    const char *prompt;             /* .Prompt */
    const char *response;           /* .Response */
    const chat_message *messages;   /* .Messages (role, content) */
    int n_messages;
    bool think, is_think_set;       /* .Think, .IsThinkSet */
    const char *tools_json;         /* .Tools (messages mode): the request's tools, NULL = none */
} gotmpl_vars;

/* Ollama's tools/template.go parseTag: the first non-blank text inside the first
 * {{ if .ToolCalls }} (searched through if/range/with), stopping at an action, cut before
 * any '{' and trimmed; "{" when there is none. Into out (cap bytes, cut to fit). */
void gotmpl_tool_tag(const gotmpl *t, char *out, size_t cap);

/* Ollama's thinking/template.go InferTags: for each .Thinking field inside a range over
 * .Messages (the last one wins), the first and last nodes of the list holding it, when
 * they are text, trimmed: the opening and closing tags ("" when none). */
void gotmpl_think_tags(const gotmpl *t, char *open, char *close, size_t cap);

/* malloc'd text, or NULL + anv_last_error() (e.g. a field that does not exist). */
char *gotmpl_render(const gotmpl *t, const gotmpl_vars *v);
/* Renders the template with everything after its first {{ .Response }} removed, the way
 * Ollama renders the last turn of a per-turn template. */
char *gotmpl_render_last_turn(const gotmpl *t, const gotmpl_vars *v);
#endif
