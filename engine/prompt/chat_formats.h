/* chat_formats: llama.cpp's built-in chat formats, by llama.cpp's names (llama_chat_builtin_
 * templates), as a table rendered by one interpreter (chat_formats.c). */
#ifndef ANVIL_CHAT_FORMATS_H
#define ANVIL_CHAT_FORMATS_H
#include <stdbool.h>

#include "chat.h"

int chat_builtin_count(void);
const char *chat_builtin_name(int i);       /* NULL out of range */
int chat_builtin_find(const char *name);    /* index by llama.cpp's name; -1 if none */
/* The conversation in format i as llama.cpp's llm_chat_apply_template renders it (roles a
 * format lacks are dropped, as there); malloc'd text, NULL + anv_set_error on bad input. */
char *chat_builtin_render(int i, const chat_message *msgs, int n, bool add_ass);
/* The llama.cpp name of the format a Jinja template (or a bare name) is, by llama.cpp's
 * markers in its order; NULL when none matches. */
const char *chat_builtin_detect(const char *template_text);
#endif
