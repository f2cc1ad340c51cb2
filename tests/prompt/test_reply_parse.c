/* test_reply_parse: engine/prompt/reply_parse.c. Every case is parsed twice, the reply fed
 * whole and one byte at a time (a streamed reply splits markers anywhere), and both must
 * give the same content, thinking and calls: Qwen/Hermes <tool_call> tags, Mistral's
 * [TOOL_CALLS], Llama 3's bare JSON, <think> blocks (also when the prompt opened one),
 * text that only looks like a marker, malformed calls kept as content, switches off; and
 * gpt-oss's harmony channels (analysis, final, commentary calls, either header order); Gemma 4's
 * channels and <|tool_call>call:NAME{..} calls (Ollama's gemma4 parser's cases, its repairs,
 * malformed calls kept as content); Qwen 3.5's thinking-first replies and Qwen3-Coder XML calls
 * typed by the tool schema (Ollama's qwen3.5 / qwen3coder parsers). */
#include "reply_parse.h"
#include "testutil.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    bytebuf content, thinking, calls;   /* calls: "name(args);" each */
} result;

static void take(result *r, reply_delta *d) {
    bytebuf_add(&r->content, bytebuf_str(&d->content), d->content.len);
    bytebuf_add(&r->thinking, bytebuf_str(&d->thinking), d->thinking.len);
    for (int i = 0; i < d->n_calls; i++) bytebuf_printf(&r->calls, "%s(%s);", d->calls[i].name, d->calls[i].arguments);
    reply_delta_reset(d);
}

static void parse(const reply_parse_opts *o, const char *text, size_t step, result *r) {
    memset(r, 0, sizeof *r);
    reply_parser *p = reply_parser_new(o);
    reply_delta d = {0};
    size_t n = strlen(text);
    for (size_t i = 0; i < n; i += step) {
        size_t k = n - i < step ? n - i : step;
        CHECK(reply_parser_feed(p, text + i, k, &d));
        take(r, &d);
    }
    CHECK(reply_parser_finish(p, &d));
    take(r, &d);
    reply_delta_free(&d);
    reply_parser_free(p);
}

static void result_free(result *r) {
    bytebuf_free(&r->content);
    bytebuf_free(&r->thinking);
    bytebuf_free(&r->calls);
}

static void expect(const char *what, const reply_parse_opts *o, const char *text, const char *content,
                   const char *thinking, const char *calls) {
    const size_t steps[2] = {1, strlen(text) + 1};
    for (int si = 0; si < 2; si++) {
        size_t step = steps[si];
        result r;
        parse(o, text, step, &r);
        bool ok = !strcmp(bytebuf_str(&r.content), content) && !strcmp(bytebuf_str(&r.thinking), thinking) &&
                  !strcmp(bytebuf_str(&r.calls), calls);
        CHECKF(ok, "%s (fed %s): content [%s] want [%s], thinking [%s] want [%s], calls [%s] want [%s]", what,
               step == 1 ? "byte by byte" : "whole", bytebuf_str(&r.content), content, bytebuf_str(&r.thinking),
               thinking, bytebuf_str(&r.calls), calls);
        result_free(&r);
    }
}

