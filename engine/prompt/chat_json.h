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
/* json.dumps(v, indent=indent) (Llama 3.1's tools | tojson(indent=4)). */
void chat_put_json_indent(bytebuf *b, const cJSON *v, int indent);
#endif
