/* api_json: what the Ollama and OpenAI handlers share: strict request-field readers (a
 * field of the wrong type is a 400 naming the field, in the API's own error shape),
 * RFC3339 timestamps, keep_alive parsing, and error replies in OpenAI's shape. */
#ifndef ANVIL_API_JSON_H
#define ANVIL_API_JSON_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "bytebuf.h"

#include "http.h"

/* One request being parsed. The first failure answers the request (400 by default);
 * later readers do nothing and return their defaults; the handler checks ->failed. */
typedef struct {
    http_req *r;
    bool openai;      /* errors as {"error":{"message","type","param","code"}} */
    bool failed;
} api_req;

/* Parses the body as a JSON object; NULL (and the request answered) otherwise. */
cJSON *aj_parse_body(api_req *c);
/* Answers with an error (status, the offending field or NULL) unless already failed. */
void aj_fail(api_req *c, int status, const char *param, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Readers: absent or JSON null gives the default. */
const char *aj_string(api_req *c, const cJSON *o, const char *key);      /* NULL default */
bool aj_bool(api_req *c, const cJSON *o, const char *key, bool def);
double aj_number(api_req *c, const cJSON *o, const char *key, double def);
/* An integral number in [lo, hi]. */
long long aj_int(api_req *c, const cJSON *o, const char *key, long long def, long long lo, long long hi);
const cJSON *aj_object(api_req *c, const cJSON *o, const char *key);     /* NULL default */
const cJSON *aj_array(api_req *c, const cJSON *o, const char *key);      /* NULL default */
/* A field that may be present with any type (NULL if absent or null). */
const cJSON *aj_any(const cJSON *o, const char *key);

/* keep_alive: a Go duration string or a number of seconds. Returns true if set. */
bool aj_keep_alive(api_req *c, const cJSON *o, const char *key, int64_t *ms);

/* The current time as RFC3339 with nanoseconds in UTC ("2024-05-01T12:00:00.123456789Z"). */
void aj_now_rfc3339(char buf[40]);
/* Unix time in ms as RFC3339 (local time zone offset like Go's time.Time JSON). */
void aj_ms_rfc3339(int64_t ms, char buf[48]);
int64_t aj_unix_seconds(void);

/* Adds generated text (n bytes, may hold NULs or invalid UTF-8) as a JSON string the way
 * Go's encoder writes it: NUL as \u0000, invalid UTF-8 bytes as U+FFFD. */
void aj_add_text(cJSON *o, const char *key, const char *text, size_t n);

/* Sends a cJSON object (and frees it) as a whole reply / one NDJSON line / one SSE event. */
void aj_reply(http_req *r, int status, cJSON *o);
bool aj_stream_ndjson(http_req *r, cJSON *o);
bool aj_stream_sse(http_req *r, cJSON *o);

/* "format"/response_format schema: "json", "" (none) or a JSON schema object; malloc'd
 * text ("json" or the schema) or NULL. */
char *api_parse_format(api_req *c, const cJSON *body, const char *key);
/* A string or an array of strings (embedding inputs); malloc'd list of borrowed strings. */
const char **api_parse_inputs(api_req *c, const cJSON *body, const char *key, int *n_out);

/* A growing text buffer for replies that are not streamed. */
/* Appends "[v0,v1,...]" (each float in the shortest text that reads back the same). */
void api_float_array(bytebuf *b, const float *v, int n);
#endif
