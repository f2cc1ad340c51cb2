/* reply_parse: splits a model's reply, as it streams, into content, thinking and tool
 * calls, the way Ollama's parsers do for the families Anvil renders:
 *   thinking   <think> ... </think> (Qwen 3, DeepSeek R1, ...); the reply may start inside
 *              it when the prompt opened the tag (start_in_thinking); leading whitespace
 *              after </think> is dropped;
 *   tool calls <tool_call>{"name": .., "arguments": {..}}</tool_call> (Qwen / Hermes),
 *              [TOOL_CALLS][{"name": .., "arguments": {..}}, ..] (Mistral), [TOOL_CALLS]name[ARGS]{..}
 *              (Ministral 3, Magistral, Devstral 2; [CALL_ID]id before [ARGS]: Mistral Small
 *              3.2), one [TOOL_CALLS] per call, and a reply
 *              that is only a JSON object {"name": .., "parameters"|"arguments": {..}} or
 *              an array of them (Llama 3.x, and Ollama's fallback for any template).
 *              Qwen3-Coder / Qwen 3.5's XML form inside the same tags:
 *              <tool_call>\n<function=NAME>\n<parameter=K>\nvalue\n</parameter>..</function>
 *              (reply_xml_call.c; values typed by the request's tool schema);
 *   harmony    gpt-oss's channels (analysis: thinking, final: content, commentary to=
 *              functions.NAME: a call), reply_harmony.c;
 *   gemma4     Gemma 4's <|channel>thought..<channel|> and <|tool_call>call:NAME{..}<tool_call|>,
 *              reply_gemma4.c;
 *   qwen35     Qwen 3.5: the prompt opened <think> (start_in_thinking), a repeated leading <think>
 *              is dropped, and a <tool_call> before </think> ends the thinking (as Ollama's
 *              qwen3.5 parser).
 * Bytes that might begin a marker are held back until they cannot; a reply that starts
 * like a JSON tool call is held to the end and becomes content if it is not one. Text in
 * a tag that is not a valid call is returned as content, never dropped. */
#ifndef ANVIL_REPLY_PARSE_H
#define ANVIL_REPLY_PARSE_H
#include <stdbool.h>
#include <stddef.h>

#include "bytebuf.h"

typedef struct {
    bool thinking;           /* split <think> ... </think> out of the content */
    bool start_in_thinking;  /* the prompt ends inside <think> (the reply is thinking first) */
    bool tools;              /* the request offered tools: parse calls */
    bool harmony;            /* gpt-oss: the reply is harmony messages (reply_harmony.h); the
                                analysis channel is thinking whatever .thinking says */
    char tool_tag[32];       /* a Go TEMPLATE's tool tag (gotmpl_tool_tag): the text after it, to
                                the end, is a call object, an array or a run of them ("" or "{":
                                only the built-in markers and a reply that is JSON) */
    char think_open[32], think_close[32];   /* a Go TEMPLATE's thinking tags (gotmpl_think_tags)
                                instead of <think> </think>; both or neither */
    bool gemma4;             /* Gemma 4's channels and calls (reply_gemma4.h) */
    bool qwen35;             /* Qwen 3.5's thinking rules (above) */
    const char *tools_json;  /* the request's tools (copied; NULL: none): XML call values typed by them */
} reply_parse_opts;

typedef struct {
    char *name;              /* malloc'd */
    char *arguments;         /* malloc'd JSON object text */
} reply_tool_call;

/* What one feed (or the finish) produced: the caller sends it and resets it. */
typedef struct {
    bytebuf content, thinking;
    reply_tool_call *calls;
    int n_calls, cap_calls;
} reply_delta;

typedef struct reply_parser reply_parser;

reply_parser *reply_parser_new(const reply_parse_opts *o);
void reply_parser_free(reply_parser *p);
/* Appends to d what text (a piece of the reply) completes; false when out of memory. */
bool reply_parser_feed(reply_parser *p, const char *text, size_t len, reply_delta *d);
/* The end of the reply: flushes what was held (a trailing JSON call is parsed here). */
bool reply_parser_finish(reply_parser *p, reply_delta *d);
/* Every tool call found so far (the whole reply's, after finish). */
int reply_parser_n_calls(const reply_parser *p);

void reply_delta_reset(reply_delta *d);   /* empties it for the next feed, keeps buffers */
/* Appends a tool call (copies of name and args); false when out of memory. */
bool reply_delta_add_call(reply_delta *d, const char *name, const char *args);
void reply_delta_free(reply_delta *d);
#endif