static void test_harmony(void) {
    const reply_parse_opts h = {.harmony = true, .thinking = true, .tools = true};
    const reply_parse_opts hn = {.harmony = true, .thinking = true};
    expect("harmony: analysis then final", &h,
           "<|channel|>analysis<|message|>The user greets.<|end|><|start|>assistant<|channel|>final<|message|>Hello!",
           "Hello!", "The user greets.", "");
    expect("harmony: final ended by <|return|>", &h, "<|channel|>final<|message|>Hi<|return|>", "Hi", "", "");
    expect("harmony: a call, recipient after the channel, <|constrain|>json", &h,
           "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary "
           "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}",
           "", "Need weather.", "get_weather({\"city\":\"Paris\"});");
    expect("harmony: a call, recipient before the channel, ended by <|call|>", &h,
           " to=functions.get_weather<|channel|>commentary json<|message|>{\"city\":\"Rome\"}<|call|>",
           "", "", "get_weather({\"city\":\"Rome\"});");
    expect("harmony: a preamble on commentary, then a call", &h,
           "<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant to=functions.now<|channel|>commentary "
           "json<|message|>{}", "Checking.", "", "now({});");
    expect("harmony: arguments that are not JSON come back as content", &h,
           "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{oops", "{oops", "", "");
    expect("harmony: without tools a call is content", &hn,
           "<|channel|>commentary to=functions.f json<|message|>{\"a\":1}", "{\"a\":1}", "", "");
    expect("harmony: a built-in tool on the analysis channel (Ollama: a call named by the recipient)", &h,
           "<|channel|>analysis to=browser.search<|message|>{\"query\": \"x\"}", "", "", "browser.search({\"query\":\"x\"});");
    expect("harmony: not harmony at all is content", &h, "plain words <b>", "plain words <b>", "", "");
    expect("harmony: cut off inside the header", &h, "<|channel|>analys", "<|channel|>analys", "", "");
    expect("harmony: text that only looks like an end marker", &h,
           "<|channel|>final<|message|>a <|en b <|x|>", "a <|en b <|x|>", "", "");
    expect("harmony: two final messages", &h,
           "<|channel|>final<|message|>one<|end|><|start|>assistant<|channel|>final<|message|> two", "one two", "", "");
    reply_parser *p = reply_parser_new(&h);
    reply_delta d = {0};
    const char *two = " to=functions.a<|channel|>commentary json<|message|>{}<|end|><|start|>assistant to=functions.b"
                      "<|channel|>commentary json<|message|>{\"x\":[1]}";
    CHECK(reply_parser_feed(p, two, strlen(two), &d) && reply_parser_finish(p, &d));
    CHECK(reply_parser_n_calls(p) == 2 && d.n_calls == 2 && !strcmp(d.calls[1].name, "b"));
    reply_delta_free(&d);
    reply_parser_free(p);
}

