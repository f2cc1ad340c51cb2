/* tokenizer_impl: the private layout of a tokenizer, shared by tokenizer.c (loading, special
 * tokens, dispatch, detokenization), tokenizer_spm.c (SentencePiece-style merges),
 * tokenizer_bpe.c (byte-level BPE with llama.cpp's pre-tokenizer regexes) and tokenizer_wpm.c
 * (WordPiece). Not a public API. */
#ifndef ANVIL_TOKENIZER_IMPL_H
#define ANVIL_TOKENIZER_IMPL_H
#include "tokenizer.h"

/* Token attributes, as llama.cpp's llama_token_attr bits. */
enum {
    TOK_ATTR_UNDEFINED = 0,
    TOK_ATTR_UNKNOWN = 1 << 0,
    TOK_ATTR_UNUSED = 1 << 1,
    TOK_ATTR_NORMAL = 1 << 2,
    TOK_ATTR_CONTROL = 1 << 3,
    TOK_ATTR_USER_DEFINED = 1 << 4,
    TOK_ATTR_BYTE = 1 << 5,
    TOK_ATTR_LSTRIP = 1 << 7,
    TOK_ATTR_RSTRIP = 1 << 8,
};

/* Open-addressing index of int32 values (token ids or merge ranks); -1 marks an empty slot.
 * The keys live elsewhere (the vocabulary or the merge table), the index only holds ids. */
typedef struct {
    int32_t *slots;
    uint32_t *hashes;
    uint32_t mask;
} tok_index;

/* A growable array of token ids. */
typedef struct {
    int32_t *ids;
    size_t n, cap;
    bool oom;
} tok_vec;

/* Pre-tokenizer families: one list of split regexes each (llama.cpp's llama_vocab_pre_type
 * values that share a list are one family). tokenizer_pre.c holds the lists and the names. */
typedef enum {
    TOK_PRE_DEFAULT,
    TOK_PRE_LLAMA3,
    TOK_PRE_JAIS2,
    TOK_PRE_DEEPSEEK_LLM,
    TOK_PRE_DEEPSEEK3,
    TOK_PRE_SPARK2_5,
    TOK_PRE_YOUTU,
    TOK_PRE_DEEPSEEK_CODER,
    TOK_PRE_FALCON,
    TOK_PRE_STARCODER,
    TOK_PRE_GPT2,
    TOK_PRE_QWEN2,
    TOK_PRE_QWEN35,
    TOK_PRE_BLOOM,
    TOK_PRE_VIKING,
    TOK_PRE_TEKKEN,
    TOK_PRE_CHAMELEON,
    TOK_PRE_GPT4O,
    TOK_PRE_GRANITE_EMB_MULTI,
    TOK_PRE_TINY_AYA,
    TOK_PRE_KIMI_K2,
    TOK_PRE_SUPERBPE,
    TOK_PRE_BAILINGMOE,
    TOK_PRE_SEED_CODER,
    TOK_PRE_UFAKZEKA,
    TOK_PRE_AFMOE,
    TOK_PRE_LAGUNA,
    TOK_PRE_EXAONE_MOE,
    TOK_PRE_GEMMA4,
    TOK_PRE_SARVAM,
    TOK_PRE_MMBERT,
    TOK_PRE_MINICPM5,
    TOK_PRE_WHITESPACE,
    TOK_PRE_COUNT
} tok_pre;

#define TOK_MAX_REGEX 6

typedef struct {
    const char *regex[TOK_MAX_REGEX]; /* llama.cpp's expressions, applied in order; NULL ends */
    bool byte_encode;                 /* words go through the GPT-2 byte alphabet (else raw UTF-8) */
} tok_pre_family;

/* What a tokenizer.ggml.pre name sets besides its family (llama.cpp's flags). */
enum {
    TOK_PREF_NO_CLEAN_SPACES = 1 << 0,   /* clean_spaces = false */
    TOK_PREF_IGNORE_MERGES = 1 << 1,     /* a word that is a token is taken whole */
    TOK_PREF_ADD_BOS = 1 << 2,           /* add_bos default true (the GGUF key may override) */
    TOK_PREF_ESCAPE_WHITESPACE = 1 << 3, /* ' ' -> U+2581 before splitting, back when decoding */
    TOK_PREF_NO_BOS_ID = 1 << 4,         /* no default BOS id (the GGUF key may set one) */
    TOK_PREF_ADD_SEP = 1 << 5,           /* add_sep (llama.cpp's API flag; tokenize ignores it) */
    TOK_PREF_FORCE_BOS = 1 << 6,         /* add_bos true even if the GGUF says false (Gemma 4) */
};

typedef struct {
    const char *name;
    tok_pre pre;
    unsigned flags; /* TOK_PREF_* */
} tok_pre_name;

/* One compiled split step (tokenizer_split.c). */
typedef struct {
    int kind;
    void *code; /* pcre2_code_32 *, regex steps only */
} tok_split_step;

struct tokenizer {
    tok_kind kind;
    int32_t n_vocab;

    /* Token texts, copied out of the GGUF mapping into one arena. */
    char *arena;
    uint64_t *text_off;
    uint32_t *text_len;
    float *score;
    uint16_t *attr;
    tok_index vocab; /* text -> id (the last of duplicate texts wins, as in llama.cpp) */

    int32_t bos, eos, eot, eom, unk, sep, pad, mask;
    int32_t fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep;
    bool add_bos, add_eos, add_space_prefix, ignore_merges, clean_spaces;
    uint8_t *is_eog; /* n_vocab flags */

