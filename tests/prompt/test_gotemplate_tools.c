/* test_gotemplate_tools: Go TEMPLATEs with tools (engine/prompt/gotemplate*.c through
 * prompt_build) against Ollama's own code: tests/prompt/gotemplate_tools/main.go ran Ollama
 * v0.17.4's template.Execute (Values{Messages, Tools}) and its tool parser's tag on the same
 * templates and conversations, into prompt/gotemplate_tools.json. Each rendering must equal
 * Ollama's byte for byte (or fail where it fails), each tool tag and thinking tag pair
 * (thinking.InferTags) must be Ollama's; then replies parsed with a template's tags: the
 * call after a custom tag, text when it is not one, thinking between the template's tags. */
#include "chat_golden.h"
#include "error.h"
#include "gotemplate.h"
#include "prompt.h"
#include "reply_parse.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static void test_goldens(void) {
    size_t len = 0;
    char *text = tu_read_file("prompt/gotemplate_tools.json", &len);
    CHECK(text != NULL);
    if (!text) return;
    cJSON *root = cJSON_Parse(text);
    free(text);
    const cJSON *tmpls = cJSON_GetObjectItem(root, "templates"), *convs = cJSON_GetObjectItem(root, "conversations");
    char *tools = cJSON_PrintUnformatted(cJSON_GetObjectItem(root, "tools"));
    int i = 0, tags_ok = 0;
    for (const cJSON *t = cJSON_GetObjectItem(root, "tags")->child; t; t = t->next, i++) {
        gotmpl *g = gotmpl_parse(cJSON_GetArrayItem(tmpls, i)->valuestring);
        char tag[64] = "";
        if (g) gotmpl_tool_tag(g, tag, sizeof tag);
        gotmpl_free(g);
        CHECKF(!strcmp(tag, t->valuestring), "template %d: tag [%s], Ollama's [%s]", i, tag, t->valuestring);
        tags_ok += !strcmp(tag, t->valuestring);
    }
    i = 0;
    for (const cJSON *t = cJSON_GetObjectItem(root, "think_tags")->child; t; t = t->next, i++) {
        gotmpl *g = gotmpl_parse(cJSON_GetArrayItem(tmpls, i)->valuestring);
        char open[32] = "?", close[32] = "?";
        if (g) gotmpl_think_tags(g, open, close, sizeof open);
        gotmpl_free(g);
        const char *wo = cJSON_GetArrayItem(t, 0)->valuestring, *wc = cJSON_GetArrayItem(t, 1)->valuestring;
        CHECKF(!strcmp(open, wo) && !strcmp(close, wc), "template %d: thinking tags [%s] [%s], Ollama's [%s] [%s]", i,
               open, close, wo, wc);
    }
    int compared = 0, differ = 0;
    for (const cJSON *r = cJSON_GetObjectItem(root, "renders")->child; r; r = r->next) {
        int ti = cJSON_GetObjectItem(r, "template")->valueint, ci = cJSON_GetObjectItem(r, "conv")->valueint;
        bool with_tools = cJSON_IsTrue(cJSON_GetObjectItem(r, "tools"));
        const cJSON *conv = cJSON_GetArrayItem(convs, ci), *want = cJSON_GetObjectItem(r, "out");
        bool want_err = cJSON_IsTrue(cJSON_GetObjectItem(r, "error"));
        chat_message msgs[16] = {0};
        char *owned[16] = {0};
        const int n = chat_golden_messages(conv, msgs, owned, 16);
        prompt_spec ps = {.template_go = cJSON_GetArrayItem(tmpls, ti)->valuestring, .msgs = msgs, .n_msgs = n,
                          .chat_format_override = -1, .tools_json = with_tools ? tools : NULL};
        char *got = prompt_build(NULL, &ps);
        const char *w = cJSON_IsString(want) ? want->valuestring : "";
        compared++;
        bool ok = want_err ? got == NULL : got && !strcmp(got, w);
        if (!ok) {
            differ++;
            fprintf(stderr, "template %d conv %d tools %d:\n  got:  [%s]\n  want: [%s]\n", ti, ci, with_tools,
                    got ? got : anv_last_error(), want_err ? "(an error)" : w);
        }
        free(got);
        for (int k = 0; k < n; k++) free(owned[k]);
    }
    fprintf(stderr, "%d Go-template renderings with tools compared with Ollama's, %d differ; %d tags equal\n", compared,
            differ, tags_ok);
    CHECK(compared >= 50 && differ == 0);
    free(tools);
    cJSON_Delete(root);
}

static void parse(const reply_parse_opts *o, const char *text, bytebuf *content, bytebuf *calls) {
    reply_parser *p = reply_parser_new(o);
    reply_delta d = {0};
    for (size_t i = 0; text[i]; i++) CHECK(reply_parser_feed(p, text + i, 1, &d));   /* byte by byte */
    CHECK(reply_parser_finish(p, &d));
    bytebuf_add(content, bytebuf_str(&d.content), d.content.len);
    for (int i = 0; i < d.n_calls; i++) bytebuf_printf(calls, "%s(%s);", d.calls[i].name, d.calls[i].arguments);
    reply_delta_free(&d);
    reply_parser_free(p);
}

