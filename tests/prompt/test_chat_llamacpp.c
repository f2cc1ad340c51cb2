/* test_chat_llamacpp: every built-in chat format of llama.cpp, rendered by Anvil's table
 * (engine/prompt/chat_formats.c), must equal llama.cpp's own rendering byte for byte: the
 * goldens in prompt/llamacpp_chat_goldens.json come from libllama's llama_chat_apply_template
 * (tests/prompt/llamacpp_render.py, regeneration command in its header). Also: every name
 * llama.cpp lists exists in Anvil's table. */
#include "chat_formats.h"
#include "error.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    size_t len = 0;
    char *text = tu_read_file("prompt/llamacpp_chat_goldens.json", &len);
    CHECK(text != NULL);
    if (!text) return tu_finish();
    cJSON *root = cJSON_Parse(text);
    free(text);
    CHECK(cJSON_IsObject(root));
    const cJSON *names = cJSON_GetObjectItem(root, "templates");
    const cJSON *convs = cJSON_GetObjectItem(root, "conversations");
    const cJSON *goldens = cJSON_GetObjectItem(root, "goldens");
    CHECK(cJSON_GetArraySize(names) >= 50 && cJSON_GetArraySize(goldens) > 0);
    int missing = 0, compared = 0, differ = 0;
    for (const cJSON *n = names ? names->child : NULL; n; n = n->next)
        if (chat_builtin_find(n->valuestring) < 0) {
            fprintf(stderr, "llama.cpp's format '%s' is not in Anvil's table\n", n->valuestring);
            missing++;
        }
    CHECK(missing == 0);
    for (const cJSON *g = goldens ? goldens->child : NULL; g; g = g->next) {
        const char *name = cJSON_GetObjectItem(g, "template")->valuestring;
        int ci = cJSON_GetObjectItem(g, "conv")->valueint;
        bool add_ass = cJSON_IsTrue(cJSON_GetObjectItem(g, "add_ass"));
        const cJSON *out = cJSON_GetObjectItem(g, "out");
        int fi = chat_builtin_find(name);
        if (fi < 0 || !cJSON_IsString(out)) continue;
        const cJSON *conv = cJSON_GetArrayItem(convs, ci);
        int nm = cJSON_GetArraySize(conv);
        chat_message msgs[16] = {0};
        CHECK(nm <= 16);
        for (int i = 0; i < nm && i < 16; i++) {
            const cJSON *m = cJSON_GetArrayItem(conv, i);
            msgs[i].role = cJSON_GetArrayItem(m, 0)->valuestring;
            msgs[i].content = cJSON_GetArrayItem(m, 1)->valuestring;
        }
        char *got = chat_builtin_render(fi, msgs, nm, add_ass);
        compared++;
        if (!got || strcmp(got, out->valuestring)) {
            differ++;
            fprintf(stderr, "%s conv %d add_ass %d:\n  got:  [%s]\n  want: [%s]\n", name, ci, add_ass,
                    got ? got : anv_last_error(), out->valuestring);
        }
        free(got);
    }
    fprintf(stderr, "%d renderings compared with llama.cpp's, %d differ\n", compared, differ);
    CHECK(compared >= 500 && differ == 0);
    /* detection: each bare name, and excerpts carrying llama.cpp's markers */
    for (int i = 0; i < chat_builtin_count(); i++) CHECK(!strcmp(chat_builtin_detect(chat_builtin_name(i)), chat_builtin_name(i)));
    CHECK(!strcmp(chat_builtin_detect("{{ '<|START_OF_TURN_TOKEN|><|USER_TOKEN|>' + m }}"), "command-r"));
    CHECK(!strcmp(chat_builtin_detect("{{ '<|start|>assistant<|channel|>final<|message|>' }}"), "gpt-oss"));
    CHECK(!strcmp(chat_builtin_detect("{{ '<|header_start|>' + r + '<|header_end|>' }}"), "llama4"));
    CHECK(!strcmp(chat_builtin_detect("{{ '<|start_of_role|>' }}{% if tools %}<tools>{% endif %}"), "granite-4.1"));
    CHECK(!strcmp(chat_builtin_detect("[|system|]..[|assistant|]..[|endofturn|]..[|tool|]"), "exaone4"));
    CHECK(chat_builtin_detect("{{ messages[0]['content'] }}") == NULL && chat_builtin_detect(NULL) == NULL);
    /* bad input: a clear error, no crash */
    CHECK(chat_builtin_render(-1, NULL, 0, true) == NULL);
    CHECK(chat_builtin_render(chat_builtin_find("chatml"), &(chat_message){.role = "user"}, 1, true) == NULL);
    CHECK(strstr(anv_last_error(), "no content") != NULL);
    cJSON_Delete(root);
    return tu_finish();
}
