/* client: the anvil CLI as a client of a running `anvil serve` (or Ollama) over its
 * HTTP API, with libcurl and cJSON. The server address is $ANVIL_HOST like the server
 * reads it ("127.0.0.1:11434" by default; "0.0.0.0" and "::" mean this machine; an
 * optional http:// or https:// scheme). Every function that fails sets anv_last_error()
 * to one line; a server that does not answer gives
 * "could not connect to a running anvil server at HOST:PORT (start one with 'anvil serve')".
 *
 * How `anvil run MODEL [PROMPT]` uses it (cmd_run.c):
 *     if (client_server_up()) {
 *         client_gen_request q = {.model = name, .prompt = prompt, .on_text = print_piece};
 *         client_gen_result res;
 *         int rc = client_generate(&q, &res);   // or client_chat with .messages
 *         ... res.eval_count, res.eval_ns ... (--verbose timings)
 *         client_gen_result_clear(&res);
 *     } else { ...load the model in-process as before... }
 */
#ifndef ANVIL_CLIENT_H
#define ANVIL_CLIENT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "chat.h"
#include "cli_images.h"

/* "http://127.0.0.1:11434" (no trailing slash) and the "127.0.0.1:11434" form errors name. */
void client_base_url(char *url, size_t url_cap, char *display, size_t display_cap);

/* True if a server answers GET /api/version within about a second. */
bool client_server_up(void);

/* One request with an optional JSON body. Returns the HTTP status (the reply body in
 * *reply, malloc'd and NUL-terminated, if reply is not NULL), or -1 + anv_last_error()
 * when the server can't be reached. */
int client_request(const char *method, const char *path, const char *json_body, char **reply);

/* For a non-2xx reply: Ollama's {"error": "..."} message, else the body (malloc'd). */
char *client_error_message(int status, const char *reply);

/* Called with each piece of the reply text as it streams; return false to stop (the
 * request is then cancelled: the server sees the client go). */
typedef bool (*client_text_fn)(const char *text, size_t len, void *user);

typedef struct {
    const char *model;               /* required */
    const char *prompt;              /* client_generate: the prompt ("" or NULL: load only) */
    const chat_message *messages;    /* client_chat: the conversation so far */
    const cli_image_list *images;    /* client_chat: messages[i]'s image files (NULL: none), sent base64 */
    int n_messages;
    const char *system;              /* NULL = the model's SYSTEM */
    const char *options_json;        /* Ollama's options object as JSON text, or NULL */
    const char *keep_alive;          /* "5m", "0", "-1", seconds as text; NULL = the server's */
    const char *format;              /* NULL, "json", or a JSON schema as text */
    bool raw;                        /* generate: no template */
    client_text_fn on_text;          /* may be NULL (the text is still collected) */
    client_text_fn on_thinking;      /* the reply's "thinking" pieces; may be NULL */
    int think;                       /* CHAT_THINK_*: sent as "think" unless the default */
    void *user;
} client_gen_request;

typedef struct {
    char *text;                      /* the whole reply text (malloc'd, "" if none) */
    char done_reason[32];            /* "stop", "length", "load", "unload"; "cancelled" if on_text stopped */
    char model[256];
    int prompt_eval_count, eval_count;
    int64_t total_ns, load_ns, prompt_eval_ns, eval_ns;   /* Ollama's durations */
    int http_status;                 /* 200, or the failing request's status (0: no server) */
} client_gen_result;

/* POST /api/generate (streamed). Returns 0, or -1 + anv_last_error() (the server's error
 * message, or the connection failure). A stop from on_text is a success. */
int client_generate(const client_gen_request *q, client_gen_result *res);
/* POST /api/chat (streamed); the same contract. */
int client_chat(const client_gen_request *q, client_gen_result *res);
void client_gen_result_clear(client_gen_result *res);

/* ---- the store commands as clients (cmd_remote.c) ---- */

/* True when ANVIL_HOST or OLLAMA_HOST is set: list, show, rm, cp, pull and create then act on
 * that server's store through its API, as Ollama's CLI always does, instead of the local one. */
bool client_store_remote(void);
/* A streamed NDJSON request: fn gets each object line (return false to stop). Returns the HTTP
 * status, or -1 + anv_last_error() when the server cannot be reached; an {"error": ...} line
 * or a non-2xx reply is -1 with its message. */
struct cJSON;
typedef bool (*client_json_fn)(const struct cJSON *obj, void *user);
int client_stream_json(const char *method, const char *path, const char *json_body, client_json_fn fn, void *user);
/* POST path with the file's bytes as the body (a blob upload). Returns the HTTP status (the
 * reply in *reply, malloc'd) or -1 + anv_last_error(). */
int client_upload_file(const char *path, const char *file, char **reply);
#endif
