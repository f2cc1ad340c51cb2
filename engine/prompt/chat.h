/* chat: renders a conversation into the prompt text a model was trained on. Formats are
 * detected from tokenizer.chat_template (Jinja text, matched by its markers) and the
 * architecture: Gemma, Llama 3, ChatML (Qwen), Mistral/Llama 2 [INST], or raw. */
#ifndef ANVIL_CHAT_H
#define ANVIL_CHAT_H
#include <stdbool.h>

typedef enum { CHAT_RAW = 0, CHAT_GEMMA, CHAT_LLAMA3, CHAT_CHATML, CHAT_MISTRAL, CHAT_LLAMA2 } chat_format;

typedef struct { const char *role; const char *content; } chat_message; /* role: system/user/assistant */

/* Picks the format: from the template text if given (NULL/"" if the GGUF has none),
 * else from the architecture name ("gemma3" -> Gemma, "qwen2"/"qwen3" -> ChatML, ...). */
chat_format chat_detect(const char *template_text, const char *arch);
const char *chat_format_name(chat_format f);
/* Parses a name given by the user ("gemma", "llama3", "chatml", "mistral", "llama2", "raw"); -1 if unknown. */
int chat_format_from_name(const char *name);
/* Renders messages; with add_assistant the text ends where the model's reply starts.
 * The BOS token is NOT included (the tokenizer adds it). Returns malloc'd text. */
char *chat_apply(chat_format f, const chat_message *msgs, int n_msgs, bool add_assistant);
#endif
