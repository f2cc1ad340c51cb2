/* chat_formats: every built-in chat format of llama.cpp (the names llama_chat_builtin_templates
 * lists) as data: per role a pattern, a generation prompt, a few flags, and one small
 * interpreter. Checked byte for byte against llama.cpp's own rendering by
 * tests/prompt/test_chat_llamacpp.c (goldens from tests/prompt/llamacpp_render.py).
 * Pattern placeholders: %r role, %U role upper-cased, %C role with a capital first letter,
 * %c content, %t content trimmed (C isspace), %p the folded system text + "\n\n" (once, if
 * any), %s "<s>" except on the first message, %% a percent sign. */
#include "chat_formats.h"

#include "bytebuf.h"
#include "error.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

enum {
    F_FOLD_SYSTEM = 1,     /* the system pattern renders into %p of a later turn */
    F_SYSTEM_FIRST = 2,    /* only a system message at index 0 counts; later ones are dropped */
    F_GEN_NEVER = 4,       /* the prompt already ends where the reply starts */
    F_GEN_LAST_USER = 8,   /* the generation prompt follows a final user turn, add_ass or not */
    F_TURN_OPEN = 16,      /* turns: "reopen" before a message after an assistant turn */
    F_START_CLOSED = 32,   /* ... and before the first message too */
};

typedef struct {
    const char *role;      /* NULL: any other role */
    const char *pat;
} role_pat;

typedef struct {
    const char *name;
    const char *begin;             /* before everything */
    const char *begin_no_system;   /* before everything when message 0 is not a system one */
    role_pat roles[6];             /* first match wins; no match and no NULL entry: dropped */
    const char *gen;               /* generation prompt */
    const char *reopen;            /* F_TURN_OPEN */
    unsigned flags;
} fmt_spec;

#define SYS(p) {"system", p}
#define USR(p) {"user", p}
#define AST(p) {"assistant", p}
#define ANY(p) {NULL, p}
#define LLAMA2(name, sys, t, reopen_)                                                                         \
    {name, "[INST] ", NULL, {SYS(sys), USR(t " [/INST]"), ANY(t "</s>")}, NULL, reopen_, F_TURN_OPEN | F_GEN_NEVER}
#define DS_EOS "<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>"

