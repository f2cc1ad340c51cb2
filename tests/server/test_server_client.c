/* test_server_client: the CLI's server client (tools/cli/client.c)
 * against a scripted server on the HTTP layer (tools/server/http.c): $ANVIL_HOST forms,
 * client_server_up, streamed generate and chat with their stats, pieces to the callback,
 * cancelling from the callback, HTTP errors, errors in the stream, a stream cut short,
 * and the one-line error when no server runs. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "client.h"
#include "error.h"
#include "http.h"
#include "testutil.h"

/* ---------------------------------------------------------------- scripted server */

static void fake_version(http_req *r) { http_reply_json(r, 200, "{\"version\":\"9.9.9\"}"); }

static void stream_lines(http_req *r, const char *const *lines, int n) {
    http_stream_begin(r, 200, "application/x-ndjson");
    for (int i = 0; i < n; i++) {
        char buf[512];
        int len = snprintf(buf, sizeof buf, "%s\n", lines[i]);
        if (!http_stream_write(r, buf, (size_t)len)) break;
    }
    http_stream_end(r);
}

/* Model names choose the script: "ok", "missing" (404), "midfail" (error in the stream),
 * "cut" (no final done line). */
static void fake_generate(http_req *r) {
    size_t len = 0;
    const char *body = http_body(r, &len);
    cJSON *req = cJSON_ParseWithLength(body, len);
    const char *model = cJSON_GetStringValue(cJSON_GetObjectItem(req, "model"));
    const char *prompt = cJSON_GetStringValue(cJSON_GetObjectItem(req, "prompt"));
    bool stream = cJSON_IsTrue(cJSON_GetObjectItem(req, "stream"));
    const cJSON *opts = cJSON_GetObjectItem(req, "options");
    const cJSON *ka = cJSON_GetObjectItem(req, "keep_alive");
    bool raw = cJSON_IsTrue(cJSON_GetObjectItem(req, "raw"));
    if (!model || !prompt || !stream) {
        http_reply_error(r, 400, "bad request: model %s prompt %s stream %d", model ? "set" : "missing",
                         prompt ? "set" : "missing", stream);
    } else if (!strcmp(model, "missing")) {
        http_reply_error(r, 404, "model '%s' not found", model);
    } else if (!strcmp(model, "midfail")) {
        const char *lines[] = {"{\"model\":\"midfail\",\"response\":\"partial\",\"done\":false}",
                               "{\"error\":\"the model crashed\"}"};
        stream_lines(r, lines, 2);
    } else if (!strcmp(model, "cut")) {
        const char *lines[] = {"{\"model\":\"cut\",\"response\":\"a\",\"done\":false}"};
        stream_lines(r, lines, 1);
    } else {
        /* echoes what it got in the text so the test can see the request */
        char echo[256];
        snprintf(echo, sizeof echo, "{\"model\":\"%s\",\"response\":\"[%s|%s|%s|%s]\",\"done\":false}", model, prompt,
                 cJSON_IsNumber(cJSON_GetObjectItem(opts, "num_predict")) ? "np" : "-",
                 cJSON_IsNumber(ka) ? "ka-num" : cJSON_IsString(ka) ? ka->valuestring : "-", raw ? "raw" : "tmpl");
        const char *lines[] = {
            echo,
            "{\"model\":\"ok\",\"response\":\"Hel\",\"done\":false}",
            "{\"model\":\"ok\",\"response\":\"lo \\u00e9\",\"done\":false}",
            "{\"model\":\"ok\",\"response\":\"\",\"done\":true,\"done_reason\":\"length\",\"total_duration\":5000,"
            "\"load_duration\":1000,\"prompt_eval_count\":7,\"prompt_eval_duration\":2000,\"eval_count\":3,"
            "\"eval_duration\":1500}",
        };
        stream_lines(r, lines, 4);
    }
    cJSON_Delete(req);
}

