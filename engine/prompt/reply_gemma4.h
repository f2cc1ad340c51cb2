/* reply_gemma4: the streaming split of a Gemma 4 reply, used by reply_parse.c when
 * reply_parse_opts.gemma4 is set, as Ollama's gemma4 parser reads it:
 *   <|channel>thought\n ... <channel|>          -> thinking (dropped when thinking is off;
 *                                                 the channel name "thought\n" is cut)
 *   <|tool_call>call:NAME{key:value,..}<tool_call|>  -> a tool call; strings between <|"|>
 *                                                 delimiters, bare keys, JSON otherwise
 *                                                 (only when the request offered tools: else content)
 *   anything else                               -> content
 * Whitespace before a marker and after a closing one is dropped. After a call, stray
 * <tool_call|> and <|tool_response> markers are dropped (the model stops there or repeats
 * them). A call whose arguments are not an object even after the repairs Ollama makes comes
 * back as content, markers included, never
 * dropped (the repairs: single-quoted values, a missing closing <|"|>, a missing final },
 * a bare text value of a string parameter of the tool's schema); a reply cut inside a call
 * is parsed at the end. Markers cut by a feed boundary
 * are held back. */
#ifndef ANVIL_REPLY_GEMMA4_H
#define ANVIL_REPLY_GEMMA4_H
#include <stdbool.h>
#include <stddef.h>

#include "reply_parse.h"

typedef struct gemma4_parser gemma4_parser;

/* thinking: keep the thought channel; tools: the request offered tools (else calls are content). */
gemma4_parser *gemma4_parser_new(bool thinking, bool tools, const char *tools_json);
void gemma4_parser_free(gemma4_parser *g);
/* Appends what text completes to d (content, thinking, calls); at_end flushes. False: out of memory. */
bool gemma4_parser_feed(gemma4_parser *g, const char *text, size_t len, bool at_end, reply_delta *d);
/* reply_gemma4_args.c: the arguments of a call body ("{city:<|"|>Paris<|"|>,days:2}") as
 * compact JSON object text (malloc'd); NULL when they are not an object even after Ollama's
 * repairs (tools: the request's tools as cJSON, for the schema-gated one; may be NULL). */
struct cJSON;
char *gemma4_args_to_json(const char *body, size_t len, const char *tool_name, const struct cJSON *tools);
#endif
