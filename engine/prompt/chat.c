/* chat: renders a conversation into a model's prompt format (engine/prompt/chat.h). The formats
 * and the detection follow llama.cpp's built-in templates (src/llama-chat.cpp:
 * llm_chat_detect_template / llm_chat_apply_template), not a Jinja interpreter:
 *   Gemma    <start_of_turn>user\n...<end_of_turn>\n, "assistant" -> "model"; system text
 *            (trimmed) + "\n\n" is folded into the next user turn; contents trimmed.
 *   Llama 3  <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>; contents trimmed.
 *   ChatML   <|im_start|>role\n...<|im_end|>\n; contents verbatim.
 *   Mistral  llama.cpp's "mistral-v3": [INST] sys\n\nuser[/INST] reply</s>[INST] ...
 *            (what it picks for Mistral 7B v0.3's official template).
 *   Llama 2  llama.cpp's "llama2-sys-strip" (what it picks for Llama 2 chat's official
 *            template): [INST] <<SYS>>\nsys\n<</SYS>>\n\nuser [/INST]reply</s>[INST] ...
 *   Phi 3    <|role|>\n...<|end|>\n (llama.cpp "phi3").
 *   Phi 4    <|im_start|>role<|im_sep|>...<|im_end|> (llama.cpp "phi4").
 *   DeepSeek 3 / R1 and every other llama.cpp built-in format (command-r, granite, exaone,
 *            glm, gpt-oss, mistral v1/v7/tekken, llama 4, ...): chat_formats.c's table,
 *            byte-identical to llama.cpp's rendering (test_chat_llamacpp).
 *   Raw      the contents concatenated, roles ignored.
 * No format emits the BOS token: the tokenizer adds it (llama.cpp's built-in formats omit
 * it too, and it strips the leading BOS that Jinja templates print). Inside a conversation
 * "</s>" is plain text that the tokenizer must map to the EOS special token.
 * Roles: Gemma, Llama 3 and ChatML print any role made of [A-Za-z0-9_-] (tool, ipython..)
 * as llama.cpp does; Mistral and Llama 2 only know system/user/assistant. Other roles,
 * NULL roles or contents are errors (NULL with anv_set_error). */
#include "chat.h"

#include "chat_formats.h"
#include "error.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- names --------------------------------------------------------------------------- */

static const char *const FORMAT_NAMES[] = {
    [CHAT_RAW] = "raw",       [CHAT_GEMMA] = "gemma",     [CHAT_LLAMA3] = "llama3",
    [CHAT_CHATML] = "chatml", [CHAT_MISTRAL] = "mistral", [CHAT_LLAMA2] = "llama2",
    [CHAT_PHI3] = "phi3",     [CHAT_PHI4] = "phi4",       [CHAT_DEEPSEEK3] = "deepseek3",
    [CHAT_MINISTRAL3] = "ministral3", [CHAT_GEMMA4] = "gemma4", [CHAT_QWEN35] = "qwen35",
};
enum { N_FORMATS = (int)(sizeof(FORMAT_NAMES) / sizeof(FORMAT_NAMES[0])) };

const char *chat_format_name(chat_format f) {
    if ((int)f >= CHAT_BUILTIN) {
        const char *n = chat_builtin_name((int)f - CHAT_BUILTIN);
        return n ? n : "unknown";
    }
    if ((int)f < 0 || (int)f >= N_FORMATS) return "unknown";
    return FORMAT_NAMES[f];
}

static int format_by_name(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < N_FORMATS; i++) {
        if (strcasecmp(name, FORMAT_NAMES[i]) == 0) return i;
    }
    int b = chat_builtin_find(name); /* llama.cpp's names ("llama2" stays Anvil's, above) */
    return b >= 0 ? CHAT_BUILTIN + b : -1;
}

int chat_format_from_name(const char *name) {
    int f = format_by_name(name);
    if (f < 0) {
        anv_set_error("chat: unknown chat format '%s' (known: raw, gemma, llama3, chatml, mistral, llama2, phi3, "
                      "phi4, deepseek3, ministral3, gemma4, qwen35 and llama.cpp's built-in names)",
                      name ? name : "(null)");
    }
    return f;
}

/* ---- detection ----------------------------------------------------------------------- */


/* The template's format by llama.cpp's markers, in llama.cpp's order (chat_formats.c);
 * the formats Anvil renders itself (with tools and thinking) keep their own ids. -1 if none. */
