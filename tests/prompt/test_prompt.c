/* test_prompt: engine/prompt/prompt.c. The Go-template path against Ollama's own rendering
 * (tests/data/gotemplate/prompt.json, made by tests/prompt/gotemplate/make_golden.go with Go's
 * text/template and Ollama's collate / per-turn / last-turn-cut logic) for every library
 * template x conversation; then the request system prompt and the Modelfile MESSAGE
 * layer (which must give the same prompt as the equivalent whole conversation), raw mode,
 * the GGUF chat-format path (detected from the model's template or architecture, or
 * forced) and bad input. The model is a bare struct: prompt_build only reads its chat
 * template and architecture name. */
#include "error.h"
#include "prompt.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static const char *jstr(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static cJSON *golden;

/* The golden prompt Ollama renders for template x conversation. */
static const cJSON *find_case(const char *tmpl, const char *conv) {
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(golden, "cases")) {
        if (strcmp(jstr(c, "template"), tmpl) == 0 && strcmp(jstr(c, "conversation"), conv) == 0) return c;
    }
    return NULL;
}

static const char *template_text(const char *name) {
    return jstr(cJSON_GetObjectItemCaseSensitive(golden, "templates"), name);
}

static int load_msgs(const cJSON *arr, chat_message *m, int cap) {
    int n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        if (n < cap) m[n++] = (chat_message){.role = jstr(it, "role"), .content = jstr(it, "content")};
    }
    return n;
}

static bool same(const char *what, const char *got, const char *want) {
    if (got && want && strcmp(got, want) == 0) return true;
    fprintf(stderr, "%s:\n  got:  [%s]\n  want: [%s]\n", what, got ? got : "(NULL)", want ? want : "(NULL)");
    if (!got) fprintf(stderr, "  error: %s\n", anv_last_error());
    return false;
}

static void test_go_goldens(const model *m) {
    int n_ok = 0, n_err = 0, n_bad = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(golden, "cases")) {
        chat_message msgs[32];
        int n = load_msgs(cJSON_GetObjectItemCaseSensitive(c, "messages"), msgs, 32);
        prompt_spec p = {.template_go = template_text(jstr(c, "template")), .msgs = msgs, .n_msgs = n,
                         .chat_format_override = -1};
        char *got = prompt_build(m, &p);
        char what[200];
        snprintf(what, sizeof(what), "%s x %s", jstr(c, "template"), jstr(c, "conversation"));
        if (cJSON_GetObjectItemCaseSensitive(c, "error")) {
            if (got) { same(what, got, "(an error, as Ollama gives)"); n_bad++; }
            else n_err++;
        } else if (same(what, got, jstr(c, "output"))) {
            n_ok++;
        } else {
            n_bad++;
        }
        free(got);
    }
    fprintf(stderr, "prompt goldens: %d identical, %d errors as in Ollama, %d mismatches\n", n_ok, n_err, n_bad);
    CHECK(n_bad == 0);
    CHECK(n_ok >= 130);
}

static const char *const TEMPLATES[] = {"gemma3", "llama3.2", "qwen2.5", "qwen3", "mistral", "phi3",
                                        "legacy-chatml", "legacy-phi", "legacy-llama2", "legacy-cut"};
enum { N_TEMPLATES = sizeof(TEMPLATES) / sizeof(TEMPLATES[0]) };

/* A request's system prompt and the MESSAGE layer build the same prompt Ollama renders for
 * the equivalent conversation. */
static void test_system_and_layer(const model *m) {
    for (int i = 0; i < N_TEMPLATES; i++) {
        const char *tmpl = template_text(TEMPLATES[i]);
        char what[160];
        /* system prompt inserted in front */
        const cJSON *want = find_case(TEMPLATES[i], "system-user");
        CHECK(want != NULL);
        chat_message user[] = {{.role = "user", .content = "Hello"}};
        prompt_spec p = {.template_go = tmpl, .system = "You are a helpful assistant.", .msgs = user, .n_msgs = 1,
                         .chat_format_override = -1};
        char *got = prompt_build(m, &p);
        snprintf(what, sizeof(what), "%s: system prompt", TEMPLATES[i]);
        CHECK(same(what, got, jstr(want, "output")));
        free(got);
        /* ... but not when the conversation brings its own */
        chat_message own[] = {{.role = "system", .content = "You are a helpful assistant."}, {.role = "user", .content = "Hello"}};
        p = (prompt_spec){.template_go = tmpl, .system = "IGNORED", .msgs = own, .n_msgs = 2, .chat_format_override = -1};
        got = prompt_build(m, &p);
        snprintf(what, sizeof(what), "%s: conversation's own system", TEMPLATES[i]);
        CHECK(same(what, got, jstr(want, "output")));
        free(got);
        /* the MESSAGE layer goes before the conversation */
        want = find_case(TEMPLATES[i], "multi");
        chat_message last[] = {{.role = "user", .content = "Tell me a joke"}};
        p = (prompt_spec){.template_go = tmpl, .messages_json =
                              "[{\"role\":\"user\",\"content\":\"Hi\"},{\"role\":\"assistant\",\"content\":\"Hello! How can I help?\"}]",
                          .msgs = last, .n_msgs = 1, .chat_format_override = -1};
        got = prompt_build(m, &p);
        snprintf(what, sizeof(what), "%s: MESSAGE layer", TEMPLATES[i]);
        CHECK(same(what, got, jstr(want, "output")));
        free(got);
        /* system first, then the layer, then the conversation */
        want = find_case(TEMPLATES[i], "system-multi");
        chat_message tail[] = {{.role = "user", .content = "And 3+3?"}};
        p = (prompt_spec){.template_go = tmpl, .system = "Be brief.",
                          .messages_json = "[{\"role\":\"user\",\"content\":\"Hi\"},{\"role\":\"assistant\",\"content\":\"Hello.\"},"
                                           "{\"role\":\"user\",\"content\":\"What is 2+2?\"},{\"role\":\"assistant\",\"content\":\"4\"}]",
                          .msgs = tail, .n_msgs = 1, .chat_format_override = -1};
        got = prompt_build(m, &p);
        snprintf(what, sizeof(what), "%s: system + MESSAGE layer", TEMPLATES[i]);
        CHECK(same(what, got, jstr(want, "output")));
        free(got);
    }
}