static void fake_chat(http_req *r) {
    size_t len = 0;
    const char *body = http_body(r, &len);
    cJSON *req = cJSON_ParseWithLength(body, len);
    const cJSON *msgs = cJSON_GetObjectItem(req, "messages");
    const char *sys = cJSON_GetStringValue(cJSON_GetObjectItem(req, "system"));
    char first[256];
    snprintf(first, sizeof first,
             "{\"model\":\"ok\",\"message\":{\"role\":\"assistant\",\"content\":\"%d msgs, last %s, system %s. \"},\"done\":false}",
             cJSON_GetArraySize(msgs),
             cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1), "role")),
             sys ? sys : "-");
    const char *lines[] = {
        first,
        "{\"model\":\"ok\",\"message\":{\"role\":\"assistant\",\"content\":\"Bye\"},\"done\":false}",
        "{\"model\":\"ok\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"done_reason\":\"stop\","
        "\"eval_count\":2,\"prompt_eval_count\":11}",
    };
    stream_lines(r, lines, 3);
    cJSON_Delete(req);
}

/* ---------------------------------------------------------------- tests */

typedef struct { char text[1024]; int pieces; int stop_after; } sink;

static bool collect(const char *text, size_t len, void *user) {
    sink *s = user;
    size_t have = strlen(s->text);
    snprintf(s->text + have, sizeof s->text - have, "%.*s", (int)len, text);
    s->pieces++;
    return !s->stop_after || s->pieces < s->stop_after;
}

static void test_base_url(void) {
    static const struct { const char *env, *url, *display; } cases[] = {
        {NULL, "http://127.0.0.1:11434", "127.0.0.1:11434"},
        {"0.0.0.0:8080", "http://127.0.0.1:8080", "127.0.0.1:8080"},
        {"0.0.0.0", "http://127.0.0.1:11434", "127.0.0.1:11434"},
        {":9000", "http://127.0.0.1:9000", "127.0.0.1:9000"},
        {"http://example.com", "http://example.com:80", "example.com:80"},
        {"https://example.com:8443/ollama", "https://example.com:8443", "example.com:8443"},
        {"[::]:11434", "http://[::1]:11434", "[::1]:11434"},
        {"[fe80::1]:5", "http://[fe80::1]:5", "[fe80::1]:5"},
        {"localhost", "http://localhost:11434", "localhost:11434"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].env) setenv("ANVIL_HOST", cases[i].env, 1);
        else unsetenv("ANVIL_HOST");
        char url[256], display[256];
        client_base_url(url, sizeof url, display, sizeof display);
        CHECKF(!strcmp(url, cases[i].url) && !strcmp(display, cases[i].display), "ANVIL_HOST=%s: %s %s",
               cases[i].env ? cases[i].env : "(unset)", url, display);
    }
}

static void test_generate(void) {
    sink s = {0};
    client_gen_request q = {.model = "ok", .prompt = "Hi", .options_json = "{\"num_predict\":3}", .keep_alive = "5m",
                            .raw = true, .on_text = collect, .user = &s};
    client_gen_result res;
    CHECKF(client_generate(&q, &res) == 0, "%s", anv_last_error());
    CHECKF(!strcmp(res.text, "[Hi|np|5m|raw]Hello \xc3\xa9"), "%s", res.text);
    CHECK(!strcmp(s.text, res.text) && s.pieces == 3);
    CHECK(!strcmp(res.done_reason, "length") && !strcmp(res.model, "ok"));
    CHECK(res.prompt_eval_count == 7 && res.eval_count == 3 && res.total_ns == 5000 && res.load_ns == 1000
          && res.prompt_eval_ns == 2000 && res.eval_ns == 1500 && res.http_status == 200);
    client_gen_result_clear(&res);
    CHECK(res.text == NULL);

    q.keep_alive = "0";   /* a number of seconds goes as a JSON number */
    q.raw = false;
    q.on_text = NULL;
    CHECK(client_generate(&q, &res) == 0);
    CHECKF(!strncmp(res.text, "[Hi|np|ka-num|tmpl]", 19), "%s", res.text);
    client_gen_result_clear(&res);

    sink stop = {.stop_after = 2};   /* cancel after the second piece */
    q.on_text = collect;
    q.user = &stop;
    CHECK(client_generate(&q, &res) == 0);
    CHECKF(!strcmp(res.done_reason, "cancelled") && stop.pieces == 2, "%s %d", res.done_reason, stop.pieces);
    client_gen_result_clear(&res);

    q.on_text = NULL;
    q.model = "missing";
    CHECK(client_generate(&q, &res) == -1 && res.http_status == 404);
    CHECKF(!strcmp(anv_last_error(), "model 'missing' not found"), "%s", anv_last_error());
    client_gen_result_clear(&res);

    q.model = "midfail";
    CHECK(client_generate(&q, &res) == -1);
    CHECKF(!strcmp(anv_last_error(), "the model crashed"), "%s", anv_last_error());
    client_gen_result_clear(&res);

    q.model = "cut";
    CHECK(client_generate(&q, &res) == -1);
    CHECKF(strstr(anv_last_error(), "without a final 'done'") != NULL, "%s", anv_last_error());
    client_gen_result_clear(&res);

    q.model = "";
    CHECK(client_generate(&q, &res) == -1 && res.text == NULL);
}

