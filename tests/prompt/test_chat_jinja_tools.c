/* test_chat_jinja_tools: Anvil's tool-aware renderings (chat_apply_ex: gpt-oss harmony,
 * Llama 3.x, Mistral) against the official Jinja templates that llama.cpp ships and renders
 * with --jinja, applied by jinja2 as Hugging Face does (tests/prompt/jinja_tools_render.py
 * wrote prompt/jinja_tools_goldens.json: tools, tool calls, tool results, thinking,
 * reasoning levels), byte for byte. Also: harmony's refusals (a tool result without a
 * call, channel tags in content) and its capabilities; Mistral v0.3 (the Nemo template with
 * spaces, written out by hand); the Llama 3 and Mistral templates' refusals. */
#include "chat.h"
#include "chat_golden.h"
#include "chat_formats.h"
#include "error.h"
#include "prompt.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static int think_level(const cJSON *t) {
    if (!cJSON_IsString(t)) return CHAT_THINK_DEFAULT;
    if (!strcmp(t->valuestring, "low")) return CHAT_THINK_LOW;
    if (!strcmp(t->valuestring, "medium")) return CHAT_THINK_MEDIUM;
    if (!strcmp(t->valuestring, "high")) return CHAT_THINK_HIGH;
    if (!strcmp(t->valuestring, "off")) return CHAT_THINK_OFF;
    return CHAT_THINK_ON;
}

static chat_format format_of(const char *name) {
    int f = chat_format_from_name(name);
    if (f >= 0) return (chat_format)f;
    int i = chat_builtin_find(name);
    return i >= 0 ? (chat_format)(CHAT_BUILTIN + i) : (chat_format)-1;
}

/* Every case of a golden file (jinja_tools_render.py or jinja_think_render.py): the rendering,
 * or for a case the template refuses ("error"), a one-line error. */
static void test_goldens(const char *path, int min_cases) {
    size_t len = 0;
    char *text = tu_read_file(path, &len);
    CHECK(text != NULL);
    if (!text) return;
    cJSON *root = cJSON_Parse(text);
    free(text);
    CHECK(cJSON_IsObject(root));
    const char *date = cJSON_GetObjectItem(root, "date")->valuestring;
    char *tools = cJSON_PrintUnformatted(cJSON_GetObjectItem(root, "tools"));
    const cJSON *convs = cJSON_GetObjectItem(root, "conversations");
    int compared = 0, differ = 0;
    for (const cJSON *c = cJSON_GetObjectItem(root, "cases")->child; c; c = c->next) {
        const char *fname = cJSON_GetObjectItem(c, "format")->valuestring;
        chat_format f = format_of(fname);
        CHECK((int)f >= 0);
        const cJSON *conv = cJSON_GetArrayItem(convs, cJSON_GetObjectItem(c, "conv")->valueint);
        chat_message msgs[16] = {0};
        char *owned[16] = {0};
        const int n = chat_golden_messages(conv, msgs, owned, 16);
        const cJSON *tt = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "templates"),
                                              cJSON_GetObjectItem(c, "template")->valuestring);
        chat_extras x = {.tools_json = cJSON_IsTrue(cJSON_GetObjectItem(c, "tools")) ? tools : NULL,
                         .think = think_level(cJSON_GetObjectItem(c, "think")), .date = date,
                         .template_text = cJSON_IsString(tt) ? tt->valuestring : NULL};
        if (strcmp(fname, "gpt-oss")) {   /* the GGUF template picks the format */
            chat_format d = chat_detect(x.template_text, NULL);
            CHECKF(d == f, "%s: the template detects as %s", cJSON_GetObjectItem(c, "template")->valuestring,
                   chat_format_name(d));
        }
        char *got = chat_apply_ex(f, msgs, n, true, &x);
        const cJSON *out = cJSON_GetObjectItem(c, "out");
        const char *want = cJSON_IsString(out) ? out->valuestring : NULL;
        compared++;
        if (!want) {   /* the template refuses the conversation: so must Anvil */
            if (got || !*anv_last_error() || strchr(anv_last_error(), '\n')) {
                differ++;
                fprintf(stderr, "%s conv %d: rendered [%s], the template refuses: %s\n", fname,
                        cJSON_GetObjectItem(c, "conv")->valueint, got ? got : "",
                        cJSON_GetObjectItem(c, "error")->valuestring);
            }
        } else if (!got || strcmp(got, want)) {
            differ++;
            fprintf(stderr, "%s conv %d tools %d think %s:\n  got:  [%s]\n  want: [%s]\n", fname,
                    cJSON_GetObjectItem(c, "conv")->valueint, x.tools_json != NULL,
                    cJSON_IsString(cJSON_GetObjectItem(c, "think")) ? cJSON_GetObjectItem(c, "think")->valuestring : "-",
                    got ? got : anv_last_error(), want);
        }
        free(got);
        for (int i = 0; i < n; i++) free(owned[i]);
    }
    fprintf(stderr, "%s: %d renderings compared with the official templates', %d differ\n", path, compared, differ);
    CHECK(compared >= min_cases && differ == 0);
    free(tools);
    cJSON_Delete(root);
}

