/* test_chat: engine/prompt/chat.c. Exact prompts for every format (the expected strings are the
 * published formats, the 6-message ones are the outputs llama.cpp's own test suite,
 * tests/test-chat-template.cpp, expects from its built-in templates), detection on real
 * excerpts of models' chat templates, architecture fallback, roles and bad input. */
#include "chat.h"
#include "chat_formats.h"
#include "error.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static int check_render(chat_format f, const chat_message *m, int n, bool add_assistant, const char *want) {
    char *got = chat_apply(f, m, n, add_assistant);
    int ok = got && strcmp(got, want) == 0;
    if (!ok) {
        fprintf(stderr, "format %s, %d messages:\n  got:  [%s]\n  want: [%s]\n", chat_format_name(f), n,
                got ? got : "(NULL)", want);
        if (!got) fprintf(stderr, "  error: %s\n", anv_last_error());
    }
    free(got);
    return ok;
}

/* system + user + assistant + user, with whitespace around the reply to see trimming */
static const chat_message CONV4[] = {
    {.role = "system", .content = "You are a helpful assistant"},
    {.role = "user", .content = "Hello"},
    {.role = "assistant", .content = "  Hi there  "},
    {.role = "user", .content = "Who are you"},
};

static void test_formats(void) {
    CHECK(check_render(CHAT_GEMMA, CONV4, 4, true,
                       "<start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>\n"
                       "<start_of_turn>model\nHi there<end_of_turn>\n"
                       "<start_of_turn>user\nWho are you<end_of_turn>\n"
                       "<start_of_turn>model\n"));
    CHECK(check_render(CHAT_GEMMA, CONV4, 4, false,
                       "<start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>\n"
                       "<start_of_turn>model\nHi there<end_of_turn>\n"
                       "<start_of_turn>user\nWho are you<end_of_turn>\n"));
    CHECK(check_render(CHAT_LLAMA3, CONV4, 4, true,
                       "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant<|eot_id|>"
                       "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
                       "<|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>"
                       "<|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|>"
                       "<|start_header_id|>assistant<|end_header_id|>\n\n"));
    CHECK(check_render(CHAT_LLAMA3, CONV4, 4, false,
                       "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant<|eot_id|>"
                       "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
                       "<|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>"
                       "<|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|>"));
    CHECK(check_render(CHAT_CHATML, CONV4, 4, true,
                       "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n"
                       "<|im_start|>user\nHello<|im_end|>\n"
                       "<|im_start|>assistant\n  Hi there  <|im_end|>\n"
                       "<|im_start|>user\nWho are you<|im_end|>\n"
                       "<|im_start|>assistant\n"));
    CHECK(check_render(CHAT_CHATML, CONV4, 4, false,
                       "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n"
                       "<|im_start|>user\nHello<|im_end|>\n"
                       "<|im_start|>assistant\n  Hi there  <|im_end|>\n"
                       "<|im_start|>user\nWho are you<|im_end|>\n"));
    /* [INST] formats end at [/INST]: add_assistant makes no difference */
    const char *mistral = "[INST] You are a helpful assistant\n\nHello[/INST] Hi there</s>[INST] Who are you[/INST]";
    CHECK(check_render(CHAT_MISTRAL, CONV4, 4, true, mistral));
    CHECK(check_render(CHAT_MISTRAL, CONV4, 4, false, mistral));
    const char *llama2 = "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]Hi there</s>"
                         "[INST] Who are you [/INST]";
    CHECK(check_render(CHAT_LLAMA2, CONV4, 4, true, llama2));
    CHECK(check_render(CHAT_LLAMA2, CONV4, 4, false, llama2));
    CHECK(check_render(CHAT_RAW, CONV4, 4, true, "You are a helpful assistantHello  Hi there  Who are you"));

    /* no format starts with the BOS text */
    for (int f = CHAT_RAW; f <= CHAT_LLAMA2; f++) {
        char *s = chat_apply((chat_format)f, CONV4, 4, true);
        CHECK(s && strncmp(s, "<bos>", 5) != 0 && strncmp(s, "<s>", 3) != 0 &&
              strncmp(s, "<|begin_of_text|>", 17) != 0);
        free(s);
    }
}

/* The conversation of llama.cpp's tests/test-chat-template.cpp and the outputs it expects
 * from its built-in templates for these formats. */