static void test_chat(void) {
    chat_message msgs[] = {{.role = "user", .content = "hello"}, {.role = "assistant", .content = "hi!"}, {.role = "user", .content = "bye"}};
    sink s = {0};
    client_gen_request q = {.model = "ok", .messages = msgs, .n_messages = 3, .system = "Be brief.",
                            .on_text = collect, .user = &s};
    client_gen_result res;
    CHECKF(client_chat(&q, &res) == 0, "%s", anv_last_error());
    CHECKF(!strcmp(res.text, "3 msgs, last user, system Be brief.. Bye"), "%s", res.text);
    CHECK(s.pieces == 2 && !strcmp(res.done_reason, "stop") && res.eval_count == 2 && res.prompt_eval_count == 11);
    client_gen_result_clear(&res);
}

static void test_request(void) {
    char *reply = NULL;
    CHECK(client_request("GET", "/api/version", NULL, &reply) == 200);
    CHECK(reply && strstr(reply, "9.9.9"));
    free(reply);
    reply = NULL;
    int st = client_request("GET", "/no/such/route", NULL, &reply);
    CHECKF(st == 404, "%d", st);
    char *msg = client_error_message(st, reply);
    CHECK(msg && msg[0] && !strchr(msg, '\n'));
    free(msg);
    free(reply);
    msg = client_error_message(500, "{\"error\":{\"message\":\"openai shape\"}}");
    CHECK(msg && !strcmp(msg, "openai shape"));
    free(msg);
    msg = client_error_message(502, "");
    CHECK(msg && !strcmp(msg, "server answered HTTP 502"));
    free(msg);
}

int main(void) {
    anv_log_enabled = 0;
    test_base_url();

    static const http_route routes[] = {
        {"GET", "/api/version", fake_version, 0},
        {"POST", "/api/generate", fake_generate, 0},
        {"POST", "/api/chat", fake_chat, 0},
    };
    http_config hc = {.host = "127.0.0.1:0", .max_body = 1 << 20};
    static int app;
    http_server *srv = http_start(&hc, routes, 3, &app);
    CHECKF(srv != NULL, "%s", anv_last_error());
    if (!srv) return tu_finish();
    setenv("ANVIL_HOST", http_server_address(srv), 1);
    CHECK(client_server_up());
    test_request();
    test_generate();
    test_chat();
    char addr[128];
    snprintf(addr, sizeof addr, "%s", http_server_address(srv));
    http_stop(srv);

    /* no server at that address any more */
    CHECK(!client_server_up());
    client_gen_request q = {.model = "ok", .prompt = "x"};
    client_gen_result res;
    CHECK(client_generate(&q, &res) == -1 && res.http_status == 0);
    char want[256];
    snprintf(want, sizeof want, "could not connect to a running anvil server at %s (start one with 'anvil serve')", addr);
    CHECKF(!strcmp(anv_last_error(), want), "%s", anv_last_error());
    client_gen_result_clear(&res);
    CHECK(client_request("GET", "/api/ps", NULL, NULL) == -1 && !strcmp(anv_last_error(), want));
    curl_global_cleanup();
    return tu_finish();
}