static const fmt_spec FORMATS[] = {
    {"chatml", NULL, NULL, {ANY("<|im_start|>%r\n%c<|im_end|>\n")}, "<|im_start|>assistant\n", NULL, 0},
    LLAMA2("llama2", "%c\n", "%c", "[INST] "),
    LLAMA2("llama2-sys", "<<SYS>>\n%c\n<</SYS>>\n\n", "%c", "[INST] "),
    LLAMA2("llama2-sys-bos", "<<SYS>>\n%c\n<</SYS>>\n\n", "%c", "<s>[INST] "),
    LLAMA2("llama2-sys-strip", "<<SYS>>\n%t\n<</SYS>>\n\n", "%t", "[INST] "),
    {"mistral-v1", NULL, NULL, {SYS("%c\n\n"), USR("%c [/INST]"), ANY(" %c</s>")}, NULL, " [INST] ",
     F_TURN_OPEN | F_START_CLOSED | F_GEN_NEVER},
    {"mistral-v3", NULL, NULL, {SYS("%c\n\n"), USR("%c[/INST]"), ANY(" %t</s>")}, NULL, "[INST] ",
     F_TURN_OPEN | F_START_CLOSED | F_GEN_NEVER},
    {"mistral-v3-tekken", NULL, NULL, {SYS("%c\n\n"), USR("%c[/INST]"), ANY("%c</s>")}, NULL, "[INST]",
     F_TURN_OPEN | F_START_CLOSED | F_GEN_NEVER},
    {"mistral-v7", NULL, NULL, {SYS("[SYSTEM_PROMPT] %c[/SYSTEM_PROMPT]"), USR("[INST] %c[/INST]"), ANY(" %c</s>")},
     NULL, NULL, F_GEN_NEVER},
    {"mistral-v7-tekken", NULL, NULL, {SYS("[SYSTEM_PROMPT]%c[/SYSTEM_PROMPT]"), USR("[INST]%c[/INST]"), ANY("%c</s>")},
     NULL, NULL, F_GEN_NEVER},
    {"phi3", NULL, NULL, {ANY("<|%r|>\n%c<|end|>\n")}, "<|assistant|>\n", NULL, 0},
    {"phi4", NULL, NULL, {ANY("<|im_start|>%r<|im_sep|>%c<|im_end|>")}, "<|im_start|>assistant<|im_sep|>", NULL, 0},
    {"falcon3", NULL, NULL, {ANY("<|%r|>\n%c\n")}, "<|assistant|>\n", NULL, 0},
    {"zephyr", NULL, NULL, {ANY("<|%r|>\n%c<|endoftext|>\n")}, "<|assistant|>\n", NULL, 0},
    {"monarch", NULL, NULL, {ANY("%s%r\n%c</s>\n")}, "<s>assistant\n", NULL, 0},
    {"gemma", NULL, NULL,
     {SYS("%t"), AST("<start_of_turn>model\n%t<end_of_turn>\n"), ANY("<start_of_turn>%r\n%p%t<end_of_turn>\n")},
     "<start_of_turn>model\n", NULL, F_FOLD_SYSTEM},
    {"orion", NULL, NULL, {SYS("%c"), USR("Human: %p%c\n\nAssistant: </s>"), ANY("%c</s>")}, NULL, NULL,
     F_FOLD_SYSTEM | F_GEN_NEVER},
    {"openchat", NULL, NULL, {SYS("%c<|end_of_turn|>"), ANY("GPT4 Correct %C: %c<|end_of_turn|>")},
     "GPT4 Correct Assistant:", NULL, 0},
    {"vicuna", NULL, NULL, {SYS("%c\n\n"), USR("USER: %c\n"), AST("ASSISTANT: %c</s>\n")}, "ASSISTANT:", NULL, 0},
    {"vicuna-orca", NULL, NULL, {SYS("SYSTEM: %c\n"), USR("USER: %c\n"), AST("ASSISTANT: %c</s>\n")}, "ASSISTANT:",
     NULL, 0},
    {"deepseek", NULL, NULL, {SYS("%c"), USR("### Instruction:\n%c\n"), AST("### Response:\n%c\n<|EOT|>\n")},
     "### Response:\n", NULL, 0},
    {"deepseek2", NULL, NULL, {SYS("%c\n\n"), USR("User: %c\n\n"), AST("Assistant: %c" DS_EOS)}, "Assistant:", NULL, 0},
    {"deepseek3", NULL, NULL,
     {SYS("%c\n\n"), USR("<\xef\xbd\x9cUser\xef\xbd\x9c>%c"), AST("<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>%c" DS_EOS)},
     "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>", NULL, 0},
    {"deepseek-ocr", NULL, NULL, {ANY("%c")}, NULL, NULL, F_GEN_NEVER},
    {"command-r", NULL, NULL,
     {SYS("<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>%t<|END_OF_TURN_TOKEN|>"),
      USR("<|START_OF_TURN_TOKEN|><|USER_TOKEN|>%t<|END_OF_TURN_TOKEN|>"),
      AST("<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>%t<|END_OF_TURN_TOKEN|>")},
     "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>", NULL, 0},
    {"llama3", NULL, NULL, {ANY("<|start_header_id|>%r<|end_header_id|>\n\n%t<|eot_id|>")},
     "<|start_header_id|>assistant<|end_header_id|>\n\n", NULL, 0},
    {"chatglm3", "[gMASK]sop", NULL, {ANY("<|%r|>\n %c")}, "<|assistant|>", NULL, 0},
    {"chatglm4", "[gMASK]<sop>", NULL, {ANY("<|%r|>\n%c")}, "<|assistant|>\n", NULL, 0},
    {"glmedge", NULL, NULL, {ANY("<|%r|>\n%c")}, "<|assistant|>", NULL, 0},
    {"minicpm", NULL, NULL, {USR("<\xe7\x94\xa8\xe6\x88\xb7>%t<AI>"), ANY("%t")}, NULL, NULL, F_GEN_NEVER},
    {"exaone3", NULL, NULL,
     {SYS("[|system|]%t[|endofturn|]\n"), USR("[|user|]%t\n"), AST("[|assistant|]%t[|endofturn|]\n")}, "[|assistant|]",
     NULL, 0},
    {"exaone4", NULL, NULL,
     {SYS("[|system|]%t[|endofturn|]\n"), USR("[|user|]%t\n"), AST("[|assistant|]%t[|endofturn|]\n"),
      {"tool", "[|tool|]%t[|endofturn|]\n"}},
     "[|assistant|]", NULL, 0},
    {"exaone-moe", NULL, NULL,
     {SYS("<|system|>\n%t<|endofturn|>\n"), USR("<|user|>\n%t<|endofturn|>\n"),
      AST("<|assistant|>\n%t<|endofturn|>\n"), {"tool", "<|tool|>\n%t<|endofturn|>\n"}},
     "<|assistant|>\n", NULL, 0},
    {"rwkv-world", NULL, NULL, {SYS("System: %t\n\n"), USR("User: %t\n\n"), AST("Assistant: %t\n\n")}, "Assistant:",
     NULL, F_GEN_LAST_USER},
    {"granite", NULL, NULL,
     {{"assistant_tool_call", "<|start_of_role|>%r<|end_of_role|><|tool_call|>%c<|end_of_text|>\n"},
      ANY("<|start_of_role|>%r<|end_of_role|>%c<|end_of_text|>\n")},
     "<|start_of_role|>assistant<|end_of_role|>", NULL, 0},
    {"granite-4.0", NULL, NULL,
     {{"assistant_tool_call", "<|start_of_role|>assistant<|end_of_role|><|tool_call|>%c<|end_of_text|>\n"},
      ANY("<|start_of_role|>%r<|end_of_role|>%c<|end_of_text|>\n")},
     "<|start_of_role|>assistant<|end_of_role|>", NULL, 0},
    {"granite-4.1", NULL, NULL,
     {{"assistant_tool_call", "<|start_of_role|>assistant<|end_of_role|><|tool_call|>%c<|end_of_text|>\n"},
      ANY("<|start_of_role|>%r<|end_of_role|>%c<|end_of_text|>\n")},
     "<|start_of_role|>assistant<|end_of_role|>", NULL, 0},
    {"gigachat", NULL, "<s>",
     {SYS("<s>%c<|message_sep|>"), USR("user<|role_sep|>%c<|message_sep|>available functions<|role_sep|>[]<|message_sep|>"),
      AST("assistant<|role_sep|>%c<|message_sep|>")},
     "assistant<|role_sep|>", NULL, F_SYSTEM_FIRST},
    {"megrez", NULL, NULL, {ANY("<|role_start|>%r<|role_end|>%c<|turn_end|>")}, "<|role_start|>assistant<|role_end|>",
     NULL, 0},
    {"yandex", NULL, NULL,
     {USR(" \xd0\x9f\xd0\xbe\xd0\xbb\xd1\x8c\xd0\xb7\xd0\xbe\xd0\xb2\xd0\xb0\xd1\x82\xd0\xb5\xd0\xbb\xd1\x8c: %c\n\n"),
      AST(" \xd0\x90\xd1\x81\xd1\x81\xd0\xb8\xd1\x81\xd1\x82\xd0\xb5\xd0\xbd\xd1\x82: %c\n\n")},
     " \xd0\x90\xd1\x81\xd1\x81\xd0\xb8\xd1\x81\xd1\x82\xd0\xb5\xd0\xbd\xd1\x82:[SEP]", NULL, 0},
    {"bailing", NULL, NULL, {USR("<role>HUMAN</role>%c"), ANY("<role>%U</role>%c")}, "<role>ASSISTANT</role>", NULL, 0},
    {"bailing-think", NULL, NULL, {USR("<role>HUMAN</role>%c"), ANY("<role>%U</role>%c")},
     "<role>ASSISTANT</role><think>", NULL, 0},
    {"bailing2", NULL, "<role>SYSTEM</role>detailed thinking off<|role_end|>",
     {USR("<role>HUMAN</role>%c<|role_end|>"), ANY("<role>%U</role>%c<|role_end|>")}, "<role>ASSISTANT</role>", NULL,
     0},
    {"llama4", NULL, NULL, {ANY("<|header_start|>%r<|header_end|>\n\n%t<|eot|>")},
     "<|header_start|>assistant<|header_end|>\n\n", NULL, 0},
    {"smolvlm", "<|im_start|>", NULL,
     {SYS("%c\n\n"), USR("User: %c<end_of_utterance>\n"), ANY("Assistant: %c<end_of_utterance>\n")}, "Assistant:", NULL,
     0},
    {"hunyuan-moe", NULL, NULL,
     {SYS("<|startoftext|>%c<|extra_4|>"), AST("%c<|eos|>"), ANY("<|startoftext|>%c<|extra_0|>")}, NULL, NULL,
     F_GEN_NEVER},
    {"gpt-oss", NULL, NULL, {AST("<|start|>%r<|message|>%c<|return|>"), ANY("<|start|>%r<|message|>%c<|end|>")},
     "<|start|>assistant", NULL, 0},
#define HY(x) "<\xef\xbd\x9chy_" x "\xef\xbd\x9c>"
#define HYPH(n) "<\xef\xbd\x9chy_place\xe2\x96\x81holder\xe2\x96\x81no\xe2\x96\x81" n "\xef\xbd\x9c>"
    {"hunyuan-dense", NULL, NULL, {SYS("%c" HYPH("3")), AST(HY("Assistant") "%c" HYPH("2")), USR(HY("User") "%c" HY("Assistant"))},
     NULL, NULL, F_SYSTEM_FIRST | F_GEN_NEVER},
    {"hunyuan-vl", "<\xef\xbd\x9chy_begin\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>", NULL,
     {SYS("%c" HYPH("3")), USR("%c" HY("User")), AST("%c" HY("Assistant"))}, NULL, NULL, F_SYSTEM_FIRST | F_GEN_NEVER},
    {"kimi-k2", NULL, NULL,
     {SYS("<|im_system|>system<|im_middle|>%c<|im_end|>"), USR("<|im_user|>user<|im_middle|>%c<|im_end|>"),
      AST("<|im_assistant|>assistant<|im_middle|>%c<|im_end|>"), {"tool", "<|im_system|>tool<|im_middle|>%c<|im_end|>"}},
     "<|im_assistant|>assistant<|im_middle|>", NULL, 0},
    {"seed_oss", NULL, NULL, {AST("<seed:bos>%r\n%t<seed:eos>"), ANY("<seed:bos>%r\n%c<seed:eos>")},
     "<seed:bos>assistant\n", NULL, 0},
    {"grok-2", NULL, NULL,
     {SYS("System: %t<|separator|>\n\n"), USR("Human: %t<|separator|>\n\n"), AST("Assistant: %c<|separator|>\n\n")},
     "Assistant:", NULL, 0},
#define PG(x) "[unused9]" x "\xef\xbc\x9a"
#define PG_SYS PG("\xe7\xb3\xbb\xe7\xbb\x9f")
    {"pangu-embedded", NULL, PG_SYS "[unused10]",
     {SYS(PG_SYS "%c[unused10]"), USR(PG("\xe7\x94\xa8\xe6\x88\xb7") "%c[unused10]"),
      AST(PG("\xe5\x8a\xa9\xe6\x89\x8b") "%c[unused10]"), {"tool", PG("\xe5\xb7\xa5\xe5\x85\xb7") "%c[unused10]"},
      {"function", PG("\xe6\x96\xb9\xe6\xb3\x95") "%c[unused10]"}},
     PG("\xe5\x8a\xa9\xe6\x89\x8b"), NULL, 0},
    {"solar-open", NULL, NULL, {ANY("<|begin|>%r<|content|>%c<|end|>")}, "<|begin|>assistant", NULL, 0},
};

