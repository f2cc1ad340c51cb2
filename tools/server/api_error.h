/* api_error: the two error envelopes of `anvil serve`, each built in one place: Ollama's
 * {"error":"..."} and OpenAI's {"error":{"message","type","param","code"}}. Whole replies,
 * NDJSON lines and SSE events carry the same objects; the HTTP layer's own answers (401,
 * 404, 413, ...) use them too, OpenAI's on /v1/ paths. */
#ifndef ANVIL_API_ERROR_H
#define ANVIL_API_ERROR_H
#include <stdbool.h>

#include <cjson/cJSON.h>

/* {"error": msg} */
cJSON *api_error_ollama(const char *msg);
/* {"error": {"message": msg, "type": (from the status), "param": param or null, "code": null}} */
cJSON *api_error_openai(int status, const char *param, const char *msg);
/* The one for the API family: OpenAI's when openai. */
cJSON *api_error_object(bool openai, int status, const char *param, const char *msg);
#endif
