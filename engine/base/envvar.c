/* envvar: ANVIL_* settings with their OLLAMA_* fallbacks, and the warnings for the OLLAMA_*
 * variables that do nothing here (see envvar.h). */
#include "envvar.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifdef _WIN32
#define env_list _environ   /* MinGW's stdlib.h */
#else
extern char **environ;
#define env_list environ
#endif

/* Ollama's boolean spellings (strconv.ParseBool): 1 t T TRUE true True / 0 f F FALSE false False. */
static int parse_bool(const char *v) {
    static const char *const yes[] = {"1", "t", "true"}, *const no[] = {"0", "f", "false"};
    for (int i = 0; i < 3; i++) {
        if (!strcasecmp(v, yes[i])) return 1;
        if (!strcasecmp(v, no[i])) return 0;
    }
    return -1;
}

static const char *as_igpu(const char *v) {   /* enable integrated GPUs: 1 / 0 */
    int b = parse_bool(v);
    return b < 0 ? NULL : b ? "1" : "0";
}

static const char *as_backend(const char *v) {   /* cpu, cpu_avx2 ..., rocm*, vulkan* */
    if (!strncasecmp(v, "cpu", 3)) return "cpu";
    if (!strncasecmp(v, "rocm", 4) || !strncasecmp(v, "hip", 3)) return "hip";
    if (!strncasecmp(v, "vulkan", 6)) return "vulkan";
    return NULL;   /* cuda_v12, metal ...: no such backend here */
}

static const char *as_debug(const char *v) {   /* OLLAMA_DEBUG=1 / 2 / true: on */
    int b = parse_bool(v);
    if (b == 1 || (b < 0 && atoi(v) > 0)) return "1";
    return NULL;
}

typedef struct {
    const char *ollama, *anvil;               /* anvil NULL: nothing here to map to */
    const char *(*translate)(const char *v);  /* NULL: the same value; NULL result: unmappable */
    const char *why;                          /* for the warning when it cannot apply */
} ollama_var;

static const ollama_var vars[] = {
    {"OLLAMA_HOST", "ANVIL_HOST", NULL, NULL},
    {"OLLAMA_MODELS", "ANVIL_MODELS", NULL, NULL},
    {"OLLAMA_KEEP_ALIVE", "ANVIL_KEEP_ALIVE", NULL, NULL},
    {"OLLAMA_NUM_PARALLEL", "ANVIL_NUM_PARALLEL", NULL, NULL},
    {"OLLAMA_MAX_LOADED_MODELS", "ANVIL_MAX_LOADED_MODELS", NULL, NULL},
    {"OLLAMA_MAX_QUEUE", "ANVIL_MAX_QUEUE", NULL, NULL},
    {"OLLAMA_ORIGINS", "ANVIL_ORIGINS", NULL, NULL},
    {"OLLAMA_CONTEXT_LENGTH", "ANVIL_CONTEXT_LENGTH", NULL, NULL},
    {"OLLAMA_FLASH_ATTENTION", "ANVIL_FLASH_ATTENTION", NULL, NULL},
    {"OLLAMA_KV_CACHE_TYPE", "ANVIL_KV_CACHE_TYPE", NULL, NULL},
    {"OLLAMA_NOPRUNE", "ANVIL_NOPRUNE", NULL, NULL},
    {"OLLAMA_IGPU_ENABLE", "ANVIL_IGPU", as_igpu, "expected true or false"},
    {"OLLAMA_LLM_LIBRARY", "ANVIL_BACKEND", as_backend,
     "Anvil's backends are vulkan, hip (ROCm) and cpu; set ANVIL_BACKEND to one of them"},
    {"OLLAMA_DEBUG", "ANVIL_DEBUG", as_debug, NULL},
    {"OLLAMA_GPU_OVERHEAD", "ANVIL_GPU_OVERHEAD", NULL, NULL},
    {"OLLAMA_VULKAN", NULL, NULL, "Anvil always uses Vulkan where it finds a GPU; to keep off it set ANVIL_BACKEND=hip or cpu"},
    {"OLLAMA_LOAD_TIMEOUT", NULL, NULL, "Anvil has no load timeout: a load either progresses or fails with its reason"},
    {"OLLAMA_SCHED_SPREAD", NULL, NULL, "Anvil places a model on one GPU (and the CPU); spreading over several GPUs: --tensor-split"},
    {"OLLAMA_NOHISTORY", NULL, NULL, "anvil run keeps no prompt history file"},
    {"OLLAMA_DEBUG_LOG_REQUESTS", NULL, NULL, "ANVIL_DEBUG=1 logs the HTTP layer"},
    {"OLLAMA_GO_TEMPLATE", NULL, NULL, "Anvil renders a Modelfile TEMPLATE whenever a model has one"},
    {"OLLAMA_NO_CLOUD", NULL, NULL, "Anvil has no cloud features"},
    {"OLLAMA_REMOTES", NULL, NULL, "Anvil has no remote models"},
    {"OLLAMA_AUTH", NULL, NULL, "ANVIL_API_KEY requires a bearer key on the API"},
    {"OLLAMA_EDITOR", NULL, NULL, "anvil run has no external editor"},
    {"OLLAMA_MAX_TRANSFER_STREAMS", NULL, NULL, "anvil pull downloads one blob at a time"},
};
#define N_VARS (sizeof vars / sizeof vars[0])

const char *anv_getenv(const char *anvil_name, const char **used_name) {
    if (used_name) *used_name = anvil_name;
    if (!anvil_name) return NULL;
    const char *v = getenv(anvil_name);
    if (v && *v) return v;
    for (size_t i = 0; i < N_VARS; i++) {
        if (!vars[i].anvil || strcmp(vars[i].anvil, anvil_name)) continue;
        const char *o = getenv(vars[i].ollama);
        if (!o || !*o) continue;
        const char *t = vars[i].translate ? vars[i].translate(o) : o;
        if (!t) continue;   /* unmappable: anv_env_warn_ollama says so */
        if (used_name) *used_name = vars[i].ollama;
        return t;
    }
    return v;
}

int anv_env_warn_ollama(FILE *out) {
    int n = 0;
    for (char **e = env_list; e && *e; e++) {
        if (strncmp(*e, "OLLAMA_", 7)) continue;
        const char *eq = strchr(*e, '=');
        if (!eq || !eq[1]) continue;
        const size_t len = (size_t)(eq - *e);
        const char *value = eq + 1;
        const ollama_var *var = NULL;
        for (size_t i = 0; i < N_VARS && !var; i++)
            if (strlen(vars[i].ollama) == len && !strncmp(vars[i].ollama, *e, len)) var = &vars[i];
        if (var && var->anvil) {
            const char *mine = getenv(var->anvil);
            if (var->translate && !var->translate(value) && var->translate != as_debug) {
                fprintf(out, "anvil: warning: %.*s=%s has no effect: %s\n", (int)len, *e, value, var->why);
                n++;
            } else if (mine && *mine && strcmp(mine, value)) {
                fprintf(out, "anvil: note: %.*s=%s is overridden by %s=%s\n", (int)len, *e, value, var->anvil, mine);
                n++;
            }
            continue;
        }
        if (var && !strcmp(var->ollama, "OLLAMA_VULKAN") && parse_bool(value) == 1) continue;   /* on anyway */
        fprintf(out, "anvil: warning: %.*s has no effect: %s\n", (int)len, *e,
                var ? var->why : "not a setting Anvil has (its ANVIL_* settings: anvil serve --help)");
        n++;
    }
    return n;
}
