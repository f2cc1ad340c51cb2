/* grammar: constrained sampling for structured output. A grammar is built from a JSON
 * schema (or "any JSON object" for format "json") and compiled into a matcher that, at
 * each step, masks the logits of every token whose text cannot continue a valid
 * document, so the output always parses and validates; end of generation is only
 * allowed once the document is complete. */
#ifndef ANVIL_GRAMMAR_H
#define ANVIL_GRAMMAR_H
#include <stdbool.h>
#include <stdint.h>
#include "tokenizer.h"

typedef struct grammar grammar;

/* Any JSON object (Ollama's format "json"). */
grammar *grammar_json_object(void);
/* From JSON schema text: type (object/array/string/number/integer/boolean/null and
 * lists of them), properties, required, additionalProperties, items, minItems/maxItems,
 * enum, const, anyOf/oneOf, $ref to #/$defs|definitions, string minLength/maxLength,
 * pattern-free formats. An unsupported keyword is an error naming it, never ignored
 * silently when it would change validity. NULL + anv_last_error(). */
grammar *grammar_json_schema(const char *schema_json);
void grammar_free(grammar *g);

typedef struct grammar_matcher grammar_matcher;
/* Binds a grammar to a vocabulary (precomputes token texts; g must outlive it). */
grammar_matcher *grammar_matcher_new(const grammar *g, const tokenizer *tok);

/* The vocabulary index a matcher needs (token texts and their byte trie: ~70 ms for
 * Gemma's 262144 tokens), built once per tokenizer and shared, read-only, by any number
 * of matchers, also across threads. v must outlive its matchers. */
typedef struct grammar_vocab grammar_vocab;
grammar_vocab *grammar_vocab_new(const tokenizer *tok);
void grammar_vocab_free(grammar_vocab *v);
grammar_matcher *grammar_matcher_new_shared(const grammar *g, const grammar_vocab *v);
void grammar_matcher_free(grammar_matcher *m);
void grammar_matcher_reset(grammar_matcher *m);
/* Sets logits[i] = -INFINITY for every token that cannot come next (EOG tokens unless
 * the document is complete). -1 + anv_last_error() when no token at all may come next (a
 * schema too ambiguous for the matcher, or one the vocabulary cannot spell): the request's
 * fault, not the sampler's. */
int grammar_matcher_mask(grammar_matcher *m, float *logits);
/* Advances over a sampled token; -1 + anv_last_error() if it was not allowed. */
int grammar_matcher_accept(grammar_matcher *m, int32_t token);
/* The document is complete (nothing but end of generation / whitespace may follow). */
bool grammar_matcher_done(const grammar_matcher *m);
#endif