    /* Control, user-defined and unknown tokens, longest text first (partition order). */
    int32_t *special;
    int32_t n_special;

    /* BPE only. */
    tok_pre pre;
    char *merge_arena;
    uint64_t *merge_off;                 /* first part at merge_off, second right after it */
    uint32_t *merge_len1, *merge_len2;
    int32_t n_merges;
    tok_index merges;                    /* (first, second) -> rank (first of duplicates wins) */
    tok_split_step split[TOK_MAX_REGEX]; /* the family's regexes, compiled */
    int n_split;
    bool byte_encode, escape_whitespace, add_sep, force_add_bos;
    char byte_utf8[256][2];              /* byte -> its GPT-2 unicode char (UTF-8, 1 or 2 bytes) */
    uint8_t byte_utf8_len[256];
    int16_t cpt_byte[324];               /* GPT-2 unicode char (code point < 324) -> byte, -1 */

    /* WordPiece only (tokenizer.ggml.normalizer.*). */
    bool wpm_lowercase, wpm_strip_accents;
    int32_t max_token_len;               /* longest token text, bytes */
};

static inline const char *tok_text(const struct tokenizer *t, int32_t id) { return t->arena + t->text_off[id]; }

/* tokenizer.c */
uint32_t tok_hash(const char *s, size_t n);
int32_t tok_lookup(const struct tokenizer *t, const char *s, size_t n);
bool tok_vec_push(tok_vec *v, int32_t id);
/* llama.cpp's lenient UTF-8 decoder: returns the code point and sets *len (>= 1); an
 * invalid sequence gives U+FFFD with *len = 1. Code points may be overlong or surrogates. */
uint32_t tok_utf8_decode(const unsigned char *s, size_t n, size_t *len);
/* Encodes a code point (<= 0x10FFFF) to UTF-8; returns its length. */
int tok_utf8_encode(uint32_t cpt, char *out);

/* tokenizer_spm.c: encodes one text fragment whose spaces are already escaped as U+2581. */
bool tok_spm_encode(const struct tokenizer *t, const char *text, size_t len, tok_vec *out);

/* tokenizer_bpe.c */
/* Reads the merges, maps the pre-tokenizer name and compiles its regexes. */
bool tok_bpe_init(struct tokenizer *t, const struct gguf_file *f, const char *pre_name);
void tok_bpe_free(struct tokenizer *t);
/* Encodes one raw text fragment (no special tokens inside). */
bool tok_bpe_encode(const struct tokenizer *t, const char *text, size_t len, tok_vec *out);
/* The bytes a BPE token text stands for (llama.cpp's llama_decode_text); returns the full
 * length, writes up to cap bytes. */
int tok_bpe_decode_text(const struct tokenizer *t, const char *text, size_t len, char *buf, int cap);

/* tokenizer_pre.c: the name table (NULL: unknown name) and the family regex lists. */
const tok_pre_name *tok_pre_find(const char *name);
const tok_pre_name *tok_pre_names(size_t *n);
const tok_pre_family *tok_pre_family_of(tok_pre pre);

/* tokenizer_split.c: llama.cpp's unicode_regex_split over code points. Compiles a family's
 * regexes into t->split; splits cpts[0..n) into words (lengths in code points, appended to
 * *out, none empty). */
typedef struct { size_t *len; size_t n, cap; } tok_words;
bool tok_split_compile(struct tokenizer *t, const tok_pre_family *fam);
void tok_split_free(struct tokenizer *t);
bool tok_split(const struct tokenizer *t, const uint32_t *cpts, size_t n, tok_words *out);

/* tokenizer_wpm.c: reads the normalizer options; encodes one raw text fragment as llama.cpp's
 * WPM tokenizer (normalize, split on whitespace and punctuation, greedy longest match). */
bool tok_wpm_init(struct tokenizer *t, const struct gguf_file *f);
bool tok_wpm_encode(const struct tokenizer *t, const char *text, size_t len, tok_vec *out);

/* tokenizer_unicode.c (generated): the class of a code point (TOK_UCD_* bits), its simple
 * lowercase and the first code point of its canonical decomposition. */
enum { TOK_UCD_PUNCT = 1, TOK_UCD_SYMBOL = 2, TOK_UCD_MARK = 4, TOK_UCD_CONTROL = 8 };
unsigned tok_ucd_class(uint32_t cpt);
uint32_t tok_ucd_lower(uint32_t cpt);
uint32_t tok_ucd_nfd_first(uint32_t cpt);
/* tokenizer_category.c (generated): llama.cpp's general-category class of a code point. */
enum { TOK_CAT_UNDEFINED, TOK_CAT_NUMBER, TOK_CAT_LETTER, TOK_CAT_PUNCT, TOK_CAT_MARK, TOK_CAT_SYMBOL, TOK_CAT_CONTROL, TOK_CAT_SEPARATOR };
unsigned tok_ucd_category(uint32_t cpt);

/* The merge loop both encoders share: symbols in a linked list over the text, and a
 * heap of adjacent pairs, highest priority first, ties to the leftmost pair (SPM: the
 * merged piece's score; BPE: minus the merge rank). */
typedef struct { int prev, next; size_t off, n; } tok_symbol;
typedef struct { int left, right; float priority; size_t size; } tok_bigram;
typedef struct { tok_bigram *v; size_t n, cap; } tok_bigram_heap;
bool tok_heap_push(tok_bigram_heap *h, tok_bigram b);
tok_bigram tok_heap_pop(tok_bigram_heap *h);

#endif
