/* cmd_remote: the store commands as clients of a server (client_store_remote: ANVIL_HOST or
 * OLLAMA_HOST is set), as Ollama's CLI always is: `list` (GET /api/tags), `show` (POST
 * /api/show), `rm` (DELETE /api/delete), `cp` (POST /api/copy), `pull` (POST /api/pull,
 * cmd_pull.c draws the progress) and `create` (the Modelfile parsed here, a FROM file uploaded
 * as a blob unless the server has it, then POST /api/create). Output as the local commands. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "client.h"
#include "digest.h"
#include "error.h"
#include "model_create.h"

/* One JSON request; the reply parsed (NULL for an empty body) or exits with the server's error. */
static cJSON *call(const char *method, const char *path, cJSON *body) {
    char *text = body ? cJSON_PrintUnformatted(body) : NULL;
    cJSON_Delete(body);
    char *reply = NULL;
    int status = client_request(method, path, text, &reply);
    free(text);
    if (status < 0) anv_die("%s", anv_last_error());
    if (status / 100 != 2) {
        char *msg = client_error_message(status, reply);
        free(reply);
        anv_die("%s", msg ? msg : "the server refused the request");
    }
    cJSON *j = reply && *reply ? cJSON_Parse(reply) : NULL;
    free(reply);
    return j;
}

/* RFC 3339 ("2026-12-05T23:10:37.123+01:00") to Unix seconds; 0 if unreadable. */
static int64_t parse_rfc3339(const char *s) {
    struct tm tm = {0};
    int off_h = 0, off_m = 0;
    char sign = 'Z';
    if (!s || sscanf(s, "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6)
        return 0;
    const char *t_at = strchr(s, 'T');
    for (const char *p = t_at ? t_at : s; *p; p++)
        if (*p == '+' || *p == '-') { sign = *p; sscanf(p + 1, "%d:%d", &off_h, &off_m); break; }
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
#ifdef _WIN32
    int64_t t = (int64_t)_mkgmtime(&tm);
#else
    int64_t t = (int64_t)timegm(&tm);
#endif
    const int64_t off = (int64_t)off_h * 3600 + off_m * 60;
    return sign == '+' ? t - off : sign == '-' ? t + off : t;
}

int remote_list(void) {
    cJSON *j = call("GET", "/api/tags", NULL);
    const cJSON *models = cJSON_GetObjectItemCaseSensitive(j, "models"), *m;
    int n = cJSON_GetArraySize(models), w_name = 4, w_size = 4, i = 0;
    char (*size)[32] = calloc((size_t)n + 1, sizeof *size);
    char (*mod)[48] = calloc((size_t)n + 1, sizeof *mod);
    if (!size || !mod) anv_die("out of memory");
    cJSON_ArrayForEach(m, models) {
        const cJSON *sz = cJSON_GetObjectItemCaseSensitive(m, "size");
        cli_human_bytes(cJSON_IsNumber(sz) ? (uint64_t)sz->valuedouble : 0, size[i], sizeof size[i]);
        cli_human_ago(parse_rfc3339(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "modified_at"))), mod[i],
                      sizeof mod[i]);
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "name"));
        if (name && (int)strlen(name) > w_name) w_name = (int)strlen(name);
        if ((int)strlen(size[i]) > w_size) w_size = (int)strlen(size[i]);
        i++;
    }
    printf("%-*s   %-12s   %-*s   %s\n", w_name, "NAME", "ID", w_size, "SIZE", "MODIFIED");
    i = 0;
    cJSON_ArrayForEach(m, models) {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "name"));
        const char *digest = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "digest"));
        if (digest && !strncmp(digest, "sha256:", 7)) digest += 7;
        printf("%-*s   %-12.12s   %-*s   %s\n", w_name, name ? name : "?", digest ? digest : "", w_size, size[i], mod[i]);
        i++;
    }
    free(size);
    free(mod);
    cJSON_Delete(j);
    return 0;
}

int remote_rm(int n, char **names) {
    for (int i = 0; i < n; i++) {
        cJSON *b = cJSON_CreateObject();
        cJSON_AddStringToObject(b, "model", names[i]);
        cJSON_Delete(call("DELETE", "/api/delete", b));
        printf("deleted '%s'\n", names[i]);
    }
    return 0;
}

int remote_cp(const char *src, const char *dst) {
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "source", src);
    cJSON_AddStringToObject(b, "destination", dst);
    cJSON_Delete(call("POST", "/api/copy", b));
    printf("copied '%s' to '%s'\n", src, dst);
    return 0;
}

static const char *str_of(const cJSON *o, const char *k) { return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k)); }

