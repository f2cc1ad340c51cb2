/* test_chat_tools: engine/prompt/chat_tools.c. The ChatML (Qwen 2.5 / Qwen 3) rendering of
 * tools, an assistant's tool calls and tool results, as Qwen 3's official Jinja template
 * prints them (the expected text is that template's output for these messages, written out
 * by hand from the template); think off; formats without tools refusing them; capability
 * detection by Ollama's rules (tools: "tools" or "tool_call" in the template; thinking:
 * "<think>" and "</think>"). */
#include "chat.h"
#include "error.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static const char *TOOLS =
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Weather in a city\","
    "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}}}]";

static void test_round_trip(void) {
    const chat_message m[] = {
        {.role = "system", .content = "Be brief."},
        {.role = "user", .content = "Weather in Paris and Rome?"},
        {.role = "assistant", .content = "",
         .tool_calls = "[{\"function\":{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}},"
                       "{\"function\":{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Rome\"}}}]"},
        {.role = "tool", .content = "18C", .tool_name = "get_weather"},
        {.role = "tool", .content = "25C", .tool_name = "get_weather"},
    };
    char *got = chat_apply_ex(CHAT_CHATML, m, 5, true, &(chat_extras){.tools_json = TOOLS});
    const char *want =
        "<|im_start|>system\nBe brief.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
        "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Weather in a city\", "
        "\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}\n"
        "</tools>\n\nFor each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
        "</tool_call><|im_end|>\n"
        "<|im_start|>user\nWeather in Paris and Rome?<|im_end|>\n"
        "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call><|im_end|>\n"
        "<|im_start|>user\n<tool_response>\n18C\n</tool_response>\n<tool_response>\n25C\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n";
    CHECKF(got && !strcmp(got, want), "tool round trip:\n got: [%s]\nwant: [%s]", got ? got : anv_last_error(), want);
    free(got);
}

static void test_think_and_refusals(void) {
    const chat_message u[] = {{.role = "user", .content = "Hi"}};
    char *got = chat_apply_ex(CHAT_CHATML, u, 1, true, &(chat_extras){.think = CHAT_THINK_OFF});
    CHECK(got && !strcmp(got, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"));
    free(got);
    got = chat_apply_ex(CHAT_CHATML, u, 1, true, &(chat_extras){.think = CHAT_THINK_ON});
    CHECK(got && !strcmp(got, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"));
    free(got);
    /* tools without a system message: the tools block is the system turn */
    got = chat_apply_ex(CHAT_CHATML, u, 1, true, &(chat_extras){.tools_json = "[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]"});
    CHECK(got && !strncmp(got, "<|im_start|>system\n# Tools\n\n", 28) &&
          strstr(got, "<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"f\"}}\n</tools>"));
    free(got);
    /* no tool calling in the other formats */
    CHECK(chat_apply_ex(CHAT_GEMMA, u, 1, true, &(chat_extras){.tools_json = TOOLS}) == NULL);
    CHECK(strstr(anv_last_error(), "gemma") && strstr(anv_last_error(), "tool"));
    /* malformed input */
    CHECK(chat_apply_ex(CHAT_CHATML, u, 1, true, &(chat_extras){.tools_json = "{\"not\":\"an array\"}"}) == NULL);
    const chat_message bad[] = {{.role = "assistant", .content = "", .tool_calls = "[{\"function\":{}}]"}};
    CHECK(chat_apply_ex(CHAT_CHATML, bad, 1, true, &(chat_extras){.tools_json = TOOLS}) == NULL);
    CHECK(strstr(anv_last_error(), "name") != NULL);
    /* x NULL is chat_apply */
    got = chat_apply_ex(CHAT_LLAMA3, u, 1, false, NULL);
    CHECK(got && !strcmp(got, "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"));
    free(got);
}

static void test_capabilities(void) {
    CHECK(chat_format_has_tools(CHAT_CHATML, NULL));
    CHECK(chat_format_has_tools(CHAT_CHATML, "{% if tools %}...<tool_call>{% endif %}<|im_start|>"));
    CHECK(!chat_format_has_tools(CHAT_CHATML, "{% for m in messages %}<|im_start|>{% endfor %}"));
    CHECK(!chat_format_has_tools(CHAT_GEMMA, "{% if tools %}"));
    CHECK(chat_format_has_thinking(CHAT_CHATML, "<think>...</think>", "qwen2"));
    CHECK(!chat_format_has_thinking(CHAT_CHATML, "<think> only", "qwen2"));
    CHECK(chat_format_has_thinking(CHAT_CHATML, NULL, "qwen3"));
    CHECK(!chat_format_has_thinking(CHAT_CHATML, NULL, "qwen2"));
    CHECK(!chat_format_has_thinking(CHAT_GEMMA, NULL, "gemma3"));
}

int main(void) {
    test_round_trip();
    test_think_and_refusals();
    test_capabilities();
    return tu_finish();
}