static void test_gemma4(void) {
    const reply_parse_opts g = {.gemma4 = true, .thinking = true, .tools = true}, off = {.gemma4 = true, .tools = true};
    expect("gemma4: plain", &g, "This is a simple response.", "This is a simple response.", "", "");
    expect("gemma4: thinking then content", &g, "<|channel>thought\nLet me think about this...<channel|>The answer is 42.",
           "The answer is 42.", "Let me think about this...", "");
    expect("gemma4: two thinking blocks", &g, "<|channel>first thought<channel|><|channel>second thought<channel|>Final answer.",
           "Final answer.", "first thoughtsecond thought", "");
    expect("gemma4: thinking off drops the channel", &off, "<|channel>this is not thinking<channel|>actual content",
           "actual content", "", "");
    expect("gemma4: a call", &g, "<|tool_call>call:get_weather{location:<|\"|>Paris<|\"|>,units:<|\"|>metric<|\"|>}<tool_call|>",
           "", "", "get_weather({\"location\":\"Paris\",\"units\":\"metric\"});");
    expect("gemma4: numbers, booleans, null, nesting, arrays", &g,
           "<|tool_call>call:p{n:42,on:true,x:null,config:{name:<|\"|>test<|\"|>},items:[<|\"|>a<|\"|>,<|\"|>b \"q\"<|\"|>]}"
           "<tool_call|>", "", "", "p({\"n\":42,\"on\":true,\"x\":null,\"config\":{\"name\":\"test\"},\"items\":[\"a\",\"b \\\"q\\\"\"]});");
    expect("gemma4: a Windows path and a multi-line string", &g,
           "<|tool_call>call:open{path:<|\"|>C:\\users\\bob<|\"|>,cmd:<|\"|>date\nls<|\"|>}<tool_call|>", "", "",
           "open({\"path\":\"C:\\\\users\\\\bob\",\"cmd\":\"date\\nls\"});");
    expect("gemma4: raw JSON strings beside gemma ones", &g,
           "<|tool_call>call:s{query:\"raw \\\"q\\\"\",note:<|\"|>g \"q\"<|\"|>}<tool_call|>", "", "",
           "s({\"query\":\"raw \\\"q\\\"\",\"note\":\"g \\\"q\\\"\"});");
    expect("gemma4: thinking, text, two calls, stray markers after them", &g,
           "<|channel>thought\nNeed weather\n<channel|>Let me check.  <|tool_call>call:w{c:<|\"|>Paris<|\"|>}<tool_call|>"
           "<|tool_call>call:now{}<tool_call|><tool_call|>\n<|tool_response>",
           "Let me check.", "Need weather", "w({\"c\":\"Paris\"});now({});");
    expect("gemma4: text after a call", &g, "<|tool_call>call:f{}<tool_call|>\n\nDone.", "Done.", "", "f({});");
    expect("gemma4: cut off before <tool_call|> (parsed at the end)", &g, "<|tool_call>call:f{q:<|\"|>say \"hi\"<|\"|>}",
           "", "", "f({\"q\":\"say \\\"hi\\\"\"});");
    expect("gemma4: repaired: the closing <|\"|> missing", &g, "<|tool_call>call:f{q:<|\"|>open}<tool_call|>", "", "",
           "f({\"q\":\"open\"});");
    expect("gemma4: repaired: the closing <|\"|> and } missing", &g, "<|tool_call>call:f{q:<|\"|>open<tool_call|>", "", "",
           "f({\"q\":\"open\"});");
    expect("gemma4: repaired: a single-quoted value, a stray <|\"|> after it", &g,
           "<|tool_call>call:grep{include:<|\"|>*.py<|\"|>,pattern:':\\s*\\w+'<|\"|>}<tool_call|>", "", "",
           "grep({\"include\":\"*.py\",\"pattern\":\":\\\\s*\\\\w+\"});");
    const char *write_tool = "[{\"type\":\"function\",\"function\":{\"name\":\"write\",\"parameters\":{\"type\":\"object\","
                             "\"properties\":{\"content\":{\"type\":\"string\"},\"mode\":{\"type\":\"string\"},"
                             "\"n\":{\"type\":\"number\"}}}}}]";
    const reply_parse_opts gs = {.gemma4 = true, .tools = true, .tools_json = write_tool};
    expect("gemma4: repaired by the schema: bare text of a string parameter, cut off", &gs,
           "<|tool_call>call:write{content:\n\n# Title, it's done", "", "",
           "write({\"content\":\"\\n\\n# Title, it's done\"});");
    expect("gemma4: repaired by the schema: bare text up to the next known key", &gs,
           "<|tool_call>call:write{content:hello, world,mode:<|\"|>fast<|\"|>}<tool_call|>", "", "",
           "write({\"content\":\"hello, world\",\"mode\":\"fast\"});");
    expect("gemma4: not repaired without a schema", &g, "<|tool_call>call:write{content:hello}<tool_call|>",
           "<|tool_call>call:write{content:hello}<tool_call|>", "", "");
    expect("gemma4: not repaired for a number parameter", &gs, "<|tool_call>call:write{n:many}<tool_call|>",
           "<|tool_call>call:write{n:many}<tool_call|>", "", "");
    expect("gemma4: not a call stays content, markers included", &g, "<|tool_call>f(x)<tool_call|> ok",
           "<|tool_call>f(x)<tool_call|>ok", "", "");
    expect("gemma4: arguments that are not an object stay content", &g, "<|tool_call>call:f{1:2:3}<tool_call|>",
           "<|tool_call>call:f{1:2:3}<tool_call|>", "", "");
    expect("gemma4: no name stays content", &g, "<|tool_call>call:{}<tool_call|>", "<|tool_call>call:{}<tool_call|>", "", "");
    const reply_parse_opts notools = {.gemma4 = true, .thinking = true};
    expect("gemma4: without tools a call is content", &notools, "<|channel>x<channel|><|tool_call>call:f{}<tool_call|>",
           "<|tool_call>call:f{}<tool_call|>", "x", "");
    expect("gemma4: lookalike markers are content", &g, "a <|chan b <tool_call|> c", "a <|chan b <tool_call|> c", "", "");
    expect("gemma4: cut off inside the thinking", &g, "<|channel>thought\nhalf", "", "half", "");
    expect("gemma4: cut off in the channel name", &g, "<|channel>thou", "", "thou", "");
}

