/* prompt: the text a request feeds the model (prompt.h), as Ollama builds it
 * (server/routes.go + template/template.go Execute):
 *   messages  = [system] + the Modelfile's MESSAGEs + the conversation, where the system
 *               prompt is only inserted when the conversation does not start with one;
 *   collate   = consecutive messages of one role (except "tool") merged with "\n\n", and
 *               .System = every system message joined with "\n\n";
 *   Go template using .Messages: rendered once over the collated messages, with .Tools
 *               and each message's .ToolCalls / .ToolName / .Thinking;
 *   other Go templates: rendered turn by turn ({System, Prompt, Response} per user turn,
 *               a system message after a turn starts a new one) and the last turn with
 *               the template cut after its first {{ .Response }};
 *   no Go template: the GGUF's chat format (chat.h), ending with the assistant prefix;
 *   raw: the last message's content untouched. */
#include "prompt.h"

#include "error.h"
#include "gotemplate.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    chat_message *m;
    int n, cap;
    char **owned;   /* strings this list allocated (merged contents, layer messages) */
    int n_owned, cap_owned;
} msg_list;

static void list_free(msg_list *l) {
    for (int i = 0; i < l->n_owned; i++) free(l->owned[i]);
    free(l->owned);
    free(l->m);
    memset(l, 0, sizeof(*l));
}

static char *own(msg_list *l, char *s) {
    if (!s) return NULL;
    if (l->n_owned == l->cap_owned) {
        int nc = l->cap_owned ? l->cap_owned * 2 : 8;
        char **no = realloc(l->owned, sizeof(char *) * (size_t)nc);
        if (!no) { free(s); return NULL; }
        l->owned = no;
        l->cap_owned = nc;
    }
    l->owned[l->n_owned++] = s;
    return s;
}

static int list_add_msg(msg_list *l, const chat_message *msg) {
    if (l->n == l->cap) {
        int nc = l->cap ? l->cap * 2 : 8;
        chat_message *nm = realloc(l->m, sizeof(chat_message) * (size_t)nc);
        if (!nm) { anv_set_error("prompt: out of memory"); return -1; }
        l->m = nm;
        l->cap = nc;
    }
    l->m[l->n++] = *msg;
    return 0;
}

static int list_add(msg_list *l, const char *role, const char *content) {
    return list_add_msg(l, &(chat_message){.role = role, .content = content});
}

static char *dup_str(const char *s) {
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}

static char *join2(const char *a, const char *sep, const char *b) {
    size_t na = strlen(a), ns = strlen(sep), nb = strlen(b);
    char *d = malloc(na + ns + nb + 1);
    if (!d) return NULL;
    memcpy(d, a, na);
    memcpy(d + na, sep, ns);
    memcpy(d + na + ns, b, nb + 1);
    return d;
}

/* The MESSAGE layer: a JSON array of {"role": ..., "content": ...}. */
static int add_layer_messages(msg_list *l, const char *json) {
    cJSON *arr = cJSON_Parse(json);
    if (!arr || !cJSON_IsArray(arr)) {
        cJSON_Delete(arr);
        anv_set_error("prompt: the model's messages layer is not a JSON array");
        return -1;
    }
    int i = 0, rc = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(it, "role");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(it, "content");
        if (!cJSON_IsString(role) || !cJSON_IsString(content)) {
            anv_set_error("prompt: messages layer entry %d lacks a string role or content", i);
            rc = -1;
            break;
        }
        char *r = own(l, dup_str(role->valuestring)), *c = r ? own(l, dup_str(content->valuestring)) : NULL;
        if (!c) {
            anv_set_error("prompt: out of memory");
            rc = -1;
            break;
        }
        if (list_add(l, r, c) < 0) { rc = -1; break; }
        i++;
    }
    cJSON_Delete(arr);
    return rc;
}

/* Ollama's collate(): merges runs of one role (not "tool") with "\n\n" and joins the
 * system messages' contents into *system (malloc'd). */
