/* test_settings: the settings table's readers (engine/base/settings.h): a name outside the
 * table reads as unset, the typed readers' ranges and their one error style, the OLLAMA_*
 * fallbacks with their translations, the warnings for OLLAMA_* names that do nothing, and
 * the table's own consistency (unique names, every field filled). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "settings.h"
#include "testutil.h"

static void clear(void) {
    const char *names[] = {"ANVIL_VK_SPLITK", "ANVIL_BACKEND", "OLLAMA_LLM_LIBRARY", "ANVIL_IGPU", "OLLAMA_IGPU_ENABLE",
                           "ANVIL_MAX_BODY", "ANVIL_KV_ROTATION", "OLLAMA_DEBUG", "ANVIL_DEBUG", "OLLAMA_LOAD_TIMEOUT",
                           "OLLAMA_VULKAN", "OLLAMA_HOST", "ANVIL_HOST", "ANVIL_NOT_A_SETTING"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) unsetenv(names[i]);
}

static void test_table(void) {
    size_t n = 0;
    const anv_setting *t = anv_settings(&n);
    CHECK(n > 80);
    for (size_t i = 0; i < n; i++) {
        CHECKF(t[i].name && t[i].range && t[i].def && t[i].group && t[i].help && *t[i].help, "entry %zu is complete", i);
        CHECKF(!strchr(t[i].help, '\n'), "%s: one-line help", t[i].name);
        CHECKF(anv_setting_find(t[i].name) == &t[i], "%s: one entry of that name", t[i].name);
        const bool foreign = (t[i].flags & ANV_SETTING_FOREIGN) != 0;
        CHECKF(foreign == !strcmp(t[i].group, "foreign"), "%s: marked foreign exactly in the foreign group", t[i].name);
        CHECKF(foreign || !strncmp(t[i].name, "ANVIL_", 6) || !strncmp(t[i].name, "OLLAMA_", 7), "%s: ANVIL_/OLLAMA_ or foreign",
               t[i].name);
    }
    CHECK(anv_setting_find("HOME") && (anv_setting_find("HOME")->flags & ANV_SETTING_FOREIGN));
    CHECK(anv_setting_find("ANVIL_MAX_HOST_MEMORY") != NULL);
    CHECK(!strcmp(anv_setting_scope_name(anv_setting_find("ANVIL_MAX_EMBED_INPUTS")->scope), "request"));
}

static void test_raw(void) {
    clear();
    setenv("ANVIL_NOT_A_SETTING", "1", 1);
    CHECK(anv_setting_raw("ANVIL_NOT_A_SETTING") == NULL);   /* not in the table: unset */
    setenv("ANVIL_KV_ROTATION", "", 1);
#ifndef _WIN32   /* there an empty value removes the variable */
    CHECK(anv_setting_raw("ANVIL_KV_ROTATION") && !*anv_setting_raw("ANVIL_KV_ROTATION"));
#endif
    CHECK(anv_setting_get("ANVIL_KV_ROTATION") == NULL && !anv_setting_on("ANVIL_KV_ROTATION") && !anv_setting_off("ANVIL_KV_ROTATION"));
    setenv("ANVIL_KV_ROTATION", "0", 1);
    CHECK(anv_setting_off("ANVIL_KV_ROTATION") && !anv_setting_on("ANVIL_KV_ROTATION"));
    setenv("ANVIL_KV_ROTATION", "yes", 1);
    CHECK(anv_setting_on("ANVIL_KV_ROTATION") && !anv_setting_off("ANVIL_KV_ROTATION"));
    clear();
}