static void test_qwen35(void) {
    const char *tools = "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\","
                        "\"properties\":{\"city\":{\"type\":\"string\"},\"days\":{\"type\":\"integer\"},\"t\":{\"type\":\"number\"},"
                        "\"hourly\":{\"type\":\"boolean\"},\"tags\":{\"type\":\"array\"},\"where\":{\"type\":\"object\"},"
                        "\"mode\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"number\"}]}}}}}]";
    const reply_parse_opts q = {.qwen35 = true, .thinking = true, .start_in_thinking = true, .tools = true, .tools_json = tools};
    const reply_parse_opts nothink = {.qwen35 = true, .tools = true, .tools_json = tools};
    expect("qwen35: thinking (the prompt opened it), then the answer", &q, "Let me think.\n</think>\n\nIt is 18C.",
           "It is 18C.", "Let me think.", "");
    expect("qwen35: a repeated leading <think> is dropped", &q, "\n<think>\nHmm.</think>Yes.", "Yes.", "Hmm.", "");
    expect("qwen35: a second <think> is thinking text", &q, "a <think> b</think>c", "c", "a <think> b", "");
    expect("qwen35: an XML call, typed by the schema", &q,
           "Need it.\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n</parameter>\n"
           "<parameter=days>\n3\n</parameter>\n<parameter=t>\n2.5\n</parameter>\n<parameter=hourly>\nTrue\n</parameter>\n"
           "<parameter=tags>\n[\"a\", 1]\n</parameter>\n<parameter=where>\n{\"lat\": 1}\n</parameter>\n"
           "<parameter=mode>\n7\n</parameter>\n<parameter=extra>\n42\n</parameter>\n</function>\n</tool_call>",
           "", "Need it.", "get_weather({\"city\":\"New York\",\"days\":3,\"t\":2.5,\"hourly\":true,\"tags\":[\"a\",1],"
           "\"where\":{\"lat\":1},\"mode\":7,\"extra\":\"42\"});");
    expect("qwen35: values that do not fit their type", &q,
           "</think><tool_call>\n<function=get_weather>\n<parameter=days>\nmany\n</parameter>\n<parameter=hourly>\nyes\n"
           "</parameter>\n<parameter=city>\nnull\n</parameter>\n<parameter=mode>\nfast\n</parameter>\n</function>\n</tool_call>",
           "", "", "get_weather({\"days\":\"many\",\"hourly\":false,\"city\":null,\"mode\":\"fast\"});");
    expect("qwen35: a call before </think> ends the thinking", &q,
           "I will call.\n<tool_call>\n<function=now>\n</function>\n</tool_call>", "", "I will call.", "now({});");
    expect("qwen35: two calls, multi-line value, text in it escaped nowhere", &nothink,
           "Checking.\n<tool_call>\n<function=run>\n<parameter=cmd>\na < b && c\nd\n</parameter>\n</function>\n</tool_call>\n"
           "<tool_call>\n<function=now>\n</function>\n</tool_call>", "Checking.\n", "",
           "run({\"cmd\":\"a < b && c\\nd\"});now({});");
    expect("qwen35: an unclosed parameter stays content", &nothink,
           "<tool_call>\n<function=f>\n<parameter=x>\n1\n</function>\n</tool_call>",
           "<tool_call>\n<function=f>\n<parameter=x>\n1\n</function>\n</tool_call>", "", "");
    expect("qwen35: no function stays content", &nothink, "<tool_call>\n<parameter=x>1</parameter>\n</tool_call>",
           "<tool_call>\n<parameter=x>1</parameter>\n</tool_call>", "", "");
    expect("qwen35: an empty function name stays content", &nothink, "<tool_call><function=></function></tool_call>",
           "<tool_call><function=></function></tool_call>", "", "");
    expect("qwen35: cut off inside the call", &nothink, "<tool_call>\n<function=f>\n<parameter=x>\n1",
           "<tool_call>\n<function=f>\n<parameter=x>\n1", "", "");
    expect("qwen35: JSON calls still work", &nothink, "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>",
           "", "", "f({});");
}

