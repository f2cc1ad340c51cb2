/* tokenizer: text <-> token ids for the vocabularies GGUF files carry, matching llama.cpp
 * token for token: SentencePiece-style (tokenizer.ggml.model = "llama": Llama 2, Gemma)
 * and GPT-2-style byte-level BPE ("gpt2": Llama 3, Qwen 2/3) with llama.cpp's
 * pre-tokenizer regexes (PCRE2), and BERT's WordPiece ("bert", tokenizer_wpm.c). Also
 * special-token parsing and streaming detokenization. */
#ifndef ANVIL_TOKENIZER_H
#define ANVIL_TOKENIZER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gguf_file;
typedef struct tokenizer tokenizer;

typedef enum { TOK_KIND_SPM, TOK_KIND_BPE, TOK_KIND_WPM } tok_kind;

/* Builds the tokenizer from tokenizer.ggml.* metadata; NULL + anv_last_error() on a
 * missing/invalid vocabulary or an unsupported model/pre-tokenizer (named in the message). */
tokenizer *tokenizer_load(const struct gguf_file *f);
void tokenizer_free(tokenizer *t);

tok_kind tokenizer_kind(const tokenizer *t);
int32_t tokenizer_n_vocab(const tokenizer *t);
/* The longest probe sequence (slots walked) in the piece and merge indexes: the cost of the
 * worst lookup. Bounded (tens) whatever pieces a file holds; for tests. */
uint32_t tokenizer_index_max_probe(const tokenizer *t);
int32_t tokenizer_bos(const tokenizer *t);   /* -1 if none */
int32_t tokenizer_eos(const tokenizer *t);   /* -1 if none */
bool tokenizer_add_bos(const tokenizer *t);  /* tokenizer.ggml.add_bos_token (or the model default) */
/* End of generation: EOS, EOT, <end_of_turn>, <|im_end|>, <|eot_id|> ... */
bool tokenizer_is_eog(const tokenizer *t, int32_t id);
/* Id of an exact piece (e.g. "<end_of_turn>"), -1 if absent. */
int32_t tokenizer_find(const tokenizer *t, const char *piece);

/* Encodes text like llama.cpp's llama_tokenize(add_special, parse_special):
 * add_special adds BOS (and EOS) as the vocabulary asks; parse_special turns special
 * token texts (control/user-defined tokens) in the input into their ids.
 * Returns a malloc'd array and its length in *n_out, or NULL on error. */
int32_t *tokenizer_encode(const tokenizer *t, const char *text, size_t len, bool add_special, bool parse_special, int *n_out);

/* The bytes a token stands for, as llama.cpp's token_to_piece(special): SPM '▁' -> ' ',
 * <0xNN> -> byte, BPE byte-level chars -> bytes; control tokens give "" unless
 * render_special. Writes up to cap bytes, returns the full length (may exceed cap). */
int tokenizer_token_to_piece(const tokenizer *t, int32_t id, char *buf, int cap, bool render_special);

/* Streaming detokenizer: feed ids, get only complete UTF-8 text back (a multi-byte
 * character split across tokens is held until complete). */
typedef struct { char pending[8]; int n_pending; } tok_stream;
/* Appends the text of id to out (cap bytes); returns bytes written. */
int tok_stream_push(tok_stream *s, const tokenizer *t, int32_t id, char *out, int cap);
/* Flushes any incomplete bytes (as U+FFFD) at the end of generation. */
int tok_stream_flush(tok_stream *s, char *out, int cap);
#endif
