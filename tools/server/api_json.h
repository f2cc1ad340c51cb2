/* api_json: what the Ollama and OpenAI handlers share: the one set of request-field
 * readers (a field of the wrong type is a 400 naming the field, worded the same on every
 * route, in the API's own error envelope from api_error.h), replies and streams (NDJSON
 * for Ollama, SSE for OpenAI; an error after a stream began goes into it), and the runs
 * of a generation (its text on the way to the client) and of an embedding request. */
#ifndef ANVIL_API_JSON_H
#define ANVIL_API_JSON_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "bytebuf.h"

#include "http.h"
#include "reply_parse.h"
#include "scheduler.h"

struct api_images;

/* One request being answered. The first failure answers it (400 by default); later
 * readers do nothing and return their defaults; the handler checks ->failed. */
typedef struct {
    http_req *r;
    bool openai;      /* OpenAI's error envelope, streams as SSE (else Ollama's, NDJSON) */
    bool anthropic;   /* Anthropic's error envelope (api_error_anthropic) instead */
    bool sse_named;   /* SSE events named after their object's "type" ("event: <type>" before
                         "data:"), the stream ends without "data: [DONE]" (Anthropic's
                         Messages and OpenAI's Responses streams) */
    bool stream;      /* the answer is a stream of objects (aj_send) */
    bool begun;       /* the stream has begun (status 200 sent): errors go into it */
    bool failed;
    struct api_images *images;   /* the request's images (api_images.h), on the routes that take
                                    them; NULL elsewhere (an image there is a 400) */
} api_req;

/* Parses the body as a JSON object; NULL (and the request answered) otherwise. */
cJSON *aj_parse_body(api_req *c);
/* Answers with an error (status, the offending field or NULL) unless already failed: a
 * whole reply, or once the stream has begun, its last item (and the stream ends). */