int chat_builtin_count(void) { return (int)(sizeof FORMATS / sizeof FORMATS[0]); }

const char *chat_builtin_name(int i) { return i >= 0 && i < chat_builtin_count() ? FORMATS[i].name : NULL; }

int chat_builtin_find(const char *name) {
    for (int i = 0; name && i < chat_builtin_count(); i++)
        if (!strcmp(FORMATS[i].name, name)) return i;
    return -1;
}

static void put(bytebuf *b, const char *s, size_t n) { bytebuf_add(b, s, n); }
static void add(bytebuf *b, const char *s) { bytebuf_add(b, s, strlen(s)); }

static void add_trimmed(bytebuf *b, const char *s) {
    size_t i = 0, n = strlen(s);
    while (i < n && isspace((unsigned char)s[i])) i++;
    while (n > i && isspace((unsigned char)s[n - 1])) n--;
    put(b, s + i, n - i);
}

static void expand(bytebuf *b, const char *pat, const chat_message *m, int index, bytebuf *pending) {
    for (const char *p = pat; *p; p++) {
        if (*p != '%' || !p[1]) { put(b, p, 1); continue; }
        switch (*++p) {
        case 'r': add(b, m->role); break;
        case 'U':
        case 'C':
            for (const char *r = m->role; *r; r++) {
                char c = (*p == 'U' || r == m->role) ? (char)toupper((unsigned char)*r) : *r;
                put(b, &c, 1);
            }
            break;
        case 'c': add(b, m->content); break;
        case 't': add_trimmed(b, m->content); break;
        case 'p':
            if (pending && pending->len) {
                put(b, pending->data, pending->len);
                add(b, "\n\n");
                pending->len = 0;
            }
            break;
        case 's': if (index > 0) add(b, "<s>"); break;
        default: put(b, p, 1); break;
        }
    }
}