static void test_llamacpp_conversation(void) {
    static const chat_message conv[] = {
        {.role = "system", .content = "You are a helpful assistant"}, {.role = "user", .content = "Hello"},
        {.role = "assistant", .content = "Hi there"},                 {.role = "user", .content = "Who are you"},
        {.role = "assistant", .content = "   I am an assistant   "},  {.role = "user", .content = "Another question"},
    };
    CHECK(check_render(CHAT_GEMMA, conv, 6, true,
                       "<start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>\n<start_of_turn>model\nHi "
                       "there<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\nI am an "
                       "assistant<end_of_turn>\n<start_of_turn>user\nAnother "
                       "question<end_of_turn>\n<start_of_turn>model\n"));
    CHECK(check_render(CHAT_CHATML, conv, 6, true,
                       "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|"
                       "im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are "
                       "you<|im_end|>\n<|im_start|>assistant\n   I am an assistant   "
                       "<|im_end|>\n<|im_start|>user\nAnother question<|im_end|>\n<|im_start|>assistant\n"));
    CHECK(check_render(CHAT_LLAMA3, conv, 6, true,
                       "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful "
                       "assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>"
                       "assistant<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWho "
                       "are you<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nI am an "
                       "assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nAnother "
                       "question<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"));
    CHECK(check_render(CHAT_MISTRAL, conv, 6, true,
                       "[INST] You are a helpful assistant\n\nHello[/INST] Hi there</s>[INST] Who are you[/INST] I am an "
                       "assistant</s>[INST] Another question[/INST]"));
    CHECK(check_render(CHAT_LLAMA2, conv, 6, true,
                       "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]Hi there</s>[INST] Who are "
                       "you [/INST]I am an assistant</s>[INST] Another question [/INST]"));
    CHECK(check_render(CHAT_PHI3, conv, 6, true,
                       "<|system|>\nYou are a helpful assistant<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\nHi "
                       "there<|end|>\n<|user|>\nWho are you<|end|>\n<|assistant|>\n   I am an assistant   <|end|>\n"
                       "<|user|>\nAnother question<|end|>\n<|assistant|>\n"));
    CHECK(check_render(CHAT_PHI4, conv, 6, true,
                       "<|im_start|>system<|im_sep|>You are a helpful assistant<|im_end|><|im_start|>user<|im_sep|>Hello"
                       "<|im_end|><|im_start|>assistant<|im_sep|>Hi there<|im_end|><|im_start|>user<|im_sep|>Who are you"
                       "<|im_end|><|im_start|>assistant<|im_sep|>   I am an assistant   <|im_end|><|im_start|>user"
                       "<|im_sep|>Another question<|im_end|><|im_start|>assistant<|im_sep|>"));
    CHECK(check_render(CHAT_DEEPSEEK3, conv, 6, true,
                       "You are a helpful assistant\n\n<\xef\xbd\x9c" "User\xef\xbd\x9c>Hello<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>Hi there<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c><\xef\xbd\x9c" "User\xef\xbd\x9c>Who are you<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>   I am an assistant   <\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c><\xef\xbd\x9c" "User\xef\xbd\x9c>Another "
                       "question<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>"));
}

static void test_gemma_system_folding(void) {
    /* several system messages join (trimmed); a system message waits for a user turn */
    static const chat_message a[] = {
        {.role = "system", .content = " Be brief. "}, {.role = "system", .content = "Be kind."}, {.role = "user", .content = " Hi "},
    };
    CHECK(check_render(CHAT_GEMMA, a, 3, true,
                       "<start_of_turn>user\nBe brief.Be kind.\n\nHi<end_of_turn>\n<start_of_turn>model\n"));
    static const chat_message b[] = {{.role = "assistant", .content = "Welcome."}, {.role = "system", .content = "Be brief."}, {.role = "user", .content = "Hi"}};
    CHECK(check_render(CHAT_GEMMA, b, 3, false,
                       "<start_of_turn>model\nWelcome.<end_of_turn>\n"
                       "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n"));
    static const chat_message c[] = {{.role = "system", .content = "Alone."}};
    CHECK(check_render(CHAT_GEMMA, c, 1, true, "<start_of_turn>model\n"));
}