int remote_show(const char *name, const char *only, bool verbose) {
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "model", name);
    if (verbose) cJSON_AddTrueToObject(b, "verbose");
    cJSON *j = call("POST", "/api/show", b);
    if (only) {
        const char *field = only + 2;   /* --modelfile -> modelfile */
        cli_print_text(str_of(j, field));
        cJSON_Delete(j);
        return 0;
    }
    const cJSON *info = cJSON_GetObjectItemCaseSensitive(j, "model_info"), *details = cJSON_GetObjectItemCaseSensitive(j, "details");
    const char *arch = str_of(info, "general.architecture");
    printf("  Model\n");
    if (arch) printf("    %-20s %s\n", "architecture", arch);
    if (str_of(details, "parameter_size")) printf("    %-20s %s\n", "parameters", str_of(details, "parameter_size"));
    char key[160];
    static const char *const keys[][2] = {{"context_length", "context length"}, {"embedding_length", "embedding length"}};
    for (int k = 0; k < 2 && arch; k++) {
        snprintf(key, sizeof key, "%s.%s", arch, keys[k][0]);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(info, key);
        if (cJSON_IsNumber(v)) printf("    %-20s %.0f\n", keys[k][1], v->valuedouble);
    }
    if (str_of(details, "quantization_level")) printf("    %-20s %s\n", "quantization", str_of(details, "quantization_level"));
    const cJSON *caps = cJSON_GetObjectItemCaseSensitive(j, "capabilities"), *c;
    if (cJSON_GetArraySize(caps) > 0) {
        printf("\n  Capabilities\n");
        cJSON_ArrayForEach(c, caps) if (cJSON_IsString(c)) printf("    %s\n", c->valuestring);
    }
    cli_print_section("Parameters", str_of(j, "parameters"), 1000);
    cli_print_section("System", str_of(j, "system"), 4);
    cli_print_section("License", str_of(j, "license"), 2);
    if (verbose && info) {
        printf("\n  Metadata\n");
        const cJSON *kv;
        cJSON_ArrayForEach(kv, info) {
            char *t = cJSON_IsString(kv) ? NULL : cJSON_PrintUnformatted(kv);
            printf("    %-40s %s\n", kv->string, cJSON_IsString(kv) ? kv->valuestring : t ? t : "");
            free(t);
        }
    }
    cJSON_Delete(j);
    return 0;
}

static bool print_status(const cJSON *o, void *user) {
    char *last = user;
    const char *s = str_of(o, "status");
    if (s && strcmp(s, last)) {
        puts(s);
        fflush(stdout);
        snprintf(last, 256, "%s", s);
    }
    return true;
}

int remote_create(const char *name, const create_spec *spec) {
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "model", name);
    if (cli_path_is_file(spec->from)) {   /* a GGUF here: the server gets it as a blob */
        char digest[DIGEST_STR_LEN + 1], path[DIGEST_STR_LEN + 32];
        uint64_t size = 0;
        printf("gathering model components\n");
        if (digest_file(spec->from, digest, &size) != 0) anv_die("%s", anv_last_error());
        snprintf(path, sizeof path, "/api/blobs/%s", digest);
        int status = client_request("HEAD", path, NULL, NULL);
        if (status < 0) anv_die("%s", anv_last_error());
        if (status != 200) {
            printf("copying file %s 100%%\n", digest);
            char *reply = NULL;
            status = client_upload_file(path, spec->from, &reply);
            if (status < 0) anv_die("%s", anv_last_error());
            if (status / 100 != 2) {
                char *msg = client_error_message(status, reply);
                anv_die("uploading %s: %s", spec->from, msg ? msg : "refused");
            }
            free(reply);
        }
        const char *slash = strrchr(spec->from, '/');
        cJSON_AddStringToObject(cJSON_AddObjectToObject(b, "files"), slash ? slash + 1 : spec->from, digest);
    } else {
        cJSON_AddStringToObject(b, "from", spec->from);
    }
    if (spec->template_text) cJSON_AddStringToObject(b, "template", spec->template_text);
    if (spec->system) cJSON_AddStringToObject(b, "system", spec->system);
    if (spec->license) cJSON_AddStringToObject(b, "license", spec->license);
    if (spec->quantize) cJSON_AddStringToObject(b, "quantize", spec->quantize);
    cJSON *params = spec->params_json ? cJSON_Parse(spec->params_json) : NULL;
    if (cJSON_IsObject(params)) cJSON_AddItemToObject(b, "parameters", params);
    else cJSON_Delete(params);
    cJSON *msgs = spec->messages_json ? cJSON_Parse(spec->messages_json) : NULL;
    if (cJSON_IsArray(msgs)) cJSON_AddItemToObject(b, "messages", msgs);
    else cJSON_Delete(msgs);
    cJSON_AddTrueToObject(b, "stream");
    char *body = cJSON_PrintUnformatted(b);
    cJSON_Delete(b);
    char last[256] = "";
    int status = client_stream_json("POST", "/api/create", body, print_status, last);
    free(body);
    if (status < 0) anv_die("%s", anv_last_error());
    return 0;
}