static int collate(const msg_list *in, msg_list *out, char **system) {
    *system = dup_str("");
    if (!*system) goto oom;
    for (int i = 0; i < in->n; i++) {
        const chat_message *m = &in->m[i];
        if (strcmp(m->role, "system") == 0) {
            char *s = **system ? join2(*system, "\n\n", m->content) : dup_str(m->content);
            if (!s) goto oom;
            free(*system);
            *system = s;
        }
        chat_message *last = out->n ? &out->m[out->n - 1] : NULL;
        if (last && strcmp(last->role, m->role) == 0 && strcmp(m->role, "tool") != 0) {
            char *merged = own(out, join2(last->content, "\n\n", m->content));
            if (!merged) goto oom;
            last->content = merged;
        } else if (list_add_msg(out, m) < 0) {   /* thinking, tool calls and tool name go along */
            return -1;
        }
    }
    return 0;
oom:
    anv_set_error("prompt: out of memory");
    return -1;
}

static int append(char **acc, size_t *len, const char *s) {
    size_t n = strlen(s);
    char *na = realloc(*acc, *len + n + 1);
    if (!na) {
        anv_set_error("prompt: out of memory");
        return -1;
    }
    memcpy(na + *len, s, n + 1);
    *acc = na;
    *len += n;
    return 0;
}

/* Ollama's per-turn rendering of a template that does not use .Messages. */
static char *render_turns(const gotmpl *t, const msg_list *msgs, const prompt_spec *p) {
    char *acc = dup_str("");
    size_t len = 0;
    if (!acc) {
        anv_set_error("prompt: out of memory");
        return NULL;
    }
    gotmpl_vars v = {.system = "", .prompt = "", .response = "", .think = CHAT_THINK_IS_ON(p->think),
                     .is_think_set = p->think != CHAT_THINK_DEFAULT};
    for (int i = 0; i < msgs->n; i++) {
        const chat_message *m = &msgs->m[i];
        bool is_system = strcmp(m->role, "system") == 0, is_user = strcmp(m->role, "user") == 0;
        bool flush = (is_system && (*v.prompt || *v.response)) || (is_user && *v.response);
        if (flush) {
            char *turn = gotmpl_render(t, &v);
            int rc = turn ? append(&acc, &len, turn) : -1;
            free(turn);
            if (rc < 0) { free(acc); return NULL; }
            v.system = v.prompt = v.response = "";
        }
        if (is_system) v.system = m->content;
        else if (is_user) v.prompt = m->content;
        else if (strcmp(m->role, "assistant") == 0) v.response = m->content;
    }
    char *last = gotmpl_render_last_turn(t, &v);
    int rc = last ? append(&acc, &len, last) : -1;
    free(last);
    if (rc < 0) { free(acc); return NULL; }
    return acc;
}

static char *render_go(const char *text, const msg_list *all, const prompt_spec *p) {
    gotmpl *t = gotmpl_parse(text);
    if (!t) return NULL;
    msg_list col = {0};
    char *system = NULL, *out = NULL;
    if (collate(all, &col, &system) == 0) {
        if (gotmpl_uses_messages(t)) {
            static const chat_message none[1] = {{.role = "", .content = ""}};
            gotmpl_vars v = {.system = system, .prompt = "", .response = "",
                             .messages = col.n ? col.m : none, .n_messages = col.n,
                             .think = CHAT_THINK_IS_ON(p->think), .is_think_set = p->think != CHAT_THINK_DEFAULT,
                             .tools_json = p->tools_json && strcmp(p->tools_json, "[]") ? p->tools_json : NULL};
            out = gotmpl_render(t, &v);
        } else {
            out = render_turns(t, &col, p);
        }
    }
    free(system);
    list_free(&col);
    gotmpl_free(t);
    return out;
}