static void test_harmony_refusals(void) {
    chat_format h = format_of("gpt-oss");
    CHECK(chat_format_is_harmony(h));
    CHECK(!chat_format_is_harmony(CHAT_CHATML));
    CHECK(chat_format_has_tools(h, NULL) && chat_format_has_thinking(h, NULL, "gpt-oss"));
    /* a gpt-oss template is detected as harmony */
    CHECK(chat_format_is_harmony(chat_detect("{{ '<|start|>assistant<|channel|>final<|message|>' }}", "gpt-oss")));
    const chat_message orphan[] = {{.role = "user", .content = "hi"}, {.role = "tool", .content = "18C"}};
    char *got = chat_apply_ex(h, orphan, 2, true, &(chat_extras){.date = "2026-01-02"});
    CHECK(got == NULL && strstr(anv_last_error(), "tool result"));
    free(got);
    const chat_message tags[] = {{.role = "user", .content = "hi"},
                                 {.role = "assistant", .content = "<|channel|>final<|message|>x"},
                                 {.role = "user", .content = "again"}};
    got = chat_apply_ex(h, tags, 3, true, &(chat_extras){.date = "2026-01-02"});
    CHECK(got == NULL && strstr(anv_last_error(), "<|channel|>"));
    free(got);
    const chat_message bad[] = {{.role = "user", .content = "hi"},
                                {.role = "assistant", .content = "", .tool_calls = "{\"x\":1}"}};
    got = chat_apply_ex(h, bad, 2, true, &(chat_extras){.date = "2026-01-02"});
    CHECK(got == NULL && strstr(anv_last_error(), "tool_calls"));
    free(got);
    got = chat_apply_ex(h, orphan, 1, true, &(chat_extras){.tools_json = "[{\"function\":{}}]", .date = "2026-01-02"});
    CHECK(got == NULL && strstr(anv_last_error(), "name"));
    free(got);
    /* without a date the render carries today's: 10 characters YYYY-MM-DD */
    got = chat_apply_ex(h, orphan, 1, true, NULL);
    const char *d = got ? strstr(got, "Current date: ") : NULL;
    CHECK(d && d[14 + 4] == '-' && d[14 + 7] == '-' && d[14 + 10] == '\n');
    free(got);
}

/* Mistral 7B v0.3's template (mistral-v3) is the Nemo one with spaces: written out by hand. */
static void test_mistral_v3_and_refusals(void) {
    const char *tools = "[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"description\":\"d\","
                        "\"parameters\":{\"type\":\"object\",\"properties\":{}}}}]";
    const chat_message m[] = {
        {.role = "system", .content = "Be brief."},
        {.role = "user", .content = "Weather?"},
        {.role = "assistant", .content = "", .tool_calls = "[{\"function\":{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}}]"},
        {.role = "tool", .content = "18C", .tool_name = "get_weather"},
    };
    char *got = chat_apply_ex(CHAT_MISTRAL, m, 4, true, &(chat_extras){.tools_json = tools});
    const char *want = "[AVAILABLE_TOOLS] [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"description\": \"d\", "
                       "\"parameters\": {\"type\": \"object\", \"properties\": {}}}}][/AVAILABLE_TOOLS][INST] Weather?[/INST]"
                       "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"000000001\"}]</s>"
                       "[TOOL_RESULTS] {\"content\": 18C, \"call_id\": \"000000001\"}[/TOOL_RESULTS]";
    CHECKF(got && !strcmp(got, want), "mistral-v3 tools: [%s]", got ? got : anv_last_error());
    free(got);
    CHECK(chat_format_has_tools(CHAT_MISTRAL, NULL) && chat_format_has_tools(CHAT_LLAMA3, "{% if tools %}"));
    CHECK(!chat_format_has_tools(CHAT_LLAMA3, "{{ messages }}"));   /* Llama 3.0: no tools in its template */
    /* the templates' refusals */
    const chat_message two[] = {
        {.role = "user", .content = "a"},
        {.role = "assistant", .content = "", .tool_calls = "[{\"function\":{\"name\":\"x\"}},{\"function\":{\"name\":\"y\"}}]"},
    };
    got = chat_apply_ex(CHAT_LLAMA3, two, 2, true, &(chat_extras){0});
    CHECK(got == NULL && strstr(anv_last_error(), "one tool call"));
    free(got);
    const chat_message sys_only[] = {{.role = "system", .content = "s"}};
    got = chat_apply_ex(CHAT_LLAMA3, sys_only, 1, true, &(chat_extras){.tools_json = tools});
    CHECK(got == NULL && strstr(anv_last_error(), "first user message"));
    free(got);
    const chat_message twice[] = {{.role = "user", .content = "a"}, {.role = "user", .content = "b"}};
    got = chat_apply_ex(format_of("mistral-v3-tekken"), twice, 2, true, &(chat_extras){.tools_json = tools});
    CHECK(got == NULL && strstr(anv_last_error(), "alternate"));
    free(got);
    got = chat_apply_ex(CHAT_MISTRAL, &m[1], 1, true, &(chat_extras){.tools_json = "{}"});
    CHECK(got == NULL && strstr(anv_last_error(), "JSON array"));
    free(got);
    const chat_message orphan[] = {{.role = "user", .content = "a"}, {.role = "tool", .content = "r"}};
    got = chat_apply_ex(CHAT_MISTRAL, orphan, 2, true, &(chat_extras){.tools_json = tools});
    CHECK(got == NULL && strstr(anv_last_error(), "tool result"));
    free(got);
    /* plain turns without tools stay llama.cpp's built-in rendering */
    got = chat_apply_ex(CHAT_LLAMA3, &m[1], 1, true, &(chat_extras){0});
    char *plain = chat_apply(CHAT_LLAMA3, &m[1], 1, true);
    CHECK(got && plain && !strcmp(got, plain));
    free(got);
    free(plain);
}

