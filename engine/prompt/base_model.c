/* base_model: tells a base (pretrained, not instruction-tuned) model from a chat model when
 * the GGUF carries no chat template. Such a model runs as a completion model, the prompt
 * passed through as Ollama's default TEMPLATE {{ .Prompt }} does, instead of in a chat
 * format guessed from its architecture. A model is "base" when its general.name /
 * general.finetune carry no instruct marker (-it, instruct, chat, ...); a file without
 * a name is not judged (the architecture's format, as before). */
#include "prompt.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "gguf.h"

bool chat_name_is_instruct(const char *name) {
    static const char *const markers[] = {"it", "instruct", "chat", "sft", "dpo", "rlhf", "assistant",
                                          "thinking", "reasoning"};
    if (!name) return false;
    const char *p = name;
    while (*p) {
        while (*p && !isalnum((unsigned char)*p)) p++;
        const char *w = p;
        while (isalnum((unsigned char)*p)) p++;
        size_t n = (size_t)(p - w);
        for (size_t i = 0; n && i < sizeof markers / sizeof markers[0]; i++)
            if (strlen(markers[i]) == n && strncasecmp(w, markers[i], n) == 0) return true;
    }
    return false;
}

bool prompt_gguf_is_base(const gguf_file *f) {
    if (!f) return false;
    gguf_str t = {0};
    if (gguf_get_str(f, "tokenizer.chat_template", &t) && t.len > 0) return false;
    char name[512] = "";
    size_t used = 0;
    static const char *const keys[] = {"general.name", "general.finetune", "general.basename"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        gguf_str s = {0};
        if (!gguf_get_str(f, keys[i], &s) || s.len == 0) continue;
        int k = snprintf(name + used, sizeof name - used, "%s%.*s", used ? " " : "", (int)s.len, s.ptr);
        if (k > 0) used += (size_t)k < sizeof name - used ? (size_t)k : sizeof name - used - 1;
    }
    if (used == 0) return false;   /* nameless (converted by hand, test models): not judged */
    return !chat_name_is_instruct(name);
}

bool prompt_model_is_base(const model *m) {
    return m && !(m->chat_template && *m->chat_template) && prompt_gguf_is_base(m->gguf);
}

chat_format prompt_detect_format(const model *m) {
    if (!m) return CHAT_RAW;
    if (prompt_model_is_base(m)) return CHAT_RAW;
    return chat_detect(m->chat_template, m->hp.arch_name);
}