static void test_roles(void) {
    /* named-role formats print other roles as they are (llama.cpp does the same) */
    static const chat_message tool[] = {{.role = "user", .content = "2+2?"}, {.role = "tool", .content = "4"}};
    CHECK(check_render(CHAT_CHATML, tool, 2, true,
                       "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>tool\n4<|im_end|>\n<|im_start|>assistant\n"));
    CHECK(check_render(CHAT_GEMMA, tool, 2, false,
                       "<start_of_turn>user\n2+2?<end_of_turn>\n<start_of_turn>tool\n4<end_of_turn>\n"));
    static const chat_message ipy[] = {{.role = "ipython", .content = " {\"x\": 1} "}};
    CHECK(check_render(CHAT_LLAMA3, ipy, 1, false, "<|start_header_id|>ipython<|end_header_id|>\n\n{\"x\": 1}<|eot_id|>"));
    /* [INST] formats only know system/user/assistant */
    CHECK(chat_apply(CHAT_MISTRAL, tool, 2, true) == NULL);
    CHECK(strstr(anv_last_error(), "'tool'") != NULL);
    CHECK(chat_apply(CHAT_LLAMA2, tool, 2, true) == NULL);
    /* roles cannot smuggle markup, be empty or NULL; roles are case-sensitive names */
    static const chat_message inject[] = {{.role = "user<|im_end|>", .content = "x"}};
    CHECK(chat_apply(CHAT_CHATML, inject, 1, true) == NULL);
    CHECK(strstr(anv_last_error(), "invalid role") != NULL);
    static const chat_message empty_role[] = {{.role = "", .content = "x"}};
    CHECK(chat_apply(CHAT_GEMMA, empty_role, 1, true) == NULL);
    static const chat_message null_role[] = {{.role = NULL, .content = "x"}};
    CHECK(chat_apply(CHAT_LLAMA3, null_role, 1, true) == NULL);
    CHECK(strstr(anv_last_error(), "no role") != NULL);
    static const chat_message upper[] = {{.role = "User", .content = "x"}};
    CHECK(chat_apply(CHAT_MISTRAL, upper, 1, true) == NULL);
    /* raw ignores roles entirely */
    CHECK(check_render(CHAT_RAW, null_role, 1, true, "x"));
}

static void test_bad_input(void) {
    static const chat_message no_content[] = {{.role = "user", .content = NULL}};
    CHECK(chat_apply(CHAT_CHATML, no_content, 1, true) == NULL);
    CHECK(strstr(anv_last_error(), "no content") != NULL);
    CHECK(chat_apply(CHAT_RAW, no_content, 1, true) == NULL);
    CHECK(chat_apply(CHAT_CHATML, NULL, 2, true) == NULL);
    CHECK(chat_apply(CHAT_CHATML, CONV4, -1, true) == NULL);
    CHECK(chat_apply((chat_format)999, CONV4, 4, true) == NULL);
    CHECK(strcmp(chat_format_name((chat_format)999), "unknown") == 0);
    /* an empty conversation is valid */
    CHECK(check_render(CHAT_CHATML, NULL, 0, true, "<|im_start|>assistant\n"));
    CHECK(check_render(CHAT_GEMMA, NULL, 0, false, ""));
    CHECK(check_render(CHAT_RAW, NULL, 0, true, ""));
    /* an empty message is rendered as empty */
    static const chat_message blank[] = {{.role = "user", .content = ""}};
    CHECK(check_render(CHAT_LLAMA3, blank, 1, false, "<|start_header_id|>user<|end_header_id|>\n\n<|eot_id|>"));
}

static void test_names(void) {
    static const char *names[] = {"raw", "gemma", "llama3", "chatml", "mistral", "llama2"};
    for (int f = 0; f < 6; f++) {
        CHECK(strcmp(chat_format_name((chat_format)f), names[f]) == 0);
        CHECK(chat_format_from_name(names[f]) == f);
    }
    CHECK(chat_format_from_name("ChatML") == CHAT_CHATML);
    CHECK(chat_format_from_name("no-such-format") == -1);
    CHECK(strstr(anv_last_error(), "no-such-format") != NULL);
    CHECK(chat_format_from_name(NULL) == -1);
}

/* ---- detection on real template excerpts ------------------------------------------- */

