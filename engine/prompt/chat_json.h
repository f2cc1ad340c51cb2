/* chat_json: JSON written into a prompt the way the official Jinja templates write it
 * (Jinja's tojson as Hugging Face defines it: json.dumps with ensure_ascii=False, keys in
 * their order, ", " and ": " separators). Shared by the tool renderers (chat_tools.c,
 * chat_harmony.c). */
#ifndef ANVIL_CHAT_JSON_H
#define ANVIL_CHAT_JSON_H
#include <cjson/cJSON.h>

#include "bytebuf.h"

void chat_put_json_string(bytebuf *b, const char *s);
void chat_put_json(bytebuf *b, const cJSON *v);
/* A number as Python's str() writes it (what a template prints for {{ value }}): integral values
 * below 1e15 as integers, others as their shortest repr with ".0" when it has no point or
 * exponent (JSON keeps no int / float distinction). */
void chat_put_py_number(bytebuf *b, double v);
/* json.dumps(v, indent=indent) (Llama 3.1's tools | tojson(indent=4)). */
void chat_put_json_indent(bytebuf *b, const cJSON *v, int indent);
#endif
