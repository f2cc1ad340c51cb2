/* api_error: Ollama's and OpenAI's error objects (see api_error.h). */
#include "api_error.h"

/* OpenAI's error type for an HTTP status. */
static const char *openai_type(int status) {
    switch (status) {
    case 400: case 413: return "invalid_request_error";
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    default: return "api_error";
    }
}

cJSON *api_error_ollama(const char *msg) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "error", msg);
    return o;
}

cJSON *api_error_openai(int status, const char *param, const char *msg) {
    cJSON *o = cJSON_CreateObject();
    cJSON *e = cJSON_AddObjectToObject(o, "error");
    cJSON_AddStringToObject(e, "message", msg);
    cJSON_AddStringToObject(e, "type", openai_type(status));
    if (param) cJSON_AddStringToObject(e, "param", param);
    else cJSON_AddNullToObject(e, "param");
    cJSON_AddNullToObject(e, "code");
    return o;
}

cJSON *api_error_object(bool openai, int status, const char *param, const char *msg) {
    return openai ? api_error_openai(status, param, msg) : api_error_ollama(msg);
}