char *prompt_build(const model *m, const prompt_spec *p) {
    if (!p || p->n_msgs < 0 || (p->n_msgs > 0 && !p->msgs)) {
        anv_set_error("prompt: no conversation given");
        return NULL;
    }
    for (int i = 0; i < p->n_msgs; i++) {
        if (!p->msgs[i].role || !p->msgs[i].content) {
            anv_set_error("prompt: message %d has no %s", i, p->msgs[i].role ? "content" : "role");
            return NULL;
        }
    }
    if (p->raw) {
        char *s = dup_str(p->n_msgs ? p->msgs[p->n_msgs - 1].content : "");
        if (!s) anv_set_error("prompt: out of memory");
        return s;
    }
    msg_list all = {0};
    char *out = NULL;
    bool starts_with_system = p->n_msgs > 0 && strcmp(p->msgs[0].role, "system") == 0;
    if (p->system && *p->system && !starts_with_system && list_add(&all, "system", p->system) < 0) goto done;
    if (p->messages_json && add_layer_messages(&all, p->messages_json) < 0) goto done;
    for (int i = 0; i < p->n_msgs; i++) {
        if (list_add_msg(&all, &p->msgs[i]) < 0) goto done;
    }
    if (p->template_go && *p->template_go) {
        out = render_go(p->template_go, &all, p);   /* tools: .Tools (only where it renders .Messages, as Ollama) */
        goto done;
    }
    chat_format f;
    if (p->chat_format_override >= 0) {
        f = (chat_format)p->chat_format_override;
        if (strcmp(chat_format_name(f), "unknown") == 0) {
            anv_set_error("prompt: chat format %d does not exist", p->chat_format_override);
            goto done;
        }
    } else {
        if (!m) {
            anv_set_error("prompt: no template and no model to take the chat format from");
            goto done;
        }
        if (prompt_model_is_base(m)) {   /* a base model: Ollama's default TEMPLATE */
            out = render_go(PROMPT_BASE_TEMPLATE, &all, p);
            goto done;
        }
        f = chat_detect(m->chat_template, m->hp.arch_name);
    }
    out = chat_apply_ex(f, all.m, all.n, true, &(chat_extras){.tools_json = p->tools_json, .think = p->think,
                                                            .template_text = m ? m->chat_template : NULL});
done:
    list_free(&all);
    return out;
}

void prompt_reply_style(const model *m, const prompt_spec *p, reply_parse_opts *o) {
    o->harmony = false;
    o->tool_tag[0] = o->think_open[0] = o->think_close[0] = 0;
    if (!p || p->raw) return;
    if (p->template_go && *p->template_go) {
        o->harmony = strstr(p->template_go, "<|start|>") && strstr(p->template_go, "<|channel|>");
        gotmpl *t = o->harmony ? NULL : gotmpl_parse(p->template_go);
        if (t) gotmpl_tool_tag(t, o->tool_tag, sizeof o->tool_tag);   /* Ollama's fallback parser's tag */
        if (t) gotmpl_think_tags(t, o->think_open, o->think_close, sizeof o->think_open);
        gotmpl_free(t);
        return;
    }
    chat_format f = p->chat_format_override >= 0 ? (chat_format)p->chat_format_override : prompt_detect_format(m);
    o->harmony = chat_format_is_harmony(f);
    if (f == CHAT_MINISTRAL3) {   /* Ministral 3 Reasoning thinks in [THINK]..[/THINK] */
        strcpy(o->think_open, "[THINK]");
        strcpy(o->think_close, "[/THINK]");
    }
    o->gemma4 = f == CHAT_GEMMA4;   /* <|channel>..<channel|>, <|tool_call>..<tool_call|> */
    o->qwen35 = f == CHAT_QWEN35;
    /* Qwen 3.5's prompt ends inside <think> unless thinking is off */
    o->start_in_thinking = f == CHAT_QWEN35 && p->think != CHAT_THINK_OFF;
}

const char *const *prompt_shown_specials(const model *m) {
    static const char *const ministral[] = {"[THINK]", "[/THINK]", "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", NULL};
    /* llama.cpp's converter makes these USER_DEFINED (printed anyway); other files may mark
     * them control tokens (Ollama's gemma4 parser preserves the same set) */
    static const char *const gemma4[] = {"<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>",
                                         "<|tool_response>", "<|\"|>", NULL};
    static const char *const qwen35[] = {"<think>", "</think>", "<tool_call>", "</tool_call>", NULL};
    if (!m) return NULL;
    chat_format f = prompt_detect_format(m);
    return f == CHAT_MINISTRAL3 ? ministral : f == CHAT_GEMMA4 ? gemma4 : f == CHAT_QWEN35 ? qwen35 : NULL;
}

prompt_caps prompt_capabilities(const model *m, const char *template_go, int chat_format_override) {
    prompt_caps c = {false, false, false};
    if (template_go && *template_go) {   /* Ollama: the names the template uses */
        c.thinking = strstr(template_go, ".Think") != NULL;
        c.tools = strstr(template_go, ".Tools") != NULL;
        c.insert = strstr(template_go, ".Suffix") != NULL;   /* fill-in-the-middle */
        return c;
    }
    const char *tmpl = m ? m->chat_template : NULL;
    chat_format f = chat_format_override >= 0 ? (chat_format)chat_format_override
                                              : prompt_detect_format(m);
    c.tools = chat_format_has_tools(f, tmpl);
    c.thinking = chat_format_has_thinking(f, tmpl, m ? m->hp.arch_name : NULL);
    return c;
}
