/* api_error: the error envelopes of `anvil serve`, each built in one place: Ollama's
 * {"error":"..."}, OpenAI's {"error":{"message","type","param","code"}} and Anthropic's
 * {"type":"error","error":{"type","message"}}. Whole replies, NDJSON lines and SSE events
 * carry the same objects; the HTTP layer's own answers (401, 404, 413, ...) use them too:
 * Anthropic's on /v1/messages paths, OpenAI's on other /v1/ paths. */
#ifndef ANVIL_API_ERROR_H
#define ANVIL_API_ERROR_H
#include <stdbool.h>

#include <cjson/cJSON.h>

/* {"error": msg} */
cJSON *api_error_ollama(const char *msg);
/* {"error": {"message": msg, "type": (from the status), "param": param or null, "code": null}} */
cJSON *api_error_openai(int status, const char *param, const char *msg);
/* {"type": "error", "error": {"type": (from the status: invalid_request_error,
 * authentication_error, permission_error, not_found_error, request_too_large,
 * rate_limit_error, overloaded_error, api_error), "message": msg}} */
cJSON *api_error_anthropic(int status, const char *msg);
/* The one for the API family: OpenAI's when openai. */
cJSON *api_error_object(bool openai, int status, const char *param, const char *msg);
/* The API family of a path: Anthropic's for /v1/messages..., OpenAI's for other /v1/
 * paths, else Ollama's. */
typedef enum { API_OLLAMA, API_OPENAI, API_ANTHROPIC } api_family;
api_family api_family_of_path(const char *path);
cJSON *api_error_for(api_family f, int status, const char *param, const char *msg);
#endif