void aj_fail(api_req *c, int status, const char *param, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The check under every reader. v is a value as found (NULL: absent); returned when it
 * has type t, NULL when absent or JSON null; anything else fails the request with 400
 * "invalid value for field '<field>': expected a string" (an object, an array, a number,
 * true or false), param field. */
typedef enum { AJ_STRING, AJ_BOOL, AJ_NUMBER, AJ_OBJECT, AJ_ARRAY } aj_type;
const cJSON *aj_check(api_req *c, const cJSON *v, const char *field, aj_type t);
/* The same for a value that must be there: absent or null fails with the same message. */
const cJSON *aj_need(api_req *c, const cJSON *v, const char *field, aj_type t);

/* Readers of the field key of o (a NULL o has no fields), checked as aj_check; absent or
 * JSON null gives the default. */
const char *aj_string(api_req *c, const cJSON *o, const char *key);      /* NULL default */
bool aj_bool(api_req *c, const cJSON *o, const char *key, bool def);
double aj_number(api_req *c, const cJSON *o, const char *key, double def);
/* An integral number in [lo, hi]. */
long long aj_int(api_req *c, const cJSON *o, const char *key, long long def, long long lo, long long hi);
const cJSON *aj_object(api_req *c, const cJSON *o, const char *key);     /* NULL default */
const cJSON *aj_array(api_req *c, const cJSON *o, const char *key);      /* NULL default */
/* A field that may be present with any type (NULL if absent or null). */
const cJSON *aj_any(const cJSON *o, const char *key);
/* A string or an array of strings (embedding inputs, stop strings, a license): malloc'd
 * list of borrowed strings (NULL when absent), the count in *n_out. */
const char **aj_strings(api_req *c, const cJSON *o, const char *key, int *n_out);
/* The model a request names, required: "model", or with or_name (Ollama's model
 * routes) the legacy "name" when "model" is absent or empty; both must be strings. Names
 * the model in the request's log line. NULL + failure without one. */
const char *aj_model(api_req *c, const cJSON *body, bool or_name);
/* The "role" of the chat message msg (field names it in errors, "messages[2]"): system,
 * user, assistant or tool (OpenAI's "developer" is system). NULL + failure otherwise. */
const char *aj_role(api_req *c, const cJSON *msg, const char *field);
/* keep_alive: a Go duration string or a number of seconds. Returns true if set. */
bool aj_keep_alive(api_req *c, const cJSON *o, const char *key, int64_t *ms);
/* "format"/response_format schema: "json", "" (none) or a JSON schema object; malloc'd
 * text ("json" or the schema) or NULL. */
char *aj_format(api_req *c, const cJSON *body, const char *key);

/* Sends a cJSON object (and frees it) as a whole reply. */
void aj_reply(http_req *r, int status, cJSON *o);
/* One object of the answer (freed): the whole 200 reply, or in a stream (begun here if it
 * has not) an NDJSON line or SSE event. False once the client has gone. */
bool aj_send(api_req *c, cJSON *o);
/* Begins the stream (status 200) unless it has begun. */
void aj_begin(api_req *c);
/* Ends a stream that has begun (OpenAI's with "data: [DONE]"). */
void aj_end(api_req *c);

/* A generation request and its answer on the way to the client. The reply goes through
 * a reply parser (reply_parse.h: content, thinking, tool calls); what each piece yields
 * is gathered in ->text / ->thinking / ->calls for one reply, or sent at once as the
 * object ->chunk builds when c->stream. g may start a larger struct that the chunk
 * builder casts to. */
typedef struct aj_gen aj_gen;
struct aj_gen {
    api_req *c;
    cJSON *(*chunk)(const aj_gen *g, const reply_delta *d);
    /* Instead of chunk when set: sends what d holds as any number of events (an API whose
     * stream is blocks that open and close); false once the client has gone. */
    bool (*emit)(aj_gen *g, const reply_delta *d);
    sched_gen_request q;
    chat_message *msgs;   /* q.messages, each string malloc'd (aj_messages) */
    int n_msgs;
    char *format;         /* q.format when the handler sets it, malloc'd */
    char *tools_json;     /* q.tools_json (aj_tools), malloc'd */
    bytebuf text, thinking;
    cJSON *calls;         /* every tool call of the reply: [{"id", "function": {"index", "name", "arguments"}}] */
    reply_parser *rp;
    reply_parse_opts style;   /* the model's reply format (harmony or not), set by the scheduler */
    reply_delta dl;
    sched_result res;
    /* logprobs (Ollama's and OpenAI's "logprobs" / "top_logprobs"): asked for, how many
     * alternatives, and the entries not yet sent ({"token", "logprob", "bytes", "top_logprobs"});
     * aj_take_logprobs hands them to the chunk or final object being built */
    bool want_logprobs;
    bool logprobs_legacy;     /* /v1/completions: "logprobs": N, answered in the legacy shape */
    int top_logprobs;
    cJSON *logprobs;
    size_t logprobs_offset;   /* the legacy shape's text_offset of the next token */
};
/* "logprobs" (bool) and "top_logprobs" (0..20, Ollama's and OpenAI's limit) into g. */
void aj_logprobs_request(aj_gen *g, const cJSON *body);
/* The pending logprob entries (a JSON array, NULL when none or not asked), now the caller's. */
cJSON *aj_take_logprobs(aj_gen *g);
/* Moves the pending entries into o, a chunk or final object: Ollama's "logprobs" array, or
 * OpenAI's choices[0].logprobs {"content": [...]} (a chat) / the legacy completion's shape. */
void aj_attach_logprobs(aj_gen *g, cJSON *o);
/* "tools": an array of {"type": "function", "function": {"name", ...}} into g->q. */
void aj_tools(aj_gen *g, const cJSON *body);
/* "think" (Ollama: true/false or "low"|"medium"|"high"|"max") or OpenAI's
 * "reasoning_effort" ("none" is off) into g->q.think. */
void aj_think(aj_gen *g, const cJSON *body);
/* A tool call's id ("call_" + 8 hex), as OpenAI and Ollama give them. */
void aj_call_id(char out[16]);
/* The chat messages in array arr (field "messages") into g->q: each an object with a
 * role (aj_role) and the content text_of gives for it (malloc'd; NULL + failure). */
void aj_messages(aj_gen *g, const cJSON *arr, char *(*text_of)(api_req *c, const cJSON *msg, const char *field));
/* A message's thinking ("thinking", OpenAI's "reasoning_content"), tool_calls (Ollama's
 * arguments objects, or OpenAI's JSON-text arguments; stored in Ollama's shape) and
 * tool_name, malloc'd into m (api_tools.c). False + failure on a malformed one. */
bool aj_message_extras(api_req *c, const cJSON *msg, const char *field, chat_message *m);
/* Runs g->q (first its images, c->images: api_images_ready). True when it finished (the statistics in g->res); false when it failed, the
 * request answered with its error (into the stream if it began). */
bool aj_generate(aj_gen *g);
void aj_gen_clear(aj_gen *g);

/* An embedding request and its answer. */
typedef struct {
    api_req *c;
    sched_embed_request q;   /* q.inputs: the list aj_embed_inputs made */
    sched_embed_result res;
} aj_embed;
/* The texts to embed: field key of body (aj_strings) into e->q. */
void aj_embed_inputs(aj_embed *e, const cJSON *body, const char *key);
/* Runs e->q. True when done (the vectors in e->res); false when it failed, the request
 * answered with its error. */
bool aj_embed_run(aj_embed *e);
void aj_embed_clear(aj_embed *e);

int64_t aj_unix_seconds(void);

/* Adds generated text (n bytes, may hold NULs or invalid UTF-8) as a JSON string the way
 * Go's encoder writes it: NUL as \u0000, invalid UTF-8 bytes as U+FFFD. */
void aj_add_text(cJSON *o, const char *key, const char *text, size_t n);
/* Appends "[v0,v1,...]" (each float in the shortest text that reads back the same). */
void api_float_array(bytebuf *b, const float *v, int n);
#endif