/* Random replies made of marker pieces: fed whole and byte by byte, the split is the same
 * (a marker cut anywhere by the stream), and nothing crashes (the sanitizer build). */
static void test_stream_invariance(void) {
    static const char *const pieces[] = {"<|channel|>", "analysis", "final", "commentary", " to=functions.f", "<|message|>",
                                         "<|end|>", "<|start|>", "assistant", "<|constrain|>json", "{\"a\": 1}", "{",
                                         "}", "[", "]", "\"", "<think>", "</think>", "<tool_call>", "</tool_call>",
                                         "[TOOL_CALLS]", "<|python_tag|>", "<|", "|>", " ", "\n", "x", "é",
                                         "<|channel>", "<channel|>", "thought\n", "<|tool_call>", "<tool_call|>",
                                         "call:f{", "<|\"|>", "<|tool_response>", "<function=f>", "<parameter=a>",
                                         "</parameter>", "</function>", "\"a\"", ":", ","};
    const int np = (int)(sizeof pieces / sizeof pieces[0]);
    uint32_t seed = 12345;
    for (int round = 0; round < 4000; round++) {
        char text[512] = "";
        int n = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 24;
        for (int i = 0; i < n; i++) strcat(text, pieces[((seed = seed * 1103515245u + 12345u) >> 16) % (uint32_t)np]);
        reply_parse_opts o = {.harmony = round % 3 == 0, .thinking = round % 2 == 0, .tools = round % 5 != 0,
                              .gemma4 = round % 7 == 2, .qwen35 = round % 7 == 3, .start_in_thinking = round % 7 == 3};
        if (round % 4 == 1) strcpy(o.tool_tag, "<|python_tag|>");
        result a, b;
        parse(&o, text, 1, &a);
        parse(&o, text, strlen(text) + 1, &b);
        bool same = !strcmp(bytebuf_str(&a.content), bytebuf_str(&b.content)) &&
                    !strcmp(bytebuf_str(&a.thinking), bytebuf_str(&b.thinking)) && !strcmp(bytebuf_str(&a.calls), bytebuf_str(&b.calls));
        CHECKF(same, "round %d [%s]: byte by byte [%s|%s|%s], whole [%s|%s|%s]", round, text, bytebuf_str(&a.content),
               bytebuf_str(&a.thinking), bytebuf_str(&a.calls), bytebuf_str(&b.content), bytebuf_str(&b.thinking),
               bytebuf_str(&b.calls));
        result_free(&a);
        result_free(&b);
        if (!same) break;
    }
}