static int detect_from_template(const char *t) {
    int named = format_by_name(t); /* a bare format name also works, as in llama.cpp */
    if (named >= 0) return named;
    /* Mistral 3's templates (Ministral 3, Devstral: calls as [TOOL_CALLS]name[ARGS]; Mistral Small
     * 3.2's adds [CALL_ID]) */
    if (strstr(t, "[SYSTEM_PROMPT]") && strstr(t, "[ARGS]")) return CHAT_MINISTRAL3;
    /* Gemma 4 (llama.cpp's marker: its call prefix); Qwen 3.5 / 3.6: Qwen3-Coder's XML calls
     * in ChatML turns, with <think> */
    if (strstr(t, "'<|tool_call>call:'")) return CHAT_GEMMA4;
    if (strstr(t, "<|im_start|>") && strstr(t, "<function=") && strstr(t, "<parameter=") && strstr(t, "<think>"))
        return CHAT_QWEN35;
    const char *b = chat_builtin_detect(t);
    if (!b) return -1;
    static const struct { const char *name; chat_format f; } own[] = {
        {"chatml", CHAT_CHATML}, {"gemma", CHAT_GEMMA}, {"llama3", CHAT_LLAMA3}, {"phi3", CHAT_PHI3},
        {"phi4", CHAT_PHI4}, {"deepseek3", CHAT_DEEPSEEK3}, {"mistral-v3", CHAT_MISTRAL}, {"llama2-sys-strip", CHAT_LLAMA2},
    };
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (!strcmp(b, own[i].name)) return own[i].f;
    return CHAT_BUILTIN + chat_builtin_find(b);
}

bool chat_template_unrecognised(const char *template_text) {
    return template_text && template_text[0] && detect_from_template(template_text) < 0;
}

/* Without a (recognised) template: the architecture's usual format. "llama" means Llama 2
 * here: Llama 3 GGUFs carry their template, and its markers are detected above. */
static chat_format detect_from_arch(const char *arch) {
    static const struct {
        const char *arch;
        chat_format f;
    } table[] = {
        {"gemma", CHAT_GEMMA},   {"gemma2", CHAT_GEMMA},    {"gemma3", CHAT_GEMMA},   {"gemma3n", CHAT_GEMMA},
        {"qwen2", CHAT_CHATML},  {"qwen2moe", CHAT_CHATML}, {"qwen3", CHAT_CHATML},   {"qwen3moe", CHAT_CHATML},
        {"llama", CHAT_LLAMA2},  {"gemma4", CHAT_GEMMA4},   {"qwen35", CHAT_QWEN35},  {"qwen35moe", CHAT_QWEN35},
    };
    if (!arch) return CHAT_RAW;
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (strcmp(arch, table[i].arch) == 0) return table[i].f;
    }
    return CHAT_RAW;
}

chat_format chat_detect(const char *template_text, const char *arch) {
    if (template_text && template_text[0]) {
        int f = detect_from_template(template_text);
        if (f >= 0) return (chat_format)f;
    }
    return detect_from_arch(arch);
}

/* ---- text building ------------------------------------------------------------------- */

typedef struct {
    char *data;
    size_t len, cap;
    int failed;
} strbuf;

