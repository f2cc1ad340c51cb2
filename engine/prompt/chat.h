/* chat: renders a conversation into the prompt text a model was trained on. Formats are
 * detected from tokenizer.chat_template (Jinja text, matched by its markers) and the
 * architecture: Gemma, Llama 3, ChatML (Qwen), Mistral/Llama 2 [INST], or raw. */
#ifndef ANVIL_CHAT_H
#define ANVIL_CHAT_H
#include <stdbool.h>

typedef enum {
    CHAT_RAW = 0, CHAT_GEMMA, CHAT_LLAMA3, CHAT_CHATML, CHAT_MISTRAL, CHAT_LLAMA2,
    CHAT_PHI3, CHAT_PHI4, CHAT_DEEPSEEK3,
    CHAT_MINISTRAL3,   /* Ministral 3's official template (chat_ministral3.c), always with extras */
    CHAT_GEMMA4,       /* Gemma 4's official templates (chat_gemma4.c) */
    CHAT_QWEN35,       /* Qwen 3.5 / 3.6's official template (chat_qwen35.c) */
    /* CHAT_BUILTIN + i: llama.cpp's built-in format i of chat_formats.c's table (the names
     * llama_chat_builtin_templates lists: command-r, granite, exaone4, gpt-oss, llama4, ..) */
    CHAT_BUILTIN = 64
} chat_format;

/* role: system/user/assistant/tool. The rest may be NULL: thinking (an assistant turn's
 * reasoning), tool_calls (JSON array text, Ollama's [{"function": {"name": .., "arguments":
 * {..}}}]), tool_name (a tool result's function). */
typedef struct {
    const char *role;
    const char *content;
    const char *thinking;
    const char *tool_calls;
    const char *tool_name;
} chat_message;

/* The request's think switch: unset (0, the model's default), off, on, or on at a level
 * (gpt-oss's "Reasoning: low|medium|high"; other families treat a level as on). */
enum { CHAT_THINK_DEFAULT = 0, CHAT_THINK_OFF, CHAT_THINK_ON, CHAT_THINK_LOW, CHAT_THINK_MEDIUM, CHAT_THINK_HIGH };
#define CHAT_THINK_IS_ON(t) ((t) >= CHAT_THINK_ON)

/* What a request adds to the conversation (chat_tools.c). */
typedef struct {
    const char *tools_json;  /* NULL or a JSON array of {"type":"function","function":{..}} */
    int think;               /* CHAT_THINK_* */
    const char *date;        /* "Current date"/"Today Date" (YYYY-MM-DD); NULL = today (local time) */
    const char *template_text;   /* the GGUF's Jinja template, NULL if none (Llama 3.2 dates its prompt) */
} chat_extras;

/* What a format can do beyond plain turns. */
bool chat_format_has_tools(chat_format f, const char *template_text);
bool chat_format_has_thinking(chat_format f, const char *template_text, const char *arch);
/* chat_apply with tools, tool calls, tool results and the think switch, each rendered as
 * the family's official template does (ChatML: Qwen 2.5 / Qwen 3 / Hermes; gpt-oss:
 * harmony, always, chat_harmony.c; Llama 3.x; Mistral). A format
 * without tools given tools is an error; x NULL is chat_apply. */
char *chat_apply_ex(chat_format f, const chat_message *msgs, int n_msgs, bool add_assistant, const chat_extras *x);

/* True for llama.cpp's built-in "gpt-oss" format: the harmony prompt and reply format. */
bool chat_format_is_harmony(chat_format f);
/* The harmony rendering of gpt-oss's official template (chat_harmony.c). */
char *chat_harmony_render(const chat_message *msgs, int n, bool add_assistant, const chat_extras *x);

/* Llama 3.x and Mistral (v3 or tekken) with tools (chat_tools_families.c). */
char *chat_llama3_tools_render(const chat_message *msgs, int n, bool add_assistant, const chat_extras *x);
char *chat_mistral_tools_render(const chat_message *msgs, int n, bool tekken, const chat_extras *x);

/* Ministral 3 (mistral3) as its official template renders: [SYSTEM_PROMPT] (the template's
 * default when the conversation has none), [AVAILABLE_TOOLS], [TOOL_CALLS]name[ARGS]args
 * (chat_ministral3.c). x may be NULL (no tools, no default system prompt). */
char *chat_ministral3_render(const chat_message *msgs, int n, const chat_extras *x);
/* True when the template's default system prompt asks for [THINK]..[/THINK] (Reasoning models). */
bool chat_ministral3_thinks(const char *template_text);

/* Gemma 4 (chat_gemma4.c): the current template, or the older interleaved one when
 * x->template_text is that one; x may be NULL (no tools, thinking off). */
char *chat_gemma4_render(const chat_message *msgs, int n, bool add_assistant, const chat_extras *x);
/* Qwen 3.5 / 3.6 (chat_qwen35.c); x may be NULL (no tools, thinking on: the template's default). */
char *chat_qwen35_render(const chat_message *msgs, int n, bool add_assistant, const chat_extras *x);

/* Picks the format: from the template text if given (NULL/"" if the GGUF has none),
 * else from the architecture name ("gemma3" -> Gemma, "qwen2"/"qwen3" -> ChatML, ...). */
chat_format chat_detect(const char *template_text, const char *arch);
/* True when the model has a template that no format recognises (chat_detect then fell
 * back to the architecture's format): say so rather than guess silently. */
bool chat_template_unrecognised(const char *template_text);
const char *chat_format_name(chat_format f);
/* Parses a name given by the user ("gemma", "llama3", "chatml", "mistral", "llama2", "raw"); -1 if unknown. */
int chat_format_from_name(const char *name);
/* Renders messages; with add_assistant the text ends where the model's reply starts.
 * The BOS token is NOT included (the tokenizer adds it). Returns malloc'd text. */
char *chat_apply(chat_format f, const chat_message *msgs, int n_msgs, bool add_assistant);
#endif