int main(void) {
    const reply_parse_opts both = {.thinking = true, .tools = true}, think = {.thinking = true},
                           tools = {.tools = true}, none = {0}, opened = {.thinking = true, .start_in_thinking = true};
    expect("think then text", &think, "<think>\nI reason.\n</think>\n\nHello there", "Hello there", "I reason.\n", "");
    expect("think off: the tags are text", &none, "<think>x</think>y", "<think>x</think>y", "", "");
    expect("the prompt opened <think>", &opened, "abc</think>def", "def", "abc", "");
    expect("a tag split anywhere", &think, "a <thi", "a <thi", "", "");
    expect("a lookalike", &think, "x <thinking> y", "x <thinking> y", "", "");
    expect("hermes call", &tools, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
           "", "", "get_weather({\"city\":\"Paris\"});");
    expect("text then two hermes calls", &tools,
           "Sure.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n"
           "{\"name\": \"b\", \"arguments\": {\"n\": 2}}\n</tool_call>",
           "Sure.\n", "", "a({});b({\"n\":2});");
    expect("think, then a call", &both,
           "<think>\nNeed weather.\n</think>\n\n<tool_call>\n{\"name\": \"w\", \"arguments\": {\"c\": \"X\"}}\n</tool_call>", "",
           "Need weather.\n", "w({\"c\":\"X\"});");
    expect("a malformed call stays text", &tools, "<tool_call>{not json}</tool_call> ok",
           "<tool_call>{not json}</tool_call> ok", "", "");
    expect("an unclosed call at the end", &tools, "<tool_call>{\"name\": \"f\", \"arguments\": {}}", "", "", "f({});");
    expect("tools off: tags are text", &none, "<tool_call>{\"name\": \"f\"}</tool_call>",
           "<tool_call>{\"name\": \"f\"}</tool_call>", "", "");
    expect("mistral", &tools, "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"q\": \"r\"}}, {\"name\": \"g\"}]", "", "",
           "f({\"q\":\"r\"});g({});");
    /* Ministral 3 / Magistral / Devstral 2 (Ollama's ministral parser's forms); [CALL_ID]: Mistral Small 3.2 */
    const reply_parse_opts ministral = {.thinking = true, .tools = true, .think_open = "[THINK]", .think_close = "[/THINK]"};
    expect("ministral: think, then two calls", &ministral,
           "[THINK]Need the weather.[/THINK]\n[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\", \"days\": 2}"
           "[TOOL_CALLS]now[ARGS]{}", "", "Need the weather.", "get_weather({\"city\":\"Paris\",\"days\":2});now({});");
    expect("ministral: text then a call", &ministral, "Let me check.[TOOL_CALLS]f[ARGS]{\"q\": {\"a\": [1, \"}\"]}}",
           "Let me check.", "", "f({\"q\":{\"a\":[1,\"}\"]}});");
    expect("mistral small 3.2: [CALL_ID]", &tools, "[TOOL_CALLS]f[CALL_ID]a1b2c3d4e[ARGS]{\"x\": 1}", "", "", "f({\"x\":1});");
    expect("ministral: thinking then an answer", &ministral, "[THINK]hmm[/THINK]  It is 18C.", "It is 18C.", "hmm", "");
    expect("ministral: args not an object stay text", &ministral, "[TOOL_CALLS]f[ARGS][1]",
           "[TOOL_CALLS]f[ARGS][1]", "", "");
    expect("ministral: no name stays text", &ministral, "[TOOL_CALLS][ARGS]{}", "[TOOL_CALLS][ARGS]{}", "", "");
    expect("ministral: trailing text after a call stays text", &ministral, "[TOOL_CALLS]f[ARGS]{} and more",
           "[TOOL_CALLS]f[ARGS]{} and more", "", "");
    expect("llama 3 bare JSON with parameters", &tools, " {\"name\": \"f\", \"parameters\": {\"x\": \"y\"}}", "", "",
           "f({\"x\":\"y\"});");
    expect("arguments as JSON text", &tools, "{\"name\": \"f\", \"arguments\": \"{\\\"k\\\": 1}\"}", "", "", "f({\"k\":1});");
    expect("JSON that is not a call", &tools, "{\"answer\": 42}", "{\"answer\": 42}", "", "");
    expect("an array that is not calls", &tools, "[1, 2, 3]", "[1, 2, 3]", "", "");
    expect("JSON after text is text", &tools, "Here: {\"name\": \"f\", \"arguments\": {}}",
           "Here: {\"name\": \"f\", \"arguments\": {}}", "", "");
    expect("a bare [TOOL_C prefix that is not one", &tools, "[TOOL_X]", "[TOOL_X]", "", "");
    expect("plain text", &both, "just words", "just words", "", "");
    expect("empty", &both, "", "", "", "");
    /* the count after the whole reply */
    reply_parser *p = reply_parser_new(&tools);
    reply_delta d = {0};
    const char *two = "<tool_call>{\"name\":\"a\"}</tool_call><tool_call>{\"name\":\"b\"}</tool_call>";
    CHECK(reply_parser_feed(p, two, strlen(two), &d) && reply_parser_finish(p, &d));
    CHECK(reply_parser_n_calls(p) == 2);
    reply_delta_free(&d);
    reply_parser_free(p);
    test_harmony();
    test_gemma4();
    test_qwen35();
    test_stream_invariance();
    return tu_finish();
}