static const char *role_pattern(const fmt_spec *f, const char *role) {
    for (int i = 0; i < 6 && f->roles[i].pat; i++)
        if (!f->roles[i].role || !strcmp(f->roles[i].role, role)) return f->roles[i].pat;
    return NULL;
}

char *chat_builtin_render(int fi, const chat_message *msgs, int n, bool add_ass) {
    if (fi < 0 || fi >= chat_builtin_count()) {
        anv_set_error("chat: unknown built-in chat format %d", fi);
        return NULL;
    }
    const fmt_spec *f = &FORMATS[fi];
    for (int i = 0; i < n; i++)
        if (!msgs[i].role || !msgs[i].content) {
            anv_set_error("chat: message %d has no %s", i, msgs[i].role ? "content" : "role");
            return NULL;
        }
    bytebuf b = {0}, pending = {0};
    add(&b, "");
    if (f->begin) add(&b, f->begin);
    if (f->begin_no_system && (n == 0 || strcmp(msgs[0].role, "system"))) add(&b, f->begin_no_system);
    bool inside = !(f->flags & F_START_CLOSED);
    for (int i = 0; i < n; i++) {
        const chat_message *m = &msgs[i];
        bool sys = !strcmp(m->role, "system");
        if (sys && (f->flags & F_SYSTEM_FIRST) && i > 0) continue;
        const char *pat = role_pattern(f, m->role);
        if (!pat) continue; /* llama.cpp drops the roles a format lacks */
        if ((f->flags & F_TURN_OPEN) && !inside) {
            add(&b, f->reopen);
            inside = true;
        }
        if (sys && (f->flags & F_FOLD_SYSTEM)) {
            expand(&pending, pat, m, i, NULL);
            continue;
        }
        expand(&b, pat, m, i, &pending);
        if ((f->flags & F_TURN_OPEN) && strcmp(m->role, "user") && !sys) inside = false;
    }
    bool gen = (f->flags & F_GEN_LAST_USER) ? n > 0 && !strcmp(msgs[n - 1].role, "user")
                                             : add_ass && f->gen && !(f->flags & F_GEN_NEVER);
    if (gen) add(&b, f->gen);
    bool oom = b.oom || pending.oom;
    free(pending.data);
    if (oom) {
        free(b.data);
        anv_set_error("chat: out of memory rendering %d messages", n);
        return NULL;
    }
    return (char *)b.data;
}