/* google/gemma-3-*-it tokenizer_config.json (start) */
static const char GEMMA3_TEMPLATE[] =
    "{{ bos_token }}\n"
    "{%- if messages[0]['role'] == 'system' -%}\n"
    "    {%- if messages[0]['content'] is string -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}\n"
    "    {%- else -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\\n\\n' -%}\n"
    "    {%- endif -%}\n"
    "    {%- set loop_messages = messages[1:] -%}\n"
    "{%- else -%}\n"
    "    {%- set first_user_prefix = \"\" -%}\n"
    "    {%- set loop_messages = messages -%}\n"
    "{%- endif -%}\n"
    "{%- for message in loop_messages -%}\n"
    "    {%- if (message['role'] == 'assistant') -%}\n"
    "        {%- set role = \"model\" -%}\n"
    "    {%- else -%}\n"
    "        {%- set role = message['role'] -%}\n"
    "    {%- endif -%}\n"
    "    {{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else \"\") }}\n";

/* meta-llama/Llama-3.2-3B-Instruct (message loop) */
static const char LLAMA32_TEMPLATE[] =
    "{{- bos_token }}\n"
    "{#- System message #}\n"
    "{{- \"<|start_header_id|>system<|end_header_id|>\\n\\n\" }}\n"
    "{{- \"Cutting Knowledge Date: December 2023\\n\" }}\n"
    "{%- for message in messages %}\n"
    "    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}\n"
    "        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + "
    "'<|eot_id|>' }}\n";

/* Qwen/Qwen2.5-7B-Instruct */
static const char QWEN25_TEMPLATE[] =
    "{%- if messages[0]['role'] == 'system' %}\n"
    "        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n"
    "    {%- else %}\n"
    "        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
    "assistant.<|im_end|>\\n' }}\n"
    "    {%- endif %}\n"
    "{%- for message in messages %}\n"
    "    {%- if (message.role == \"user\") or (message.role == \"system\" and not loop.first) %}\n"
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n";

/* mistralai/Mistral-7B-Instruct-v0.3 ('v3': tools, "[INST] " with a space) */
static const char MISTRAL_V3_TEMPLATE[] =
    "{%- for message in loop_messages %}\n"
    "    {%- if message[\"role\"] == \"user\" %}\n"
    "        {%- if tools is not none and (message == user_messages[-1]) %}\n"
    "            {{- \"[AVAILABLE_TOOLS] [\" }}\n"
    "        {%- endif %}\n"
    "        {%- if loop.last and system_message is defined %}\n"
    "            {{- \"[INST] \" + system_message + \"\\n\\n\" + message[\"content\"] + \"[/INST]\" }}\n"
    "        {%- else %}\n"
    "            {{- \"[INST] \" + message[\"content\"] + \"[/INST]\" }}\n";

/* mistralai/Mistral-Nemo-Instruct-2407 ('v3-tekken') */
static const char MISTRAL_NEMO_TEMPLATE[] =
    "            {{- \"[AVAILABLE_TOOLS][\" }}\n"
    "            {%- for tool in tools %}\n"
    "            {{- \"[/AVAILABLE_TOOLS]\" }}\n"
    "            {%- endif %}\n"
    "        {%- if loop.last and system_message is defined %}\n"
    "            {{- \"[INST]\" + system_message + \"\\n\\n\" + message[\"content\"] + \"[/INST]\" }}\n"
    "        {%- else %}\n"
    "            {{- \"[INST]\" + message[\"content\"] + \"[/INST]\" }}\n";

/* mistralai/Mistral-Small-3.2-24B-Instruct-2506 ('v7') */
static const char MISTRAL_SMALL_TEMPLATE[] =
    "{{- bos_token }}\n"
    "{{- '[SYSTEM_PROMPT]' + system_prompt + '[/SYSTEM_PROMPT]' }}\n"
    "{%- for message in loop_messages %}\n"
    "    {%- if message['role'] == 'user' %}\n"
    "        {{- '[INST]' }}\n";

/* mistralai/Mistral-7B-Instruct-v0.2 (old template: llama.cpp treats it as Llama 2) */
static const char MISTRAL_V02_TEMPLATE[] =
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) "
    "%}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif "
    "%}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif "
    "message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only "
    "user and assistant roles are supported!') }}{% endif %}{% endfor %}";