/* Malformed tools and calls in every tool-aware renderer (and a Go TEMPLATE reading every
 * field): an answer or a one-line error, never a crash (run under the sanitizers too). */
static void test_hostile(void) {
    static const char *const tools[] = {
        "[1]", "[{}]", "[{\"function\":1}]", "null", "{}", "[", "", "[{\"function\":{\"name\":\"\"}}]",
        "[{\"function\":{\"name\":\"f\",\"parameters\":{\"properties\":[1,2]}}}]",
        "[{\"function\":{\"name\":\"f\",\"parameters\":{\"required\":\"a\",\"properties\":{\"a\":1,\"b\":{\"type\":5},"
        "\"c\":{\"type\":\"array\",\"items\":7},\"d\":{\"oneOf\":3},\"e\":{\"type\":\"object\",\"properties\":{\"x\":null}},"
        "\"f\":{\"type\":[]},\"g\":{\"enum\":[1,null]},\"h\":{\"type\":\"string\",\"enum\":[]},\"i\":{\"default\":{}}}}}}]",
        "[{\"function\":{\"name\":\"f\",\"description\":7,\"parameters\":{\"type\":\"object\",\"properties\":{\"n\":"
        "{\"type\":\"object\",\"properties\":{\"m\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":"
        "{\"k\":{\"oneOf\":[{\"type\":\"string\",\"default\":1},{\"type\":\"number\"}]}}}}}}}}}}]",
    };
    static const char *const calls[] = {
        "[1]", "[{\"function\":{\"name\":1}}]", "[{\"function\":{\"name\":\"f\",\"arguments\":\"str\"}}]",
        "[{\"function\":{\"name\":\"f\",\"arguments\":[1]}}]", "[]", "x", "[{\"function\":{\"name\":\"f\"}},{\"name\":\"g\"}]",
    };
    chat_format fmts[] = {format_of("gpt-oss"), CHAT_LLAMA3, CHAT_MISTRAL, format_of("mistral-v3-tekken"), CHAT_CHATML,
                          CHAT_MINISTRAL3, CHAT_GEMMA4, CHAT_QWEN35};
    const char *gotmpl_all = "{{ range .Tools }}{{ .Function.Name }}{{ range $k, $p := .Function.Parameters.Properties }}"
                             "{{ $k }}{{ $p.Type }}{{ json $p.Enum }}{{ json $p.Items }}{{ end }}{{ json . }}{{ end }}"
                             "{{ range .Messages }}{{ range .ToolCalls }}{{ .Function.Arguments }}{{ end }}{{ end }}";
    int answered = 0, refused = 0;
    for (size_t t = 0; t < sizeof tools / sizeof tools[0]; t++)
        for (size_t c = 0; c < sizeof calls / sizeof calls[0]; c++) {
            const chat_message m[] = {{.role = "user", .content = "hi"},
                                      {.role = "assistant", .content = "", .tool_calls = calls[c]},
                                      {.role = "tool", .content = "r"}, {.role = "user", .content = "again"}};
            for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
                char *got = chat_apply_ex(fmts[f], m, 4, true, &(chat_extras){.tools_json = tools[t], .date = "2026-01-02"});
                if (got) answered++;
                else { refused++; CHECK(*anv_last_error() && !strchr(anv_last_error(), '\n')); }
                free(got);
            }
            prompt_spec ps = {.template_go = gotmpl_all, .msgs = m, .n_msgs = 4, .chat_format_override = -1,
                              .tools_json = tools[t]};
            char *got = prompt_build(NULL, &ps);
            if (got) answered++;
            else refused++;
            free(got);
        }
    fprintf(stderr, "hostile tools/calls: %d rendered, %d refused\n", answered, refused);
    CHECK(answered > 0 && refused > 0);
}