static void test_typed(void) {
    clear();
    int v = 7;
    CHECK(anv_setting_int("ANVIL_VK_SPLITK", 1, 256, &v) == 0 && v == 7);   /* unset: untouched */
    setenv("ANVIL_VK_SPLITK", "", 1);
    CHECK(anv_setting_int("ANVIL_VK_SPLITK", 1, 256, &v) == 0 && v == 7);
    setenv("ANVIL_VK_SPLITK", "256", 1);
    CHECK(anv_setting_int("ANVIL_VK_SPLITK", 1, 256, &v) == 1 && v == 256);
    setenv("ANVIL_VK_SPLITK", "12 ", 1);
    CHECK(anv_setting_int("ANVIL_VK_SPLITK", 1, 256, &v) == 1 && v == 12);
    const char *bad[] = {"257", "0", "-3", "4x", "x", "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("ANVIL_VK_SPLITK", bad[i], 1);
        v = 7;
        CHECKF(anv_setting_int("ANVIL_VK_SPLITK", 1, 256, &v) == -1 && v == 7, "'%s' is refused", bad[i]);
        char want[128];
        snprintf(want, sizeof want, "ANVIL_VK_SPLITK='%s' is not an integer in 1..256", bad[i]);
        CHECKF(!strcmp(anv_last_error(), want), "one error style: %s", anv_last_error());
    }
    uint64_t b = 5;
    setenv("ANVIL_MAX_BODY", "18446744073709551615", 1);
    CHECK(anv_setting_u64("ANVIL_MAX_BODY", 1, UINT64_MAX, &b) == 1 && b == UINT64_MAX);
    setenv("ANVIL_MAX_BODY", "-1", 1);
    CHECK(anv_setting_u64("ANVIL_MAX_BODY", 1, UINT64_MAX, &b) == -1 && strstr(anv_last_error(), "ANVIL_MAX_BODY='-1'"));
    setenv("ANVIL_MAX_BODY", "0", 1);
    CHECK(anv_setting_u64("ANVIL_MAX_BODY", 1, UINT64_MAX, &b) == -1);
    clear();
}

static void test_ollama(void) {
    clear();
    const char *used = NULL;
    setenv("OLLAMA_LLM_LIBRARY", "rocm_v6", 1);
    CHECK(!strcmp(anv_setting_value("ANVIL_BACKEND", &used), "hip") && !strcmp(used, "OLLAMA_LLM_LIBRARY"));
    setenv("ANVIL_BACKEND", "cpu", 1);   /* the ANVIL_ name wins */
    CHECK(!strcmp(anv_setting_value("ANVIL_BACKEND", &used), "cpu") && !strcmp(used, "ANVIL_BACKEND"));
    unsetenv("ANVIL_BACKEND");
    setenv("OLLAMA_LLM_LIBRARY", "cuda_v12", 1);   /* no such backend: not read, warned */
    CHECK(anv_setting_value("ANVIL_BACKEND", NULL) == NULL);
    setenv("OLLAMA_IGPU_ENABLE", "TRUE", 1);
    CHECK(!strcmp(anv_setting_value("ANVIL_IGPU", NULL), "1"));
    setenv("OLLAMA_DEBUG", "2", 1);
    CHECK(!strcmp(anv_setting_value("ANVIL_DEBUG", NULL), "1"));
    setenv("OLLAMA_HOST", "0.0.0.0:1", 1);
    CHECK(!strcmp(anv_setting_value("ANVIL_HOST", NULL), "0.0.0.0:1"));
    CHECK(!strcmp(anv_setting_raw("OLLAMA_HOST"), "0.0.0.0:1"));   /* an alias is a name of the table */
    setenv("OLLAMA_LOAD_TIMEOUT", "5m", 1);
    setenv("OLLAMA_VULKAN", "1", 1);   /* on anyway: no line */
    char buf[4096] = "";
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (f) {
        const int lines = anv_env_warn_ollama(f);
        rewind(f);
        const size_t len = fread(buf, 1, sizeof buf - 1, f);
        buf[len] = 0;
        fclose(f);
        CHECKF(lines == 2, "two warnings: %s", buf);
        CHECK(strstr(buf, "OLLAMA_LLM_LIBRARY=cuda_v12 has no effect: Anvil's backends are vulkan, hip (ROCm) and cpu"));
        CHECK(strstr(buf, "OLLAMA_LOAD_TIMEOUT has no effect: Anvil has no load timeout"));
        CHECK(!strstr(buf, "OLLAMA_VULKAN") && !strstr(buf, "OLLAMA_HOST"));
    }
    clear();
}

static void test_print(void) {
    char buf[65536] = "";
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f) return;
    anv_settings_print_markdown(f, "vulkan");
    rewind(f);
    buf[fread(buf, 1, sizeof buf - 1, f)] = 0;
    fclose(f);
    CHECK(!strncmp(buf, "| Variable | Values | Default | Scope | Meaning |\n|---|", 50));
    CHECK(strstr(buf, "| `ANVIL_VK_DISABLE` |") && !strstr(buf, "ANVIL_HOST"));
    CHECK(strstr(buf, "| Tests: split-K"));
}

int main(void) {
    test_table();
    test_raw();
    test_typed();
    test_ollama();
    test_print();
    return tu_finish();
}