/* ---- detection: llama.cpp's llm_chat_detect_template order and markers ---------------- */

static bool has(const char *t, const char *m) { return strstr(t, m) != NULL; }

const char *chat_builtin_detect(const char *t) {
    if (!t || !*t) return NULL;
    if (chat_builtin_find(t) >= 0) return t;
    if (has(t, "<|im_start|>"))
        return has(t, "<|im_sep|>") ? "phi4" : has(t, "<end_of_utterance>") ? "smolvlm" : "chatml";
    if (!strncmp(t, "mistral", 7) || has(t, "[INST]")) {
        if (has(t, "[SYSTEM_PROMPT]")) return "mistral-v7";
        if (has(t, "' [INST] ' + system_message") || has(t, "[AVAILABLE_TOOLS]")) {
            if (has(t, " [INST]")) return "mistral-v1";
            if (has(t, "\"[INST]\"")) return "mistral-v3-tekken";
            return "mistral-v3";
        }
        if (has(t, "content.strip()")) return "llama2-sys-strip";
        if (has(t, "bos_token + '[INST]")) return "llama2-sys-bos";
        return has(t, "<<SYS>>") ? "llama2-sys" : "llama2";
    }
    if (has(t, "<|assistant|>") && has(t, "<|end|>")) return "phi3";
    if (has(t, "[gMASK]<sop>")) return "chatglm4";
    if (has(t, "<|assistant|>") && has(t, "<|user|>")) {
        if (has(t, "<|tool_declare|>")) return "exaone-moe";
        return has(t, "</s>") ? "falcon3" : "glmedge";
    }
    if (has(t, "<|{{ item['role'] }}|>") && has(t, "<|begin_of_image|>")) return "glmedge";
    if (has(t, "<|user|>") && has(t, "<|endoftext|>")) return "zephyr";
    if (has(t, "bos_token + message['role']")) return "monarch";
    if (has(t, "<start_of_turn>")) return "gemma";
    if (has(t, "'\\n\\nAssistant: ' + eos_token")) return "orion";
    if (has(t, "GPT4 Correct ")) return "openchat";
    if (has(t, "USER: ") && has(t, "ASSISTANT: ")) return has(t, "SYSTEM: ") ? "vicuna-orca" : "vicuna";
    if (has(t, "### Instruction:") && has(t, "<|EOT|>")) return "deepseek";
    if (has(t, "<|START_OF_TURN_TOKEN|>") && has(t, "<|USER_TOKEN|>")) return "command-r";
    if (has(t, "<|start_header_id|>") && has(t, "<|end_header_id|>")) return "llama3";
    if (has(t, "[gMASK]sop")) return "chatglm3";
    if (has(t, "<\xe7\x94\xa8\xe6\x88\xb7>")) return "minicpm";
    if (has(t, "'Assistant: ' + message['content'] + eos_token")) return "deepseek2";
    if (has(t, "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>") && has(t, "<\xef\xbd\x9cUser\xef\xbd\x9c>") && has(t, DS_EOS))
        return "deepseek3";
    if (has(t, "[|system|]") && has(t, "[|assistant|]") && has(t, "[|endofturn|]"))
        return has(t, "[|tool|]") ? "exaone4" : "exaone3";
    if (has(t, "rwkv-world") || has(t, "{{- 'User: ' + message['content']|trim + '\\n\\n' -}}")) return "rwkv-world";
    if (has(t, "<|start_of_role|>")) {
        if (has(t, "<tool_call>") || has(t, "<tools>"))
            return has(t, "g4_default_system_message") ? "granite-4.0" : "granite-4.1";
        return "granite";
    }
    if (has(t, "message['role'] + additional_special_tokens[0] + message['content'] + additional_special_tokens[1]"))
        return "gigachat";
    if (has(t, "<|role_start|>")) return "megrez";
    if (has(t, " \xd0\x90\xd1\x81\xd1\x81\xd0\xb8\xd1\x81\xd1\x82\xd0\xb5\xd0\xbd\xd1\x82:")) return "yandex";
    if (has(t, "<role>ASSISTANT</role>") && has(t, "'HUMAN'")) return "bailing";
    if (has(t, "<role>ASSISTANT</role>") && has(t, "\"HUMAN\"") && has(t, "<think>")) return "bailing-think";
    if (has(t, "<role>ASSISTANT</role>") && has(t, "<role>HUMAN</role>") && has(t, "<|role_end|>")) return "bailing2";
    if (has(t, "<|header_start|>") && has(t, "<|header_end|>")) return "llama4";
    if (has(t, "<|extra_0|>") && has(t, "<|extra_4|>")) return "hunyuan-moe";
    if (has(t, "<|start|>") && has(t, "<|channel|>")) return "gpt-oss";
    if (has(t, HY("Assistant")) && has(t, "<\xef\xbd\x9chy_begin\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"))
        return "hunyuan-vl";
    if (has(t, HY("Assistant")) && has(t, HYPH("3"))) return "hunyuan-dense";
    if (has(t, "<|im_assistant|>assistant<|im_middle|>")) return "kimi-k2";
    if (has(t, "<seed:bos>")) return "seed_oss";
    if (has(t, "'Assistant: '  + message['content'] + '<|separator|>")) return "grok-2";
    if (has(t, "[unused9]\xe7\xb3\xbb\xe7\xbb\x9f\xef\xbc\x9a[unused10]")) return "pangu-embedded";
    if (has(t, "<|begin|>") && has(t, "<|end|>") && has(t, "<|content|>")) return "solar-open";
    return NULL;
}