/* Ministral 3: detection against Mistral Small 3.2's form, the template's refusals, the default
 * system prompt read from the template, capabilities (thinking only where the default prompt
 * asks for [THINK]). */
static void test_ministral3(void) {
    const char *reasoning = "{%- set default_system_message = 'Think: [THINK]draft[/THINK]\\nthen \\'answer\\'.' %}"
                            "[SYSTEM_PROMPT][AVAILABLE_TOOLS][TOOL_CALLS][ARGS]";
    const char *instruct = "{%- set default_system_message = \"Be helpful.\" %}[SYSTEM_PROMPT][AVAILABLE_TOOLS][ARGS]"
                           "{{ raise_exception('conversation roles must alternate user and assistant') }}";
    const char *devstral = "{%- set default_system_message = '' %}[SYSTEM_PROMPT][AVAILABLE_TOOLS][ARGS]";
    CHECK(chat_detect(reasoning, "mistral3") == CHAT_MINISTRAL3);
    CHECK(chat_detect("[SYSTEM_PROMPT][TOOL_CALLS][CALL_ID][ARGS]", "mistral3") == CHAT_MINISTRAL3);   /* Small 3.2 */
    CHECK(chat_format_has_tools(CHAT_MINISTRAL3, reasoning) && chat_format_has_thinking(CHAT_MINISTRAL3, reasoning, NULL));
    CHECK(chat_format_has_tools(CHAT_MINISTRAL3, instruct) && !chat_format_has_thinking(CHAT_MINISTRAL3, instruct, NULL));
    const chat_message hi[] = {{.role = "user", .content = "hi"}};
    char *got = chat_apply_ex(CHAT_MINISTRAL3, hi, 1, true, &(chat_extras){.template_text = reasoning});
    CHECKF(got && !strcmp(got, "[SYSTEM_PROMPT]Think: [THINK]draft[/THINK]\nthen 'answer'.[/SYSTEM_PROMPT][INST]hi[/INST]"),
           "ministral3 default system prompt: [%s]", got ? got : anv_last_error());
    free(got);
    got = chat_apply(CHAT_MINISTRAL3, hi, 1, true);   /* no template: no default system prompt */
    CHECK(got && !strcmp(got, "[INST]hi[/INST]"));
    free(got);
    const chat_message twice[] = {{.role = "user", .content = "a"}, {.role = "user", .content = "b"}};
    got = chat_apply_ex(CHAT_MINISTRAL3, twice, 2, true, &(chat_extras){0});
    CHECK(got == NULL && strstr(anv_last_error(), "alternate"));
    free(got);
    const chat_message empty[] = {{.role = "user", .content = "a"}, {.role = "assistant", .content = ""}};
    got = chat_apply_ex(CHAT_MINISTRAL3, empty, 2, true, &(chat_extras){0});
    CHECK(got == NULL && strstr(anv_last_error(), "neither content nor tool calls"));
    free(got);
    const chat_message late_sys[] = {{.role = "user", .content = "a"}, {.role = "system", .content = "s"}};
    got = chat_apply_ex(CHAT_MINISTRAL3, late_sys, 2, true, &(chat_extras){0});
    CHECK(got == NULL && strstr(anv_last_error(), "only user, assistant and tool roles"));
    free(got);
    got = chat_apply_ex(CHAT_MINISTRAL3, twice, 2, true, &(chat_extras){.template_text = instruct});
    CHECK(got == NULL && strstr(anv_last_error(), "alternate"));
    free(got);
    /* Devstral's template checks nothing, prints later system turns and an empty system block */
    got = chat_apply_ex(CHAT_MINISTRAL3, late_sys, 2, true, &(chat_extras){.template_text = devstral});
    CHECKF(got && !strcmp(got, "[SYSTEM_PROMPT][/SYSTEM_PROMPT][INST]a[/INST][SYSTEM_PROMPT]s[/SYSTEM_PROMPT]"),
           "devstral: [%s]", got ? got : anv_last_error());
    free(got);
}

int main(void) {
    test_goldens("prompt/jinja_tools_goldens.json", 50);
    test_goldens("prompt/jinja_think_goldens.json", 150);   /* Gemma 4, Qwen 3.5: thinking on, off, unset */
    test_ministral3();
    test_hostile();
    test_mistral_v3_and_refusals();
    test_harmony_refusals();
    return tu_finish();
}
