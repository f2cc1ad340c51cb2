/* tokenizer: loads the vocabulary from tokenizer.ggml.* metadata, resolves special tokens
 * (BOS/EOS/EOT/FIM, the end-of-generation set, control/user-defined types) the way llama.cpp's
 * llama_vocab::impl::load does, partitions input text on special tokens
 * (tokenizer_st_partition), dispatches fragments to the SPM or BPE encoder, and turns ids
 * back into bytes (token_to_piece) including a streaming UTF-8-safe detokenizer. */
#include "tokenizer_impl.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "gguf.h"
#include "hash.h"

/* ---- small helpers shared with the encoders ---- */

/* Keyed (SipHash-1-3 under a per-process random key, hash.h): a vocabulary cannot be
 * crafted so that its pieces all share a bucket. */
uint32_t tok_hash(const char *s, size_t n) { return (uint32_t)anv_hash(s, n); }

/* Longest probe sequence (slots walked by the worst lookup) of an index whose entry i has
 * hash hashes[i] (the full hash is stored beside each slot). */
static uint32_t index_max_probe(const tok_index *ix) {
    uint32_t worst = 0;
    if (!ix->slots) return 0;
    for (uint32_t s = 0; s <= ix->mask; s++) {
        if (ix->slots[s] < 0) continue;
        uint32_t probes = ((s - (ix->hashes[s] & ix->mask)) & ix->mask) + 1;
        if (probes > worst) worst = probes;
    }
    return worst;
}

uint32_t tokenizer_index_max_probe(const tokenizer *t) {
    if (!t) return 0;
    uint32_t a = index_max_probe(&t->vocab), b = index_max_probe(&t->merges);
    return a > b ? a : b;
}

bool tok_vec_push(tok_vec *v, int32_t id) {
    if (v->oom) return false;
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 64;
        int32_t *ids = realloc(v->ids, cap * sizeof(*ids));
        if (!ids) {
            v->oom = true;
            return false;
        }
        v->ids = ids;
        v->cap = cap;
    }
    v->ids[v->n++] = id;
    return true;
}

uint32_t tok_utf8_decode(const unsigned char *s, size_t n, size_t *len) {
    unsigned c = s[0];
    *len = 1;
    if (!(c & 0x80)) return c;
    if (!(c & 0x40)) return 0xFFFD;
    if (!(c & 0x20)) {
        if (n < 2 || (s[1] & 0xC0) != 0x80) return 0xFFFD;
        *len = 2;
        return ((c & 0x1Fu) << 6) | (s[1] & 0x3Fu);
    }
    if (!(c & 0x10)) {
        if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0xFFFD;
        *len = 3;
        return ((c & 0x0Fu) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3Fu);
    }
    if (!(c & 0x08)) {
        if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80) return 0xFFFD;
        *len = 4;
        return ((c & 0x07u) << 18) | ((s[1] & 0x3Fu) << 12) | ((s[2] & 0x3Fu) << 6) | (s[3] & 0x3Fu);
    }
    return 0xFFFD;
}