/* The reply side of the fallback: the tag a template names, then calls. */
static void test_tag_parsing(void) {
    reply_parse_opts o = {.tools = true};
    gotmpl *g = gotmpl_parse("{{ range .Messages }}{{ if .ToolCalls }}<|python_tag|>{{ range .ToolCalls }}"
                             "{{ json .Function.Name }}{{ end }}{{ end }}{{ end }}");
    CHECK(g != NULL);
    gotmpl_tool_tag(g, o.tool_tag, sizeof o.tool_tag);
    gotmpl_free(g);
    CHECK(!strcmp(o.tool_tag, "<|python_tag|>"));
    bytebuf content = {0}, calls = {0};
    parse(&o, "Sure. <|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}} "
              "{\"name\": \"now\", \"arguments\": {}}", &content, &calls);
    CHECKF(!strcmp(bytebuf_str(&content), "Sure. ") && !strcmp(bytebuf_str(&calls), "get_weather({\"city\":\"Paris\"});now({});"),
           "custom tag: content [%s] calls [%s]", bytebuf_str(&content), bytebuf_str(&calls));
    content.len = calls.len = 0;
    parse(&o, "<|python_tag|>not a call", &content, &calls);
    CHECKF(!strcmp(bytebuf_str(&content), "<|python_tag|>not a call") && calls.len == 0,
           "custom tag, no call: content [%s]", bytebuf_str(&content));
    content.len = calls.len = 0;
    parse(&o, "<|python_t", &content, &calls);   /* a cut tag at the end is text */
    CHECK(!strcmp(bytebuf_str(&content), "<|python_t") && calls.len == 0);
    content.len = calls.len = 0;
    o.tools = false;   /* no tools in the request: the tag is text */
    parse(&o, "<|python_tag|>{\"name\": \"now\"}", &content, &calls);
    CHECK(!strcmp(bytebuf_str(&content), "<|python_tag|>{\"name\": \"now\"}") && calls.len == 0);
    bytebuf_free(&content);
    bytebuf_free(&calls);
    /* prompt_reply_style reads the tag from the TEMPLATE */
    reply_parse_opts st = {0};
    prompt_reply_style(NULL, &(prompt_spec){.template_go = "{{ if .ToolCalls }}<function_calls>{{ end }}{{ .Prompt }}",
                                           .chat_format_override = -1}, &st);
    CHECK(!strcmp(st.tool_tag, "<function_calls>") && !st.harmony);
    /* a TEMPLATE's thinking tags replace <think> in the reply split */
    reply_parse_opts th = {.thinking = true};
    prompt_reply_style(NULL, &(prompt_spec){.template_go = "{{ range .Messages }}{{ if .Thinking }}[THINK]{{ .Thinking }}"
                                                           "[/THINK]{{ end }}{{ .Content }}{{ end }}",
                                           .chat_format_override = -1}, &th);
    CHECK(!strcmp(th.think_open, "[THINK]") && !strcmp(th.think_close, "[/THINK]"));
    bytebuf tc = {0}, tcalls = {0};
    reply_parser *rp = reply_parser_new(&th);
    reply_delta d = {0};
    const char *reply = "[THINK]hmm[/THINK] Hi <think>x</think>";
    for (size_t k = 0; reply[k]; k++) CHECK(reply_parser_feed(rp, reply + k, 1, &d));
    CHECK(reply_parser_finish(rp, &d));
    CHECKF(!strcmp(bytebuf_str(&d.thinking), "hmm") && !strcmp(bytebuf_str(&d.content), "Hi <think>x</think>"),
           "template thinking tags: thinking [%s] content [%s]", bytebuf_str(&d.thinking), bytebuf_str(&d.content));
    reply_delta_free(&d);
    reply_parser_free(rp);
    bytebuf_free(&tc);
    bytebuf_free(&tcalls);
    /* capabilities by the names a template uses */
    prompt_caps c = prompt_capabilities(NULL, "{{ range .Tools }}{{ end }}{{ .Prompt }}", -1);
    CHECK(c.tools && !c.thinking && !c.insert);
    c = prompt_capabilities(NULL, "<|fim_prefix|>{{ .Prompt }}<|fim_suffix|>{{ .Suffix }}<|fim_middle|>", -1);
    CHECK(c.insert && !c.tools && !c.thinking);   /* Ollama's "insert": a TEMPLATE with .Suffix */
    /* the GGUF formats: Gemma 4 and Qwen 3.5 have tools and thinking; their reply styles */
    c = prompt_capabilities(NULL, NULL, CHAT_GEMMA4);
    CHECK(c.tools && c.thinking && !c.insert);
    c = prompt_capabilities(NULL, NULL, CHAT_QWEN35);
    CHECK(c.tools && c.thinking && !c.insert);
    reply_parse_opts g4 = {0}, q35 = {0}, q35off = {0};
    prompt_reply_style(NULL, &(prompt_spec){.chat_format_override = CHAT_GEMMA4}, &g4);
    prompt_reply_style(NULL, &(prompt_spec){.chat_format_override = CHAT_QWEN35}, &q35);
    prompt_reply_style(NULL, &(prompt_spec){.chat_format_override = CHAT_QWEN35, .think = CHAT_THINK_OFF}, &q35off);
    CHECK(g4.gemma4 && !g4.qwen35 && !g4.start_in_thinking);
    CHECK(q35.qwen35 && q35.start_in_thinking && !q35.gemma4);
    CHECK(q35off.qwen35 && !q35off.start_in_thinking);   /* think off: the prompt closed <think> */
}

int main(void) {
    test_goldens();
    test_tag_parsing();
    return tu_finish();
}
