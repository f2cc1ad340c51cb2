/* model_facts: what the model-management endpoints report about a model, read from its
 * GGUF header without loading it: Ollama's "details" (family, parameter size,
 * quantization level), "model_info" (the metadata) and "tensors"; and the number and
 * time formats Ollama's JSON uses. */
#ifndef ANVIL_MODEL_FACTS_H
#define ANVIL_MODEL_FACTS_H
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gguf.h"

typedef struct {
    gguf_file *file;            /* open until facts_close; NULL when unreadable */
    char family[64];            /* general.architecture, "unknown" */
    char parameter_size[32];    /* "268.10M", "8.0B", "unknown" */
    char quantization[32];      /* "Q4_K_M", "F16", "unknown" */
    uint64_t n_params;
} model_facts;

/* Opens the GGUF at path; -1 + anv_last_error() when it can't (*f then says "unknown"). */
int facts_read(const char *path, model_facts *f);
void facts_unknown(model_facts *f);   /* every field "unknown", no file */
void facts_close(model_facts *f);

/* {"parent_model":"","format":"gguf","family":...,"families":[...],"parameter_size":...,
 * "quantization_level":...} */
cJSON *facts_details_json(const model_facts *f);
/* The GGUF metadata as Ollama's model_info: the tokenizer.ggml.* arrays (token tables)
 * and any array of more than 1024 elements are [] unless verbose; general.parameter_count added; general.name and
 * tokenizer.chat_template left out. {} without a file. */
cJSON *facts_model_info_json(const model_facts *f, bool verbose);
/* Ollama's "capabilities": ["embedding"] for a file with {arch}.pooling_type; else
 * "completion", "vision" when the caller found a projector for it (engine/vision's
 * model_has_vision), then "tools", "insert" (a Go TEMPLATE with .Suffix) and "thinking" when the prompt path
 * has them (a Go TEMPLATE template_go, else the GGUF's chat template and architecture;
 * prompt.h's rules), into the array caps. */
void facts_capabilities(const model_facts *f, const char *template_go, bool vision, cJSON *caps);
/* [{"name","type","shape"}] of every tensor ([] without a file). */
cJSON *facts_tensors_json(const model_facts *f);

/* Ollama's format.HumanNumber: 268098176 -> "268.10M", 8000000000 -> "8B", 1500 -> "2K". */
void facts_human_number(uint64_t n, char *buf, size_t cap);
/* The shortest text that reads back as v ("0.7", "40", "1e-06"). */
void facts_format_number(double v, char *buf, size_t cap);
/* RFC 3339 in local time with its offset ("2025-01-02T03:04:05+01:00", "...Z" in UTC). */
void facts_rfc3339(int64_t unix_s, char *buf, size_t cap);
#endif