/* meta-llama/Llama-2-7b-chat-hf */
static const char LLAMA2_TEMPLATE[] =
    "{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + "
    "'\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% "
    "if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif "
    "message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}";

/* microsoft/phi-4: <|im_start|> but not ChatML */
static const char PHI4_TEMPLATE[] =
    "{% for message in messages %}{% if (message['role'] == 'system') %}{{'<|im_start|>system<|im_sep|>' + "
    "message['content'] + '<|im_end|>'}}{% endif %}{% endfor %}";

static void test_detection(void) {
    CHECK(chat_detect(GEMMA3_TEMPLATE, "gemma3") == CHAT_GEMMA);
    CHECK(chat_detect(GEMMA3_TEMPLATE, NULL) == CHAT_GEMMA);
    CHECK(chat_detect(LLAMA32_TEMPLATE, "llama") == CHAT_LLAMA3);
    CHECK(chat_detect(QWEN25_TEMPLATE, "qwen2") == CHAT_CHATML);
    CHECK(chat_detect(QWEN25_TEMPLATE, "llama") == CHAT_CHATML); /* the template wins over the architecture */
    CHECK(chat_detect(MISTRAL_V3_TEMPLATE, "llama") == CHAT_MISTRAL);
    CHECK((int)chat_detect(MISTRAL_NEMO_TEMPLATE, "llama") == chat_format_from_name("mistral-v3-tekken"));
    CHECK((int)chat_detect(MISTRAL_SMALL_TEMPLATE, "mistral3") == chat_format_from_name("mistral-v7"));
    CHECK((int)chat_detect(MISTRAL_V02_TEMPLATE, "llama") == CHAT_BUILTIN + chat_builtin_find("llama2"));
    CHECK(chat_detect(LLAMA2_TEMPLATE, "llama") == CHAT_LLAMA2);
    CHECK(chat_detect(PHI4_TEMPLATE, "phi3") == CHAT_PHI4);
    CHECK(chat_detect(PHI4_TEMPLATE, "qwen2") == CHAT_PHI4); /* <|im_sep|>: not ChatML */
    CHECK(chat_detect("{% for m in messages %}<|{{ m.role }}|>\n{{ m.content }}<|end|>\n{% endfor %}<|assistant|>\n",
                      "phi3") == CHAT_PHI3);
    CHECK(chat_detect("{{'<\xef\xbd\x9c" "User\xef\xbd\x9c>' + c}}{{'<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>'}}"
                      "{{'<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>'}}", "qwen2") == CHAT_DEEPSEEK3);
    CHECK(!chat_template_unrecognised(PHI4_TEMPLATE) && !chat_template_unrecognised(NULL) &&
          !chat_template_unrecognised(""));
    CHECK(chat_template_unrecognised("{{ messages[0]['content'] }}"));

    /* a format name works as a template, as in llama.cpp */
    CHECK(chat_detect("chatml", "gemma3") == CHAT_CHATML);
    CHECK(chat_detect("Llama3", NULL) == CHAT_LLAMA3);
    CHECK((int)chat_detect("mistral-v7", NULL) == chat_format_from_name("mistral-v7"));

    /* no template (NULL or "") or an unrecognised one: the architecture decides */
    CHECK(chat_detect(NULL, "gemma3") == CHAT_GEMMA);
    CHECK(chat_detect("", "gemma") == CHAT_GEMMA);
    CHECK(chat_detect(NULL, "gemma2") == CHAT_GEMMA);
    CHECK(chat_detect(NULL, "qwen2") == CHAT_CHATML);
    CHECK(chat_detect(NULL, "qwen3") == CHAT_CHATML);
    CHECK(chat_detect("", "qwen3moe") == CHAT_CHATML);
    CHECK(chat_detect(NULL, "llama") == CHAT_LLAMA2);
    CHECK(chat_detect("{{ messages[0]['content'] }}", "gemma3") == CHAT_GEMMA);
    CHECK(chat_detect(NULL, "bert") == CHAT_RAW);
    CHECK(chat_detect(NULL, NULL) == CHAT_RAW);
    CHECK(chat_detect("", "") == CHAT_RAW);
}

int main(void) {
    test_formats();
    test_llamacpp_conversation();
    test_gemma_system_folding();
    test_roles();
    test_bad_input();
    test_names();
    test_detection();
    return tu_finish();
}