static void test_raw(const model *m) {
    chat_message msgs[] = {{.role = "system", .content = "S"}, {.role = "user", .content = "  <start_of_turn>raw {{ .X }}\n"}};
    prompt_spec p = {.template_go = template_text("gemma3"), .system = "SYS", .msgs = msgs, .n_msgs = 2, .raw = true,
                     .chat_format_override = -1};
    char *got = prompt_build(m, &p);
    CHECK(same("raw", got, "  <start_of_turn>raw {{ .X }}\n"));
    free(got);
    p = (prompt_spec){.raw = true, .chat_format_override = -1};
    got = prompt_build(m, &p);
    CHECK(same("raw, nothing", got, ""));
    free(got);
}

/* No Go template: the GGUF's chat format (engine/prompt/chat.h). */
static void test_gguf_path(void) {
    model gemma = {0}, qwen = {0};
    gemma.hp.arch_name = "gemma3";
    qwen.hp.arch_name = "llama"; /* the template text decides over the architecture */
    qwen.chat_template = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}";
    chat_message msgs[] = {{.role = "user", .content = "Hi"}, {.role = "assistant", .content = "Hello."}, {.role = "user", .content = "Bye"}};
    prompt_spec p = {.system = "Be brief.", .msgs = msgs, .n_msgs = 3, .chat_format_override = -1};
    char *got = prompt_build(&gemma, &p);
    CHECK(same("gemma3 architecture", got,
               "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n"
               "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n"));
    free(got);
    got = prompt_build(&qwen, &p);
    CHECK(same("ChatML from the GGUF template", got,
               "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n"
               "<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n"));
    free(got);
    p.template_go = ""; /* an empty Go template is no template */
    p.chat_format_override = CHAT_LLAMA3;
    p.system = NULL;
    p.messages_json = "[{\"role\":\"system\",\"content\":\"From the Modelfile\"}]";
    got = prompt_build(&gemma, &p);
    CHECK(same("forced llama3 + MESSAGE layer", got,
               "<|start_header_id|>system<|end_header_id|>\n\nFrom the Modelfile<|eot_id|>"
               "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
               "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
               "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
               "<|start_header_id|>assistant<|end_header_id|>\n\n"));
    free(got);
}

static void expect_error(const model *m, const prompt_spec *p, const char *sub) {
    char *got = prompt_build(m, p);
    CHECKF(got == NULL, "no error, got [%s]", got ? got : "");
    free(got);
    CHECKF(strstr(anv_last_error(), sub) != NULL, "error: %s (want %s)", anv_last_error(), sub);
}

static void test_errors(const model *m) {
    chat_message ok[] = {{.role = "user", .content = "Hi"}};
    chat_message bad[] = {{.role = "user", .content = NULL}};
    expect_error(m, NULL, "no conversation");
    expect_error(m, &(prompt_spec){.msgs = bad, .n_msgs = 1, .chat_format_override = -1}, "has no content");
    expect_error(m, &(prompt_spec){.msgs = ok, .n_msgs = 1, .messages_json = "{\"role\":1}", .chat_format_override = -1},
                 "not a JSON array");
    expect_error(m, &(prompt_spec){.msgs = ok, .n_msgs = 1, .messages_json = "[{\"role\":\"user\"}]", .chat_format_override = -1},
                 "entry 0");
    expect_error(m, &(prompt_spec){.template_go = "{{ if .System }}", .msgs = ok, .n_msgs = 1, .chat_format_override = -1},
                 "gotemplate: line 1");
    expect_error(m, &(prompt_spec){.template_go = "{{ range .Messages }}{{ .Nope }}{{ end }}", .msgs = ok, .n_msgs = 1,
                                   .chat_format_override = -1}, "can't evaluate field Nope");
    expect_error(m, &(prompt_spec){.msgs = ok, .n_msgs = 1, .chat_format_override = 999}, "chat format 999");
    expect_error(NULL, &(prompt_spec){.msgs = ok, .n_msgs = 1, .chat_format_override = -1}, "no model");
}

int main(void) {
    anv_log_enabled = 0;
    char *text = tu_read_file("data/gotemplate/prompt.json", NULL);
    CHECKF(text != NULL, "data/gotemplate/prompt.json missing (run from tests/)");
    if (!text) return tu_finish();
    golden = cJSON_Parse(text);
    free(text);
    CHECK(golden != NULL);
    model m = {0};
    m.hp.arch_name = "gemma3";
    test_go_goldens(&m);
    test_system_and_layer(&m);
    test_raw(&m);
    test_gguf_path();
    test_errors(&m);
    cJSON_Delete(golden);
    return tu_finish();
}
