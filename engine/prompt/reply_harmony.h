/* reply_harmony: the streaming split of a gpt-oss (harmony) reply, used by reply_parse.c
 * when reply_parse_opts.harmony is set. The reply continues the prompt's
 * "<|start|>assistant" with messages:
 *   <|channel|>analysis<|message|>...<|end|>                       -> thinking
 *   <|start|>assistant<|channel|>final<|message|>...               -> content
 *   <|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{..}
 *                                                                  -> a tool call (with tools)
 * (the recipient may also stand before <|channel|>; <|return|> and <|call|> end the
 * generation, so a reply usually stops without them). Any recipient makes the message a
 * call, on any channel (Ollama's harmonyparser.go; "functions." is cut from the name, a
 * built-in like browser.search keeps its); commentary without one is content (a preamble); a call whose arguments are not a JSON object, and every call when
 * the request had no tools, come back as content; a reply that does not start like a
 * harmony header is content as it is. Markers cut by a feed boundary are held back. */
#ifndef ANVIL_REPLY_HARMONY_H
#define ANVIL_REPLY_HARMONY_H
#include <stdbool.h>
#include <stddef.h>

#include "reply_parse.h"

typedef struct harmony_parser harmony_parser;

harmony_parser *harmony_parser_new(bool tools);
void harmony_parser_free(harmony_parser *h);
/* Appends what text completes to d (content, thinking, calls); at_end flushes. False: out of memory. */
bool harmony_parser_feed(harmony_parser *h, const char *text, size_t len, bool at_end, reply_delta *d);
#endif
