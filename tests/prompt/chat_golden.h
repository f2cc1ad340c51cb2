/* chat_golden: reads one golden conversation (a JSON array of {role, content, thinking?,
 * tool_name?, tool_calls?}) into chat_messages, for the tests that compare renderings with
 * reference engines (test_chat_jinja_tools, test_gotemplate_tools). Header-only: tests
 * are one file each. */
#ifndef ANVIL_TESTS_CHAT_GOLDEN_H
#define ANVIL_TESTS_CHAT_GOLDEN_H
#include <cjson/cJSON.h>

#include "chat.h"

/* Fills msgs[0..max) from conv; tool_calls are printed JSON owned by owned[i] (the caller
 * frees each). Returns the number of messages. */
static inline int chat_golden_messages(const cJSON *conv, chat_message *msgs, char **owned, int max) {
    int n = 0;
    for (const cJSON *m = conv->child; m && n < max; m = m->next, n++) {
        msgs[n].role = cJSON_GetObjectItem(m, "role")->valuestring;
        msgs[n].content = cJSON_GetObjectItem(m, "content")->valuestring;
        const cJSON *th = cJSON_GetObjectItem(m, "thinking"), *tn = cJSON_GetObjectItem(m, "tool_name");
        const cJSON *calls = cJSON_GetObjectItem(m, "tool_calls");
        if (th) msgs[n].thinking = th->valuestring;
        if (tn) msgs[n].tool_name = tn->valuestring;
        if (calls) msgs[n].tool_calls = owned[n] = cJSON_PrintUnformatted(calls);
    }
    return n;
}
#endif