static void sb_put(strbuf *b, const char *s, size_t n) {
    if (b->failed) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->len + n + 1 > cap) cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d) {
            b->failed = 1;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static void sb_add(strbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

/* Appends s without leading/trailing whitespace (C isspace, like llama.cpp's trim). */
static void sb_add_trimmed(strbuf *b, const char *s) {
    size_t start = 0, end = strlen(s);
    while (start < end && isspace((unsigned char)s[start])) start++;
    while (end > start && isspace((unsigned char)s[end - 1])) end--;
    sb_put(b, s + start, end - start);
}

/* ---- formats ------------------------------------------------------------------------- */

static int role_is(const chat_message *m, const char *role) { return strcmp(m->role, role) == 0; }

static void render_gemma(strbuf *b, const chat_message *msgs, int n, bool add_assistant) {
    strbuf system = {0};
    for (int i = 0; i < n; i++) {
        if (role_is(&msgs[i], "system")) { /* Gemma has no system turn: fold it in */
            sb_add_trimmed(&system, msgs[i].content);
            continue;
        }
        int is_model = role_is(&msgs[i], "assistant");
        sb_add(b, "<start_of_turn>");
        sb_add(b, is_model ? "model" : msgs[i].role);
        sb_add(b, "\n");
        if (system.len > 0 && !is_model) {
            sb_put(b, system.data, system.len);
            sb_add(b, "\n\n");
            system.len = 0;
        }
        sb_add_trimmed(b, msgs[i].content);
        sb_add(b, "<end_of_turn>\n");
    }
    if (system.failed) b->failed = 1;
    free(system.data);
    if (add_assistant) sb_add(b, "<start_of_turn>model\n");
}

static void render_llama3(strbuf *b, const chat_message *msgs, int n, bool add_assistant) {
    for (int i = 0; i < n; i++) {
        sb_add(b, "<|start_header_id|>");
        sb_add(b, msgs[i].role);
        sb_add(b, "<|end_header_id|>\n\n");
        sb_add_trimmed(b, msgs[i].content);
        sb_add(b, "<|eot_id|>");
    }
    if (add_assistant) sb_add(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

static void render_chatml(strbuf *b, const chat_message *msgs, int n, bool add_assistant) {
    for (int i = 0; i < n; i++) {
        sb_add(b, "<|im_start|>");
        sb_add(b, msgs[i].role);
        sb_add(b, "\n");
        sb_add(b, msgs[i].content);
        sb_add(b, "<|im_end|>\n");
    }
    if (add_assistant) sb_add(b, "<|im_start|>assistant\n");
}

/* Mistral v3: a prompt always ends with "[/INST]", so add_assistant changes nothing. */
static void render_mistral(strbuf *b, const chat_message *msgs, int n) {
    int inside_turn = 0;
    for (int i = 0; i < n; i++) {
        if (!inside_turn) {
            sb_add(b, "[INST] ");
            inside_turn = 1;
        }
        if (role_is(&msgs[i], "system")) {
            sb_add(b, msgs[i].content);
            sb_add(b, "\n\n");
        } else if (role_is(&msgs[i], "user")) {
            sb_add(b, msgs[i].content);
            sb_add(b, "[/INST]");
        } else {
            sb_add(b, " ");
            sb_add_trimmed(b, msgs[i].content);
            sb_add(b, "</s>");
            inside_turn = 0;
        }
    }
}

/* Llama 2 chat (system in <<SYS>>, contents stripped); add_assistant changes nothing. */
static void render_llama2(strbuf *b, const chat_message *msgs, int n) {
    int inside_turn = 1;
    sb_add(b, "[INST] ");
    for (int i = 0; i < n; i++) {
        if (!inside_turn) {
            sb_add(b, "[INST] ");
            inside_turn = 1;
        }
        if (role_is(&msgs[i], "system")) {
            sb_add(b, "<<SYS>>\n");
            sb_add_trimmed(b, msgs[i].content);
            sb_add(b, "\n<</SYS>>\n\n");
        } else if (role_is(&msgs[i], "user")) {
            sb_add_trimmed(b, msgs[i].content);
            sb_add(b, " [/INST]");
        } else {
            sb_add_trimmed(b, msgs[i].content);
            sb_add(b, "</s>");
            inside_turn = 0;
        }
    }
}

static void render_phi3(strbuf *b, const chat_message *msgs, int n, bool add_assistant) {
    for (int i = 0; i < n; i++) {
        sb_add(b, "<|");
        sb_add(b, msgs[i].role);
        sb_add(b, "|>\n");
        sb_add(b, msgs[i].content);
        sb_add(b, "<|end|>\n");
    }
    if (add_assistant) sb_add(b, "<|assistant|>\n");
}

static void render_phi4(strbuf *b, const chat_message *msgs, int n, bool add_assistant) {
    for (int i = 0; i < n; i++) {
        sb_add(b, "<|im_start|>");
        sb_add(b, msgs[i].role);
        sb_add(b, "<|im_sep|>");
        sb_add(b, msgs[i].content);
        sb_add(b, "<|im_end|>");
    }
    if (add_assistant) sb_add(b, "<|im_start|>assistant<|im_sep|>");
}

static void render_raw(strbuf *b, const chat_message *msgs, int n) {
    for (int i = 0; i < n; i++) sb_add(b, msgs[i].content);
}

/* ---- entry point --------------------------------------------------------------------- */

static int role_is_plain_name(const char *role) {
    if (!role[0]) return 0;
    for (const char *p = role; *p; p++) {
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-') return 0;
    }
    return 1;
}

static int check_messages(chat_format f, const chat_message *msgs, int n_msgs) {
    if (n_msgs < 0 || (n_msgs > 0 && !msgs)) {
        anv_set_error("chat: invalid message list (%d messages, %s)", n_msgs, msgs ? "array" : "NULL array");
        return -1;
    }
    for (int i = 0; i < n_msgs; i++) {
        if (!msgs[i].content) {
            anv_set_error("chat: message %d has no content", i);
            return -1;
        }
        if (f == CHAT_RAW) continue;
        if (!msgs[i].role) {
            anv_set_error("chat: message %d has no role", i);
            return -1;
        }
        int known = strcmp(msgs[i].role, "system") == 0 || strcmp(msgs[i].role, "user") == 0 ||
                    strcmp(msgs[i].role, "assistant") == 0;
        if (f == CHAT_MISTRAL || f == CHAT_LLAMA2 || f == CHAT_DEEPSEEK3) {
            if (!known) {
                anv_set_error("chat: the %s format has no role '%s' (only system, user, assistant)",
                              chat_format_name(f), msgs[i].role);
                return -1;
            }
        } else if (!role_is_plain_name(msgs[i].role)) {
            anv_set_error("chat: message %d has an invalid role '%s' (letters, digits, '_' and '-' only)", i,
                          msgs[i].role);
            return -1;
        }
    }
    return 0;
}

char *chat_apply(chat_format f, const chat_message *msgs, int n_msgs, bool add_assistant) {
    if ((int)f >= CHAT_BUILTIN || f == CHAT_DEEPSEEK3) { /* llama.cpp's table; deepseek3 is its row */
        if (n_msgs < 0 || (n_msgs > 0 && !msgs)) {
            anv_set_error("chat: invalid message list (%d messages)", n_msgs);
            return NULL;
        }
        int b = f == CHAT_DEEPSEEK3 ? chat_builtin_find("deepseek3") : (int)f - CHAT_BUILTIN;
        if (f == CHAT_DEEPSEEK3 && check_messages(f, msgs, n_msgs) != 0) return NULL;
        return chat_builtin_render(b, msgs, n_msgs, add_assistant);
    }
    if ((int)f < 0 || (int)f >= N_FORMATS) {
        anv_set_error("chat: unknown chat format %d", (int)f);
        return NULL;
    }
    if (f == CHAT_MINISTRAL3) {
        if (n_msgs < 0 || (n_msgs > 0 && !msgs)) {
            anv_set_error("chat: invalid message list (%d messages)", n_msgs);
            return NULL;
        }
        return chat_ministral3_render(msgs, n_msgs, NULL);
    }
    if (f == CHAT_GEMMA4 || f == CHAT_QWEN35) {
        if (n_msgs < 0 || (n_msgs > 0 && !msgs)) {
            anv_set_error("chat: invalid message list (%d messages)", n_msgs);
            return NULL;
        }
        return f == CHAT_GEMMA4 ? chat_gemma4_render(msgs, n_msgs, add_assistant, NULL)
                                : chat_qwen35_render(msgs, n_msgs, add_assistant, NULL);
    }
    if (check_messages(f, msgs, n_msgs) != 0) return NULL;
    strbuf b = {0};
    sb_add(&b, ""); /* an empty conversation still yields "" */
    switch (f) {
    case CHAT_GEMMA: render_gemma(&b, msgs, n_msgs, add_assistant); break;
    case CHAT_LLAMA3: render_llama3(&b, msgs, n_msgs, add_assistant); break;
    case CHAT_CHATML: render_chatml(&b, msgs, n_msgs, add_assistant); break;
    case CHAT_MISTRAL: render_mistral(&b, msgs, n_msgs); break;
    case CHAT_LLAMA2: render_llama2(&b, msgs, n_msgs); break;
    case CHAT_PHI3: render_phi3(&b, msgs, n_msgs, add_assistant); break;
    case CHAT_PHI4: render_phi4(&b, msgs, n_msgs, add_assistant); break;
    case CHAT_DEEPSEEK3: case CHAT_BUILTIN: case CHAT_MINISTRAL3: case CHAT_GEMMA4: case CHAT_QWEN35: break; /* above */
    case CHAT_RAW: render_raw(&b, msgs, n_msgs); break;
    }
    if (b.failed) {
        free(b.data);
        anv_set_error("chat: out of memory rendering %d messages", n_msgs);
        return NULL;
    }
    return b.data;
}
