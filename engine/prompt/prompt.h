/* prompt: builds the text a request feeds the model, the way Ollama does: a Go TEMPLATE
 * (from the request, or the model's template layer) rendered with gotemplate, else the
 * GGUF's own chat template (chat.h); the system prompt of the request, else the model's
 * SYSTEM; the Modelfile's MESSAGEs before the conversation; raw mode passes the prompt
 * through untouched. Used by `anvil run` and the server. */
#ifndef ANVIL_PROMPT_H
#define ANVIL_PROMPT_H
#include <stdbool.h>
#include "chat.h"
#include "model.h"
#include "reply_parse.h"

typedef struct {
    const char *template_go;        /* Go template text, NULL = use the GGUF chat template */
    const char *system;             /* system prompt, NULL = none (ignored when msgs has one) */
    const char *messages_json;      /* the model's MESSAGE layer (JSON array), NULL = none */
    const chat_message *msgs;       /* the conversation (generate: one user message) */
    int n_msgs;
    bool raw;                       /* the last message's content is the prompt, as is */
    int chat_format_override;       /* chat_format for the GGUF path, -1 = detect */
    const char *tools_json;         /* the request's tools (JSON array), NULL = none */
    int think;                      /* CHAT_THINK_* (a level: gpt-oss's Reasoning) */
} prompt_spec;

/* What the model's prompt path can do (Ollama's capabilities "tools", "insert", "thinking"):
 * the GGUF chat format's, or a Go template's by the names it uses (.Tools, .Suffix, .Think).
 * Ollama lists them as completion, tools, insert, thinking. */
typedef struct { bool tools, thinking, insert; } prompt_caps;
prompt_caps prompt_capabilities(const model *m, const char *template_go, int chat_format_override);

/* How the model's reply is split (reply_parse.h), beside the request's own switches:
 * harmony for gpt-oss (its GGUF template, or a Go TEMPLATE with <|start|> and <|channel|>,
 * Ollama's shouldUseHarmony by the template). Sets o->harmony only. */
void prompt_reply_style(const model *m, const prompt_spec *p, reply_parse_opts *o);

/* malloc'd prompt text, ending where the assistant's reply starts; NULL + anv_last_error(). */
char *prompt_build(const model *m, const prompt_spec *p);

/* base_model.c: a model without a chat template whose name has no instruct marker is a
 * base model: it runs as a completion model (Ollama's default TEMPLATE {{ .Prompt }})
 * unless the user names a format. prompt_detect_format is chat_detect with that rule
 * (CHAT_RAW for a base model); prompt_build and prompt_capabilities apply it. */
#define PROMPT_BASE_TEMPLATE "{{ .Prompt }}"
bool chat_name_is_instruct(const char *name);
bool prompt_gguf_is_base(const gguf_file *f);
bool prompt_model_is_base(const model *m);
chat_format prompt_detect_format(const model *m);
/* The control tokens a model's replies must show for its reply parser (gen_seq_config's
 * shown_specials): Ministral 3's [THINK] [/THINK] [TOOL_CALLS] [ARGS] [CALL_ID]; NULL for the rest. */
const char *const *prompt_shown_specials(const model *m);
#endif
