/* reply_xml_call: one Qwen3-Coder / Qwen 3.5 XML tool call, the text inside
 * <tool_call>..</tool_call>, as Ollama's qwen3coder parser reads it:
 *   <function=NAME>
 *   <parameter=KEY>
 *   value (one leading and one trailing newline cut)
 *   </parameter>
 *   </function>
 * Values are typed by the request's tool schema (parameters.properties.KEY.type, or the
 * types of its anyOf): "null" (any case) is null; boolean, integer, number, array, object
 * in that order of preference when the value parses as one; else the text. A parameter the
 * schema does not know is text. Text between the tags is ignored; a later parameter of the
 * same name replaces the earlier one. */
#ifndef ANVIL_REPLY_XML_CALL_H
#define ANVIL_REPLY_XML_CALL_H
#include <stddef.h>

/* The call's arguments as compact JSON object text (malloc'd) and its name in *name
 * (malloc'd); NULL when the text is not such a call (no <function=NAME>, an unclosed tag)
 * or out of memory (*oom set). tools_json may be NULL (every value text). */
char *xml_call_parse(const char *text, size_t n, const char *tools_json, char **name, int *oom);
#endif