int tok_utf8_encode(uint32_t cpt, char *out) {
    if (cpt < 0x80) {
        out[0] = (char)cpt;
        return 1;
    }
    if (cpt < 0x800) {
        out[0] = (char)(0xC0 | (cpt >> 6));
        out[1] = (char)(0x80 | (cpt & 0x3F));
        return 2;
    }
    if (cpt < 0x10000) {
        out[0] = (char)(0xE0 | (cpt >> 12));
        out[1] = (char)(0x80 | ((cpt >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cpt & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | ((cpt >> 18) & 0x07));
    out[1] = (char)(0x80 | ((cpt >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cpt >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cpt & 0x3F));
    return 4;
}

/* ---- piece -> id index ---- */

static bool vocab_index_build(struct tokenizer *t) {
    uint32_t cap = 16;
    while (cap < (uint32_t)t->n_vocab * 2u) cap *= 2;
    t->vocab.slots = malloc(cap * sizeof(int32_t));
    t->vocab.hashes = malloc(cap * sizeof(uint32_t));
    if (!t->vocab.slots || !t->vocab.hashes) return false;
    memset(t->vocab.slots, 0xFF, cap * sizeof(int32_t));
    t->vocab.mask = cap - 1;
    for (int32_t id = 0; id < t->n_vocab; id++) {
        const char *s = tok_text(t, id);
        uint32_t n = t->text_len[id], h = tok_hash(s, n);
        for (uint32_t i = h & t->vocab.mask;; i = (i + 1) & t->vocab.mask) {
            int32_t o = t->vocab.slots[i];
            if (o < 0) {
                t->vocab.slots[i] = id;
                t->vocab.hashes[i] = h;
                break;
            }
            if (t->vocab.hashes[i] == h && t->text_len[o] == n && memcmp(tok_text(t, o), s, n) == 0) {
                t->vocab.slots[i] = id; /* duplicate text: the later id wins, like llama.cpp */
                break;
            }
        }
    }
    return true;
}

int32_t tok_lookup(const struct tokenizer *t, const char *s, size_t n) {
    uint32_t h = tok_hash(s, n);
    for (uint32_t i = h & t->vocab.mask;; i = (i + 1) & t->vocab.mask) {
        int32_t o = t->vocab.slots[i];
        if (o < 0) return -1;
        if (t->vocab.hashes[i] == h && t->text_len[o] == n && memcmp(tok_text(t, o), s, n) == 0) return o;
    }
}

/* ---- loading ---- */

static bool text_is(const struct tokenizer *t, int32_t id, const char *s) {
    size_t n = strlen(s);
    return t->text_len[id] == n && memcmp(tok_text(t, id), s, n) == 0;
}

static const char *const k_eot_texts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
    "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<\xEF\xBD\x9C" "end\xE2\x96\x81" "of\xE2\x96\x81" "sentence\xEF\xBD\x9C>",
    "<end_of_utterance>", NULL};
static const char *const k_eom_texts[] = {"<|eom_id|>", NULL};
static const char *const k_fim_pre_texts[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
    "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>", "<PRE>", "\xE2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>", NULL};
static const char *const k_fim_suf_texts[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
    "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "hole\xEF\xBD\x9C>", "<SUF>", "\xE2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>", NULL};
static const char *const k_fim_mid_texts[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
    "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>", "<MID>", "\xE2\x96\x81<MID>", "<|code_middle|>", "<|middle|>", NULL};
static const char *const k_fim_pad_texts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", NULL};
static const char *const k_fim_rep_texts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", NULL};
static const char *const k_fim_sep_texts[] = {"<|file_sep|>", NULL};
/* Texts that end generation (llama.cpp's EOG list). */
static const char *const k_eog_texts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
    "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xEF\xBD\x9C" "end\xE2\x96\x81" "of\xE2\x96\x81" "sentence\xEF\xBD\x9C>", "[e~[", NULL};
static const char *const k_always_render_texts[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", NULL};

static bool load_texts(struct tokenizer *t, const gguf_kv *tokens) {
    uint64_t total = 0;
    for (int32_t i = 0; i < t->n_vocab; i++) total += tokens->arr_strs[i].len ? tokens->arr_strs[i].len + 1 : 32;
    t->arena = malloc(total ? total : 1);
    t->text_off = malloc((size_t)t->n_vocab * sizeof(uint64_t));
    t->text_len = malloc((size_t)t->n_vocab * sizeof(uint32_t));
    if (!t->arena || !t->text_off || !t->text_len) return false;
    uint64_t off = 0;
    for (int32_t i = 0; i < t->n_vocab; i++) {
        gguf_str s = tokens->arr_strs[i];
        if (s.len > UINT32_MAX / 2) {
            anv_set_error("tokenizer: token %d is %llu bytes long", i, (unsigned long long)s.len);
            return false;
        }
        t->text_off[i] = off;
        if (s.len == 0) { /* llama.cpp renames empty tokens */
            int n = snprintf(t->arena + off, 32, "[EMPTY_%d]", i);
            t->text_len[i] = (uint32_t)n;
            off += (uint64_t)n + 1;
        } else {
            memcpy(t->arena + off, s.ptr, s.len);
            t->arena[off + s.len] = 0;
            t->text_len[i] = (uint32_t)s.len;
            off += s.len + 1;
        }
    }
    return true;
}

static bool load_scores_and_types(struct tokenizer *t, const gguf_file *f) {
    t->score = calloc((size_t)t->n_vocab, sizeof(float));
    t->attr = malloc((size_t)t->n_vocab * sizeof(uint16_t));
    if (!t->score || !t->attr) return false;
    const gguf_kv *sc = gguf_find(f, "tokenizer.ggml.scores");
    if (sc) {
        if (sc->type != GGUF_ARRAY || (sc->arr_type != GGUF_FLOAT32 && sc->arr_type != GGUF_INT32)) {
            anv_set_error("tokenizer: tokenizer.ggml.scores must be an array of float32 or int32");
            return false;
        }
        if (sc->arr_len < (uint64_t)t->n_vocab) {
            anv_set_error("tokenizer: %llu scores for %d tokens", (unsigned long long)sc->arr_len, t->n_vocab);
            return false;
        }
        for (int32_t i = 0; i < t->n_vocab; i++) {
            const unsigned char *p = (const unsigned char *)sc->arr_data + (size_t)i * 4;
            if (sc->arr_type == GGUF_FLOAT32) {
                memcpy(&t->score[i], p, 4);
            } else {
                int32_t v;
                memcpy(&v, p, 4);
                t->score[i] = (float)v;
            }
        }
    }
    const gguf_kv *ty = gguf_find(f, "tokenizer.ggml.token_type");
    if (ty && (ty->type != GGUF_ARRAY || ty->arr_type != GGUF_INT32)) {
        anv_set_error("tokenizer: tokenizer.ggml.token_type must be an array of int32");
        return false;
    }
    if (ty && ty->arr_len < (uint64_t)t->n_vocab) {
        anv_set_error("tokenizer: %llu token types for %d tokens", (unsigned long long)ty->arr_len, t->n_vocab);
        return false;
    }
    for (int32_t i = 0; i < t->n_vocab; i++) {
        int32_t v = 1;
        if (ty) memcpy(&v, (const unsigned char *)ty->arr_data + (size_t)i * 4, 4);
        switch (v) {
        case 1: t->attr[i] = TOK_ATTR_NORMAL; break;
        case 2: t->attr[i] = TOK_ATTR_UNKNOWN; break;
        case 3: t->attr[i] = TOK_ATTR_CONTROL; break;
        case 4: t->attr[i] = TOK_ATTR_USER_DEFINED; break;
        case 5: t->attr[i] = TOK_ATTR_UNUSED; break;
        case 6: t->attr[i] = TOK_ATTR_BYTE; break;
        default: t->attr[i] = TOK_ATTR_UNDEFINED; break;
        }
    }
    return true;
}

/* Reads an optional token-id key; an out-of-range value keeps the default (llama.cpp warns). */
static bool read_id(const gguf_file *f, const char *key, int32_t n_vocab, int32_t *id) {
    if (*id >= n_vocab) *id = -1;
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return true;
    uint32_t v;
    if (!gguf_get_u32(f, key, &v)) {
        anv_set_error("tokenizer: %s must be an unsigned integer", key);
        return false;
    }
    if (v < (uint32_t)n_vocab) *id = (int32_t)v;
    return true;
}

static bool read_flag(const gguf_file *f, const char *key, bool *flag) {
    if (!gguf_find(f, key)) return true;
    if (!gguf_get_bool(f, key, flag)) {
        anv_set_error("tokenizer: %s must be a bool", key);
        return false;
    }
    return true;
}

static void force_control(struct tokenizer *t, int32_t id) { t->attr[id] |= TOK_ATTR_CONTROL; }

/* Texts are looked up in the piece index, which (like llama.cpp's token_to_id that these
 * scans walk) holds the last id of duplicate texts. */
static void detect_by_text(struct tokenizer *t, int32_t *slot, const char *const *texts) {
    for (; *texts && *slot < 0; texts++) {
        int32_t id = tok_lookup(t, *texts, strlen(*texts));
        if (id >= 0) {
            *slot = id;
            force_control(t, id);
        }
    }
}

typedef struct {
    uint32_t len;
    int32_t id;
} special_key;

/* Partition order: longest text first, then lowest id. */
static int cmp_special(const void *a, const void *b) {
    const special_key *x = a, *y = b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static bool resolve_special(struct tokenizer *t, const gguf_file *f) {
    struct { const char *key; int32_t *id; } keys[] = {
        {"tokenizer.ggml.bos_token_id", &t->bos}, {"tokenizer.ggml.eos_token_id", &t->eos},
        {"tokenizer.ggml.eot_token_id", &t->eot}, {"tokenizer.ggml.eom_token_id", &t->eom},
        {"tokenizer.ggml.unknown_token_id", &t->unk}, {"tokenizer.ggml.seperator_token_id", &t->sep},
        {"tokenizer.ggml.padding_token_id", &t->pad}, {"tokenizer.ggml.mask_token_id", &t->mask},
        {"tokenizer.ggml.fim_pre_token_id", &t->fim_pre}, {"tokenizer.ggml.fim_suf_token_id", &t->fim_suf},
        {"tokenizer.ggml.fim_mid_token_id", &t->fim_mid}, {"tokenizer.ggml.fim_pad_token_id", &t->fim_pad},
        {"tokenizer.ggml.fim_rep_token_id", &t->fim_rep}, {"tokenizer.ggml.fim_sep_token_id", &t->fim_sep},
        {"tokenizer.ggml.prefix_token_id", &t->fim_pre}, {"tokenizer.ggml.suffix_token_id", &t->fim_suf},
        {"tokenizer.ggml.middle_token_id", &t->fim_mid},
    };
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (!read_id(f, keys[i].key, t->n_vocab, keys[i].id)) return false;
    if (!read_flag(f, "tokenizer.ggml.add_bos_token", &t->add_bos)) return false;
    if (!read_flag(f, "tokenizer.ggml.add_eos_token", &t->add_eos)) return false;

    detect_by_text(t, &t->eot, k_eot_texts);
    detect_by_text(t, &t->eom, k_eom_texts);
    detect_by_text(t, &t->fim_pre, k_fim_pre_texts);
    detect_by_text(t, &t->fim_suf, k_fim_suf_texts);
    detect_by_text(t, &t->fim_mid, k_fim_mid_texts);
    detect_by_text(t, &t->fim_pad, k_fim_pad_texts);
    detect_by_text(t, &t->fim_rep, k_fim_rep_texts);
    detect_by_text(t, &t->fim_sep, k_fim_sep_texts);

    for (int32_t id = 0; id < t->n_vocab; id++) /* control tokens named "unused" */
        if ((t->attr[id] & TOK_ATTR_CONTROL) && strstr(tok_text(t, id), "unused")) t->attr[id] |= TOK_ATTR_UNUSED;

    t->is_eog = calloc((size_t)t->n_vocab, 1);
    if (!t->is_eog) return false;
    int32_t fim_eog[] = {t->fim_pad, t->fim_rep, t->fim_sep};
    for (int i = 0; i < 3; i++)
        if (fim_eog[i] >= 0) t->is_eog[fim_eog[i]] = 1;
    for (const char *const *s = k_eog_texts; *s; s++) {
        int32_t id = tok_lookup(t, *s, strlen(*s));
        if (id >= 0) {
            t->is_eog[id] = 1;
            force_control(t, id);
        }
    }
    for (const char *const *s = k_always_render_texts; *s; s++) {
        int32_t id = tok_lookup(t, *s, strlen(*s));
        if (id >= 0) t->attr[id] = TOK_ATTR_USER_DEFINED;
    }
    int32_t named[] = {t->eos, t->eot, t->eom};
    for (int i = 0; i < 3; i++)
        if (named[i] >= 0) t->is_eog[named[i]] = 1;

    /* o200k_harmony / solar-open: "<|end|>" is not EOG next to "<|return|>" + "<|call|>" (or
     * "<|calls|>" + "<|flush|>"); gemma4: "</s>" is not EOG next to "<|tool_response>". */
    bool has_return = false, has_call = false, has_flush = false, has_tool_resp = false;
    int32_t end_id = -1, s_id = -1;
    for (int32_t id = 0; id < t->n_vocab; id++) {
        if (!t->is_eog[id]) continue;
        if (text_is(t, id, "<|return|>")) has_return = true;
        else if (text_is(t, id, "<|call|>") || text_is(t, id, "<|calls|>")) has_call = true;
        else if (text_is(t, id, "<|flush|>")) has_flush = true;
        else if (text_is(t, id, "<|end|>")) end_id = id;
        if (text_is(t, id, "<|tool_response>")) has_tool_resp = true;
        else if (text_is(t, id, "</s>")) s_id = id;
    }
    if (end_id >= 0 && ((has_return && has_call) || (has_call && has_flush))) {
        t->is_eog[end_id] = 0;
        t->attr[end_id] = TOK_ATTR_USER_DEFINED;
    }
    if (has_tool_resp && s_id >= 0) {
        t->is_eog[s_id] = 0;
        t->attr[s_id] = TOK_ATTR_NORMAL;
    }

    const uint16_t special_attrs = TOK_ATTR_CONTROL | TOK_ATTR_USER_DEFINED | TOK_ATTR_UNKNOWN;
    int32_t n = 0;
    for (int32_t id = 0; id < t->n_vocab; id++) n += (t->attr[id] & special_attrs) != 0;
    special_key *sk = malloc(((size_t)n + 1) * sizeof(*sk));
    t->special = malloc(((size_t)n + 1) * sizeof(int32_t));
    if (!sk || !t->special) {
        free(sk);
        return false;
    }
    n = 0;
    for (int32_t id = 0; id < t->n_vocab; id++)
        if (t->attr[id] & special_attrs) sk[n++] = (special_key){t->text_len[id], id};
    qsort(sk, (size_t)n, sizeof(*sk), cmp_special);
    for (int32_t i = 0; i < n; i++) t->special[i] = sk[i].id;
    t->n_special = n;
    free(sk);
    return true;
}

tokenizer *tokenizer_load(const struct gguf_file *f) {
    if (!f) {
        anv_set_error("tokenizer: no model file");
        return NULL;
    }
    gguf_str model;
    if (!gguf_get_str(f, "tokenizer.ggml.model", &model)) {
        if (!gguf_find(f, "tokenizer.ggml.model")) anv_set_error("tokenizer: the model has no tokenizer.ggml.model");
        return NULL;
    }
    struct tokenizer *t = calloc(1, sizeof(*t));
    if (!t) {
        anv_set_error("tokenizer: out of memory");
        return NULL;
    }
    t->bos = t->eos = t->eot = t->eom = t->unk = t->sep = t->pad = t->mask = -1;
    t->fim_pre = t->fim_suf = t->fim_mid = t->fim_pad = t->fim_rep = t->fim_sep = -1;
    char *pre = NULL;
    if (gguf_str_eq(model, "llama")) {
        t->kind = TOK_KIND_SPM;
        t->bos = 1, t->eos = 2, t->unk = 0;
        t->add_space_prefix = true, t->add_bos = true;
    } else if (gguf_str_eq(model, "gpt2")) {
        t->kind = TOK_KIND_BPE;
        t->bos = 11, t->eos = 11;
        t->clean_spaces = true;
    } else if (gguf_str_eq(model, "gemma4")) { /* llama.cpp: BPE with pre "gemma4", no default ids */
        t->kind = TOK_KIND_BPE;
        t->clean_spaces = true;
        if (!(pre = strdup("gemma4"))) goto fail_oom;
    } else if (gguf_str_eq(model, "bert")) {   /* llama.cpp's WPM defaults */
        t->kind = TOK_KIND_WPM;
        t->bos = 101, t->unk = 100, t->sep = 102, t->pad = 0, t->mask = 103;
        t->add_bos = true;
    } else {
        anv_set_error("tokenizer: unsupported tokenizer model '%.*s' (supported: llama, gpt2, gemma4, bert)",
                      (int)(model.len > 64 ? 64 : model.len), model.ptr);
        free(t);
        return NULL;
    }
    const gguf_kv *tokens = gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_STRING);
    if (!tokens) {
        if (!gguf_find(f, "tokenizer.ggml.tokens")) anv_set_error("tokenizer: the model has no tokenizer.ggml.tokens");
        goto fail;
    }
    if (tokens->arr_len == 0 || tokens->arr_len > (uint64_t)INT32_MAX / 4) {
        anv_set_error("tokenizer: invalid vocabulary size %llu", (unsigned long long)tokens->arr_len);
        goto fail;
    }
    t->n_vocab = (int32_t)tokens->arr_len;
    if (!load_texts(t, tokens) || !load_scores_and_types(t, f) || !vocab_index_build(t)) goto fail_oom;
    if (!read_flag(f, "tokenizer.ggml.add_space_prefix", &t->add_space_prefix)) goto fail;
    if (t->kind == TOK_KIND_BPE) {
        t->add_space_prefix = false;
        if (!pre && gguf_find(f, "tokenizer.ggml.pre") && !(pre = gguf_get_str_dup(f, "tokenizer.ggml.pre"))) {
            anv_set_error("tokenizer: tokenizer.ggml.pre must be a string");
            goto fail;
        }
        if (!tok_bpe_init(t, f, pre ? pre : "default")) goto fail;
        if (!read_flag(f, "tokenizer.ggml.add_space_prefix", &t->add_space_prefix)) goto fail;
    }
    if (t->kind == TOK_KIND_WPM) {
        t->add_space_prefix = false;
        if (!tok_wpm_init(t, f)) goto fail;
    }
    if (!resolve_special(t, f)) goto fail_oom;
    if (t->force_add_bos) t->add_bos = true; /* llama.cpp overrides add_bos_token = false for Gemma 4 */
    free(pre);
    return t;
fail_oom:
    if (!anv_last_error()[0]) anv_set_error("tokenizer: out of memory");
fail:
    free(pre);
    tokenizer_free(t);
    return NULL;
}

void tokenizer_free(tokenizer *t) {
    if (!t) return;
    tok_bpe_free(t);
    free(t->arena);
    free(t->text_off);
    free(t->text_len);
    free(t->score);
    free(t->attr);
    free(t->vocab.slots);
    free(t->vocab.hashes);
    free(t->is_eog);
    free(t->special);
    free(t);
}

tok_kind tokenizer_kind(const tokenizer *t) { return t->kind; }
int32_t tokenizer_n_vocab(const tokenizer *t) { return t->n_vocab; }
int32_t tokenizer_bos(const tokenizer *t) { return t->bos; }
int32_t tokenizer_eos(const tokenizer *t) { return t->eos; }
bool tokenizer_add_bos(const tokenizer *t) { return t->add_bos; }
bool tokenizer_is_eog(const tokenizer *t, int32_t id) { return id >= 0 && id < t->n_vocab && t->is_eog[id]; }
int32_t tokenizer_find(const tokenizer *t, const char *piece) { return piece ? tok_lookup(t, piece, strlen(piece)) : -1; }

/* ---- special-token partition (llama.cpp's tokenizer_st_partition) ---- */

typedef struct {
    size_t off, len; /* raw text span */
    int32_t id;      /* >= 0: a special token */
} fragment;

typedef struct {
    fragment *v;
    size_t n, cap;
} frag_list;

static bool frag_push(frag_list *l, size_t off, size_t len, int32_t id) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        fragment *v = realloc(l->v, cap * sizeof(*v));
        if (!v) return false;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (fragment){off, len, id};
    return true;
}

/* Splits every raw fragment at the occurrences of each special token, longest token first. */
static bool partition(const struct tokenizer *t, const char *text, size_t len, bool parse_special, frag_list *out) {
    out->n = 0;
    if (len == 0) return true;
    if (!frag_push(out, 0, len, -1)) return false;
    /* Which byte pairs occur: a token whose first two bytes never occur can be skipped. */
    uint8_t *pairs = calloc(65536 / 8, 1);
    uint8_t bytes[256] = {0};
    if (!pairs) return false;
    for (size_t i = 0; i < len; i++) {
        bytes[(unsigned char)text[i]] = 1;
        if (i + 1 < len) {
            unsigned p = (unsigned char)text[i] << 8 | (unsigned char)text[i + 1];
            pairs[p >> 3] |= (uint8_t)(1u << (p & 7));
        }
    }
    frag_list next = {0};
    bool ok = true;
    for (int32_t k = 0; k < t->n_special && ok; k++) {
        int32_t id = t->special[k];
        uint16_t attr = t->attr[id];
        if (!parse_special && (attr & (TOK_ATTR_CONTROL | TOK_ATTR_UNKNOWN))) continue;
        const char *tx = tok_text(t, id);
        size_t tn = t->text_len[id];
        if (tn > len || !bytes[(unsigned char)tx[0]]) continue;
        bool absent = false; /* every byte pair of the token must occur somewhere in the text */
        for (size_t j = 0; j + 1 < tn && !absent; j++) {
            unsigned p = (unsigned char)tx[j] << 8 | (unsigned char)tx[j + 1];
            absent = !(pairs[p >> 3] & (1u << (p & 7)));
        }
        if (absent) continue;
        bool found = false;
        for (size_t fi = 0; fi < out->n && !found; fi++)
            found = out->v[fi].id < 0 && out->v[fi].len >= tn && memmem(text + out->v[fi].off, out->v[fi].len, tx, tn);
        if (!found) continue;
        bool changed = false;
        next.n = 0;
        for (size_t fi = 0; fi < out->n && ok; fi++) {
            fragment fr = out->v[fi];
            if (fr.id >= 0 || fr.len < tn) {
                ok = frag_push(&next, fr.off, fr.len, fr.id);
                continue;
            }
            size_t base = fr.off, blen = fr.len;
            for (;;) {
                const char *m = memmem(text + base, blen, tx, tn);
                if (!m) {
                    ok = ok && frag_push(&next, base, blen, -1);
                    break;
                }
                changed = true;
                size_t mpos = (size_t)(m - text);
                size_t left = mpos - base;
                if (attr & TOK_ATTR_LSTRIP)
                    while (left > 0 && isspace((unsigned char)text[base + left - 1])) left--;
                if (left > 0) ok = ok && frag_push(&next, base, left, -1);
                ok = ok && frag_push(&next, 0, 0, id);
                size_t roff = mpos + tn, rlen = base + blen - roff;
                if (attr & TOK_ATTR_RSTRIP)
                    while (rlen > 0 && isspace((unsigned char)text[roff])) roff++, rlen--;
                if (rlen == 0 || !ok) break;
                base = roff;
                blen = rlen;
            }
        }
        if (changed && ok) {
            frag_list tmp = *out;
            *out = next;
            next = tmp;
        }
    }
    free(next.v);
    free(pairs);
    return ok;
}

/* ---- encoding ---- */

static bool encode_spm_fragment(const struct tokenizer *t, const char *s, size_t n, bool prefix_space, tok_vec *out) {
    size_t spaces = prefix_space ? 1 : 0;
    for (size_t i = 0; i < n; i++) spaces += s[i] == ' ';
    char *buf = malloc(n + spaces * 2 + 1);
    if (!buf) return false;
    size_t m = 0;
    if (prefix_space) memcpy(buf + m, "\xE2\x96\x81", 3), m += 3;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ') memcpy(buf + m, "\xE2\x96\x81", 3), m += 3;
        else buf[m++] = s[i];
    }
    bool ok = tok_spm_encode(t, buf, m, out);
    free(buf);
    return ok;
}

int32_t *tokenizer_encode(const tokenizer *t, const char *text, size_t len, bool add_special, bool parse_special, int *n_out) {
    if (n_out) *n_out = 0;
    if (!t || (!text && len > 0) || !n_out) {
        anv_set_error("tokenizer_encode: invalid arguments");
        return NULL;
    }
    frag_list frags = {0};
    tok_vec out = {0};
    bool ok = partition(t, text, len, parse_special, &frags);
    if (add_special && (t->add_bos || t->kind == TOK_KIND_WPM) && t->bos >= 0) ok = ok && tok_vec_push(&out, t->bos);
    bool prev_special = true; /* SPM: a space prefix goes before the first text and after specials */
    for (size_t i = 0; i < frags.n && ok; i++) {
        fragment fr = frags.v[i];
        if (fr.id >= 0) {
            ok = tok_vec_push(&out, fr.id);
            prev_special = true;
        } else if (t->kind == TOK_KIND_SPM) {
            ok = encode_spm_fragment(t, text + fr.off, fr.len, t->add_space_prefix && prev_special, &out);
            prev_special = false;
        } else if (t->kind == TOK_KIND_WPM) {
            ok = tok_wpm_encode(t, text + fr.off, fr.len, &out);
        } else {
            ok = tok_bpe_encode(t, text + fr.off, fr.len, &out);
        }
    }
    if (ok && add_special && t->add_eos && t->eos >= 0) ok = tok_vec_push(&out, t->eos);
    if (ok && add_special && t->kind == TOK_KIND_WPM && t->sep >= 0) ok = tok_vec_push(&out, t->sep); /* [SEP] */
    free(frags.v);
    if (!ok || out.oom) {
        free(out.ids);
        if (!anv_last_error()[0] || out.oom) anv_set_error("tokenizer_encode: out of memory");
        return NULL;
    }
    if (out.n > (size_t)INT32_MAX) {
        free(out.ids);
        anv_set_error("tokenizer_encode: too many tokens");
        return NULL;
    }
    if (!out.ids) out.ids = malloc(sizeof(int32_t)); /* a valid pointer even for zero tokens */
    if (!out.ids) {
        anv_set_error("tokenizer_encode: out of memory");
        return NULL;
    }
    *n_out = (int)out.n;
    return out.ids;
}

/* ---- decoding ---- */

static int copy_out(char *buf, int cap, const char *s, size_t n) {
    if (buf && cap > 0) memcpy(buf, s, n < (size_t)cap ? n : (size_t)cap);
    return (int)n;
}

int tokenizer_token_to_piece(const tokenizer *t, int32_t id, char *buf, int cap, bool render_special) {
    if (!t || id < 0 || id >= t->n_vocab) {
        anv_set_error("tokenizer_token_to_piece: token id %d out of range", (int)id);
        return 0;
    }
    uint16_t attr = t->attr[id];
    const char *s = tok_text(t, id);
    size_t n = t->text_len[id];
    if (!render_special && (attr & (TOK_ATTR_UNKNOWN | TOK_ATTR_CONTROL))) return 0;
    if (attr & (TOK_ATTR_UNKNOWN | TOK_ATTR_CONTROL | TOK_ATTR_USER_DEFINED)) return copy_out(buf, cap, s, n);
    if (attr & TOK_ATTR_NORMAL) {
        if (t->kind == TOK_KIND_BPE && !t->escape_whitespace) return tok_bpe_decode_text(t, s, n, buf, cap);
        int m = 0; /* SPM and SentencePiece-style BPE: U+2581 -> ' ' */
        for (size_t i = 0; i < n;) {
            if (i + 3 <= n && memcmp(s + i, "\xE2\x96\x81", 3) == 0) {
                if (buf && m < cap) buf[m] = ' ';
                m++, i += 3;
            } else {
                if (buf && m < cap) buf[m] = s[i];
                m++, i++;
            }
        }
        return m;
    }
    if (attr & TOK_ATTR_BYTE) { /* "<0xNN>" */
        char hex[3] = {0};
        if (n > 3) memcpy(hex, s + 3, n - 3 >= 2 ? 2 : 1);
        char byte = (char)strtol(hex, NULL, 16);
        return copy_out(buf, cap, &byte, 1);
    }
    return 0;
}

/* ---- streaming ---- */

/* Length of the valid UTF-8 sequence at s (n bytes available): > 0 complete, 0 a valid but
 * incomplete prefix, -1 invalid first byte(s). Strict: no overlongs, surrogates or > U+10FFFF. */
static int utf8_seq(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    int len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else return -1;
    for (int i = 1; i < len; i++) {
        if ((size_t)i >= n) return 0;
        unsigned b = s[i];
        if (i == 1 ? (b < lo || b > hi) : (b & 0xC0) != 0x80) return -1;
    }
    return len;
}

int tok_stream_push(tok_stream *s, const tokenizer *t, int32_t id, char *out, int cap) {
    if (!s || !t || (!out && cap > 0) || cap < 0) return 0;
    if (s->n_pending < 0 || s->n_pending > (int)sizeof(s->pending)) s->n_pending = 0;
    char small[256];
    int plen = tokenizer_token_to_piece(t, id, NULL, 0, false);
    size_t total = (size_t)s->n_pending + (size_t)plen;
    char *buf = total <= sizeof(small) ? small : malloc(total);
    if (!buf) return 0;
    memcpy(buf, s->pending, (size_t)s->n_pending);
    tokenizer_token_to_piece(t, id, buf + s->n_pending, plen, false);
    int w = 0;
    size_t i = 0;
    s->n_pending = 0;
    while (i < total) {
        int k = utf8_seq((const unsigned char *)buf + i, total - i);
        if (k == 0) { /* incomplete tail: hold it for the next token */
            memcpy(s->pending, buf + i, total - i);
            s->n_pending = (int)(total - i);
            break;
        }
        const char *src = buf + i;
        int n = k;
        if (k < 0) src = "\xEF\xBF\xBD", n = 3; /* an invalid byte becomes U+FFFD */
        if (w + n > cap) break;                  /* out of room: the rest is dropped */
        memcpy(out + w, src, (size_t)n);
        w += n;
        i += k < 0 ? 1 : (size_t)k;
    }
    if (buf != small) free(buf);
    return w;
}

int tok_stream_flush(tok_stream *s, char *out, int cap) {
    if (!s) return 0;
    int had = s->n_pending > 0;
    s->n_pending = 0;
    if (!had || !out || cap < 3) return 0;
    memcpy(out, "\xEF\xBF\xBD", 3);
    return 3;
}
