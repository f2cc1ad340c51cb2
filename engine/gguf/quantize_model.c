/* quantize_model: `anvil quantize` (see quantize_model.h). Three parts: the file-type table,
 * the per-tensor type rules (a port of the decisions in llama.cpp's src/llama-quant.cpp:
 * which tensors may be quantized, the mix rules, the fallbacks), and the conversion loop
 * (dequantize each row to f32, quantize it to the target type, rows split over threads,
 * streamed to the GGUF writer slab by slab). */
#include "quantize_model.h"
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include "error.h"
#include "gguf_write.h"

#define QNT_VERSION 2 /* ggml's GGML_QNT_VERSION */
#define MAX_NAME 256

/* ---- file types ---- */

static const struct { int ftype; const char *name; qtype type; } FTYPES[] = {
    {QFT_ALL_F32, "F32", QT_F32}, {QFT_F16, "F16", QT_F16}, {QFT_BF16, "BF16", QT_BF16},
    {QFT_Q4_0, "Q4_0", QT_Q4_0}, {QFT_Q4_1, "Q4_1", QT_Q4_1}, {QFT_Q5_0, "Q5_0", QT_Q5_0},
    {QFT_Q5_1, "Q5_1", QT_Q5_1}, {QFT_Q8_0, "Q8_0", QT_Q8_0}, {QFT_Q2_K, "Q2_K", QT_Q2_K},
    {QFT_Q3_K_S, "Q3_K_S", QT_Q3_K}, {QFT_Q3_K_M, "Q3_K_M", QT_Q3_K}, {QFT_Q3_K_L, "Q3_K_L", QT_Q3_K},
    {QFT_Q4_K_S, "Q4_K_S", QT_Q4_K}, {QFT_Q4_K_M, "Q4_K_M", QT_Q4_K}, {QFT_Q5_K_S, "Q5_K_S", QT_Q5_K},
    {QFT_Q5_K_M, "Q5_K_M", QT_Q5_K}, {QFT_Q6_K, "Q6_K", QT_Q6_K},
};
#define N_FTYPES (int)(sizeof FTYPES / sizeof FTYPES[0])

int quant_ftype_from_name(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < N_FTYPES; i++)
        if (strcasecmp(FTYPES[i].name, name) == 0) return FTYPES[i].ftype;
    if (strcasecmp(name, "Q3_K") == 0) return QFT_Q3_K_M; /* llama-quantize's aliases */
    if (strcasecmp(name, "Q4_K") == 0) return QFT_Q4_K_M;
    if (strcasecmp(name, "Q5_K") == 0) return QFT_Q5_K_M;
    return -1;
}

const char *quant_ftype_name(int ftype) {
    for (int i = 0; i < N_FTYPES; i++)
        if (FTYPES[i].ftype == ftype) return FTYPES[i].name;
    return NULL;
}

int quant_ftype_from_qtype(qtype t) {
    const qtype_info *info = qtype_get(t);
    return info ? quant_ftype_from_name(info->name) : -1;
}

static int ftype_index(int ftype) {
    for (int i = 0; i < N_FTYPES; i++)
        if (FTYPES[i].ftype == ftype) return i;
    return -1;
}

/* ---- tensor names ---- */

static bool has(const char *s, const char *sub) { return strstr(s, sub) != NULL; }
static bool ends_with(const char *s, const char *suf) {
    const size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

static void name_of(const gguf_tensor *t, char *buf) {
    const size_t n = t->name.len < MAX_NAME - 1 ? (size_t)t->name.len : MAX_NAME - 1;
    memcpy(buf, t->name.ptr, n);
    buf[n] = 0;
}

/* Dimensions as ggml counts them: up to the last one above 1. */
static int n_dims_of(const gguf_tensor *t) {
    int n = 1;
    for (int d = 1; d < GGUF_MAX_DIMS; d++)
        if (t->ne[d] > 1) n = d + 1;
    return n;
}

/* llama.cpp's tensor_allows_quantization (quantize_output_tensor on, only_copy off). */
static bool allows_quantization(const char *name, const gguf_tensor *t) {
    static const char *const never[] = {
        "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel",
        "per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight",
        "indexer.q_proj.weight", "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight",
        "time_mix_w2.weight", "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight",
        "time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight",
        "time_mix_g2.weight", "time_mix_decay_w1.weight", "time_mix_decay_w2.weight",
        "time_mix_lerp_fused.weight", "attn_rel_b.weight", ".position_embd", "sam.pos_embd",
        "sam.neck.", "sam.net_", ".rel_pos", ".patch_embd", ".patch_merger", "a.rvq.codebook",
        "mm.a.code_embd",
    };
    if (n_dims_of(t) < 2 || !ends_with(name, "weight")) return false;
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
        if (has(name, never[i])) return false;
    return strcmp(name, "position_embd.weight") != 0 && strcmp(name, "token_types.weight") != 0;
}

typedef enum {
    CAT_TOKEN_EMBD, CAT_ATTN_Q, CAT_ATTN_V, CAT_ATTN_K, CAT_ATTN_QKV, CAT_ATTN_KV_B,
    CAT_ATTN_OUTPUT, CAT_FFN_UP, CAT_FFN_GATE, CAT_FFN_DOWN, CAT_OUTPUT, CAT_OTHER
} tcat;

static tcat category(const char *name) {
    if (strcmp(name, "output.weight") == 0) return CAT_OUTPUT;
    if (strcmp(name, "token_embd.weight") == 0 || strcmp(name, "per_layer_token_embd.weight") == 0)
        return CAT_TOKEN_EMBD;
    if (has(name, "attn_qkv.weight")) return CAT_ATTN_QKV;
    if (has(name, "attn_kv_b.weight")) return CAT_ATTN_KV_B;
    if (has(name, "attn_v.weight")) return CAT_ATTN_V;
    if (has(name, "attn_k.weight")) return CAT_ATTN_K;
    if (has(name, "attn_q.weight")) return CAT_ATTN_Q;
    if (has(name, "attn_output.weight")) return CAT_ATTN_OUTPUT;
    if (has(name, "ffn_up")) return CAT_FFN_UP;
    if (has(name, "ffn_gate")) return CAT_FFN_GATE;
    if (has(name, "ffn_down")) return CAT_FFN_DOWN;
    return CAT_OTHER;
}

static bool is_attn_v_like(tcat c) { return c == CAT_ATTN_V || c == CAT_ATTN_QKV || c == CAT_ATTN_KV_B; }

static int layer_of(const char *name) {
    int l = -1;
    if (sscanf(name, "blk.%d.", &l) != 1) l = -1;
    return l;
}

/* ---- the mix rules ---- */

typedef struct {
    int ftype;
    bool falcon;
    int n_layer, n_gqa, n_expert;
    int n_attn_wv, i_attn_wv, i_ffn_down;
    bool tied_embeddings;
} plan_state;

static bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

/* Reads an integer hyperparameter ({arch}.suffix), scalar or first element of an array. */
static int hparam(const gguf_file *f, const char *arch, const char *suffix, int dflt) {
    char key[160];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return dflt;
    if (kv->type == GGUF_ARRAY) {
        if (kv->arr_len == 0) return dflt;
        switch (kv->arr_type) {
        case GGUF_UINT32: case GGUF_INT32: { int32_t v; memcpy(&v, kv->arr_data, 4); return v; }
        case GGUF_UINT8: return *(const uint8_t *)kv->arr_data;
        default: return dflt;
        }
    }
    uint32_t v;
    return gguf_get_u32(f, key, &v) ? (int)v : dflt;
}

/* llama.cpp's llama_tensor_get_type_impl, for the file types Anvil offers. */
static qtype mix_type(plan_state *s, qtype t, const gguf_tensor *ten, const char *name, tcat cat) {
    const int ft = s->ftype;
    if (cat == CAT_OUTPUT || (s->tied_embeddings && cat == CAT_TOKEN_EMBD)) {
        const int bs = qtype_get(t)->block_size;
        if (s->falcon || ten->ne[0] % bs != 0) t = QT_Q8_0;
        else if (t != QT_Q8_0) t = QT_Q6_K;
    } else if (cat == CAT_TOKEN_EMBD) {
        /* unchanged for these file types */
    } else if (is_attn_v_like(cat)) {
        if (ft == QFT_Q2_K) t = s->n_gqa >= 4 ? QT_Q4_K : QT_Q3_K;
        else if (ft == QFT_Q3_K_M) t = s->i_attn_wv < 2 ? QT_Q5_K : QT_Q4_K;
        else if (ft == QFT_Q3_K_L) t = QT_Q5_K;
        else if ((ft == QFT_Q4_K_M || ft == QFT_Q5_K_M) && use_more_bits(s->i_attn_wv, s->n_attn_wv)) t = QT_Q6_K;
        else if (ft == QFT_Q4_K_S && s->i_attn_wv < 4) t = QT_Q5_K;
        if (s->n_expert == 8) t = QT_Q8_0;
        s->i_attn_wv++;
    } else if (cat == CAT_ATTN_K) {
        if (s->n_expert == 8) t = QT_Q8_0;
    } else if (cat == CAT_FFN_DOWN) {
        int i_layer = s->i_ffn_down;
        const int n_layer = s->n_layer;
        if (s->n_expert > 1) {
            i_layer = layer_of(name);
            if (i_layer < 0 || i_layer >= n_layer) return (qtype)-1;
        }
        if (ft == QFT_Q2_K) t = QT_Q3_K;
        else if (ft == QFT_Q3_K_M)
            t = i_layer < n_layer / 16 ? QT_Q5_K
                : !s->falcon || use_more_bits(i_layer, n_layer) ? QT_Q4_K : QT_Q3_K;
        else if (ft == QFT_Q3_K_L) t = s->falcon ? QT_Q4_K : QT_Q5_K;
        else if (ft == QFT_Q4_K_M) {
            if (s->falcon)
                t = i_layer < n_layer / 16 ? QT_Q6_K : use_more_bits(i_layer, n_layer) ? QT_Q5_K : QT_Q4_K;
            else if (use_more_bits(i_layer, n_layer)) t = QT_Q6_K;
        } else if (ft == QFT_Q5_K_M && use_more_bits(i_layer, n_layer)) t = QT_Q6_K;
        else if (ft == QFT_Q4_K_S && !s->falcon && i_layer < n_layer / 8) t = QT_Q5_K;
        s->i_ffn_down++;
    } else if (cat == CAT_ATTN_OUTPUT) {
        if (!s->falcon) {
            if (s->n_expert == 8) {
                if (ft == QFT_Q2_K || ft == QFT_Q3_K_S || ft == QFT_Q3_K_M || ft == QFT_Q4_K_S || ft == QFT_Q4_K_M)
                    t = QT_Q5_K;
            } else if (ft == QFT_Q2_K) t = QT_Q3_K;
            else if (ft == QFT_Q3_K_M) t = QT_Q4_K;
            else if (ft == QFT_Q3_K_L) t = QT_Q5_K;
        } else if (ft == QFT_Q3_K_L) {
            t = QT_Q4_K;
        }
    } else if (cat == CAT_ATTN_QKV) {
        if (ft == QFT_Q3_K_M || ft == QFT_Q3_K_L) t = QT_Q4_K;
        else if (ft == QFT_Q4_K_M) t = QT_Q5_K;
        else if (ft == QFT_Q5_K_M) t = QT_Q6_K;
    }
    return t;
}

/* llama.cpp's tensor_type_fallback: a type whose block divides the row length. */
static qtype fallback_type(qtype t, const gguf_tensor *ten, const char *name) {
    const int bs = qtype_get(t)->block_size;
    if (ten->ne[0] % bs == 0) return t;
    qtype r = t;
    switch (t) {
    case QT_Q2_K: case QT_Q3_K: r = QT_Q4_0; break;
    case QT_Q4_K: r = QT_Q5_0; break;
    case QT_Q5_K: r = QT_Q5_1; break;
    case QT_Q6_K: r = QT_Q8_0; break;
    default: break; /* 32-element types: only F16 below is left */
    }
    if (ten->ne[0] % qtype_get(r)->block_size != 0) r = QT_F16;
    anv_log("quantize: %s: row length %" PRId64 " is not a multiple of %d (%s): using %s", name,
            ten->ne[0], bs, qtype_get(t)->name, qtype_get(r)->name);
    return r;
}

/* Tensor order of llama.cpp's loader: by layer number (non-layer tensors first), then name. */
typedef struct { int layer; char name[MAX_NAME]; uint64_t idx; } order_key;

static int cmp_order(const void *a, const void *b) {
    const order_key *x = a, *y = b;
    if (x->layer != y->layer) return x->layer < y->layer ? -1 : 1;
    return strcmp(x->name, y->name);
}

static order_key *sorted_tensors(const gguf_file *f) {
    order_key *keys = malloc((f->n_tensors ? f->n_tensors : 1) * sizeof *keys);
    if (!keys) return NULL;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        name_of(&f->tensors[i], keys[i].name);
        keys[i].layer = layer_of(keys[i].name);
        keys[i].idx = i;
    }
    qsort(keys, f->n_tensors, sizeof *keys, cmp_order);
    return keys;
}

static int plan_sorted(const gguf_file *f, const order_key *keys, int ftype, bool pure, uint32_t *types) {
    const int fi = ftype_index(ftype);
    if (fi < 0) {
        anv_set_error("quantize: file type %d is not supported", ftype);
        return -1;
    }
    const qtype dflt = FTYPES[fi].type;
    char *arch = gguf_get_str_dup(f, "general.architecture");
    plan_state s = {.ftype = ftype, .tied_embeddings = true};
    if (arch) {
        s.falcon = strcmp(arch, "falcon") == 0;
        s.n_layer = hparam(f, arch, "block_count", 0);
        const int n_head = hparam(f, arch, "attention.head_count", 0);
        const int n_kv_head = hparam(f, arch, "attention.head_count_kv", n_head);
        s.n_gqa = n_kv_head > 0 ? n_head / n_kv_head : 0;
        s.n_expert = hparam(f, arch, "expert_count", 0);
        free(arch);
    }
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const tcat c = category(keys[i].name);
        if (is_attn_v_like(c)) s.n_attn_wv++;
        if (c == CAT_OUTPUT) s.tied_embeddings = false;
    }
    const bool quantized = dflt != QT_F32 && dflt != QT_F16 && dflt != QT_BF16;
    for (uint64_t k = 0; k < f->n_tensors; k++) {
        const gguf_tensor *t = &f->tensors[keys[k].idx];
        const char *name = keys[k].name;
        if (!allows_quantization(name, t)) {
            types[keys[k].idx] = t->type;
            continue;
        }
        qtype nt = dflt;
        if (quantized) {
            if (!pure) nt = mix_type(&s, nt, t, name, category(name));
            if ((int)nt < 0) {
                anv_set_error("quantize: tensor '%s': layer outside 0..%d", name, s.n_layer - 1);
                return -1;
            }
            nt = fallback_type(nt, t, name);
        }
        types[keys[k].idx] = nt;
    }
    return 0;
}

int quantize_model_plan(const gguf_file *f, quant_ftype ftype, bool pure, uint32_t *types) {
    order_key *keys = sorted_tensors(f);
    if (!keys) {
        anv_set_error("quantize: out of memory");
        return -1;
    }
    const int rc = plan_sorted(f, keys, ftype, pure, types);
    free(keys);
    return rc;
}

/* ---- conversion ---- */

typedef struct {
    const uint8_t *src;
    uint8_t *dst;
    qtype src_type, dst_type;
    int64_t n_per_row, row0, row1; /* rows of this slab, relative to src/dst */
    size_t src_row, dst_row;
    int64_t bad_row; /* first row with NaN/inf, or -1 */
    float *buf;
} convert_job;

static void *convert_rows(void *arg) {
    convert_job *j = arg;
    for (int64_t r = j->row0; r < j->row1; r++) {
        dequantize_row(j->src_type, j->src + (size_t)r * j->src_row, j->buf, j->n_per_row);
        for (int64_t i = 0; i < j->n_per_row; i++)
            if (!isfinite(j->buf[i])) {
                j->bad_row = r;
                return NULL;
            }
        quantize_row(j->dst_type, j->buf, j->dst + (size_t)r * j->dst_row, j->n_per_row);
    }
    return NULL;
}

/* Converts one tensor and streams it to w. */
static int convert_tensor(gguf_writer *w, const gguf_tensor *t, const char *name, qtype dst_type, int n_threads) {
    const int64_t n_per_row = t->ne[0];
    const int64_t n_rows = n_per_row ? (int64_t)(t->nbytes / qtype_row_size(t->type, n_per_row)) : 0;
    const size_t src_row = qtype_row_size(t->type, n_per_row), dst_row = qtype_row_size(dst_type, n_per_row);
    if (n_rows == 0) return 0;
    int64_t slab = (int64_t)((64u << 20) / (dst_row ? dst_row : 1));
    if (slab < 1) slab = 1;
    if (slab > n_rows) slab = n_rows;
    uint8_t *dst = malloc((size_t)slab * dst_row);
    convert_job jobs[64];
    if (n_threads > 64) n_threads = 64;
    if (n_threads > slab) n_threads = (int)slab;
    int rc = dst ? 0 : -1;
    for (int k = 0; k < n_threads && rc == 0; k++)
        if (!(jobs[k].buf = malloc((size_t)n_per_row * sizeof(float)))) {
            for (int q = 0; q < k; q++) free(jobs[q].buf);
            rc = -1;
        }
    if (rc) {
        free(dst);
        anv_set_error("quantize: out of memory converting '%s'", name);
        return -1;
    }
    for (int64_t r0 = 0; r0 < n_rows && rc == 0; r0 += slab) {
        const int64_t nr = n_rows - r0 < slab ? n_rows - r0 : slab;
        pthread_t th[64];
        bool started[64] = {false};
        for (int k = 0; k < n_threads; k++) {
            convert_job *j = &jobs[k];
            j->src = (const uint8_t *)t->data + (size_t)r0 * src_row;
            j->dst = dst;
            j->src_type = (qtype)t->type;
            j->dst_type = dst_type;
            j->n_per_row = n_per_row;
            j->row0 = nr * k / n_threads;
            j->row1 = nr * (k + 1) / n_threads;
            j->src_row = src_row;
            j->dst_row = dst_row;
            j->bad_row = -1;
            if (k > 0) started[k] = pthread_create(&th[k], NULL, convert_rows, j) == 0;
            if (k > 0 && !started[k]) convert_rows(j); /* no thread: do it here */
        }
        convert_rows(&jobs[0]);
        for (int k = 1; k < n_threads; k++)
            if (started[k]) pthread_join(th[k], NULL);
        for (int k = 0; k < n_threads && rc == 0; k++)
            if (jobs[k].bad_row >= 0) {
                anv_set_error("quantize: tensor '%s' row %" PRId64 " contains NaN or inf", name, r0 + jobs[k].bad_row);
                rc = -1;
            }
        if (rc == 0) rc = gguf_writer_write_data(w, dst, (size_t)nr * dst_row);
    }
    for (int k = 0; k < n_threads; k++) free(jobs[k].buf);
    free(dst);
    return rc;
}

static int n_cpus(void) {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* The same file under two names (a symlink, a hard link, "./m.gguf"): same device and inode.
 * Where the platform has no inode numbers (Windows: 0), the names are compared. */
static bool same_file(const char *a, const char *b) {
    if (strcmp(a, b) == 0) return true;
    struct stat sa, sb;
    if (stat(a, &sa) != 0 || stat(b, &sb) != 0) return false;   /* the output does not exist yet */
    if (sa.st_ino == 0 && sb.st_ino == 0) return false;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int quantize_model_ftype(const char *in_path, const char *out_path, quant_ftype ftype, const quantize_opts *opts) {
    const quantize_opts dflt_opts = {0};
    if (!opts) opts = &dflt_opts;
    if (ftype_index(ftype) < 0) {
        anv_set_error("quantize: file type %d is not supported", (int)ftype);
        return -1;
    }
    if (!in_path || !out_path || same_file(in_path, out_path)) {
        anv_set_error("quantize: input and output must be two different files (%s is %s)", out_path ? out_path : "?",
                      in_path ? in_path : "?");
        return -1;
    }
    gguf_file *f = gguf_open(in_path);
    if (!f) return -1;
    const int n_threads = opts->n_threads > 0 ? opts->n_threads : n_cpus();
    order_key *keys = sorted_tensors(f);
    uint32_t *types = malloc((f->n_tensors ? f->n_tensors : 1) * sizeof *types);
    gguf_writer *w = NULL;
    int rc = keys && types ? 0 : -1;
    if (rc) anv_set_error("quantize: out of memory");
    if (rc == 0) rc = plan_sorted(f, keys, ftype, opts->pure, types);
    /* every tensor that changes type must be dequantizable */
    bool requant_logged = false;
    for (uint64_t i = 0; rc == 0 && i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        if (types[i] == t->type) continue;
        const qtype_info *qi = qtype_get(t->type);
        if (!qi || !qi->can_dequantize) {
            char name[MAX_NAME];
            name_of(t, name);
            anv_set_error("%s: tensor '%s' has type %s, which Anvil cannot dequantize", in_path, name,
                          qi ? qi->name : "unknown");
            rc = -1;
        } else if (t->type != QT_F32 && t->type != QT_F16 && t->type != QT_BF16 && !requant_logged) {
            anv_log("quantize: re-quantizing %s tensors: quality is lower than quantizing from F32/F16/BF16", qi->name);
            requant_logged = true;
        }
    }
    if (rc == 0 && !(w = gguf_writer_new(out_path))) rc = -1;
    if (rc == 0) rc = gguf_writer_copy_all_kv(w, f);
    if (rc == 0) rc = gguf_writer_set_u32(w, "general.quantization_version", QNT_VERSION);
    if (rc == 0) rc = gguf_writer_set_u32(w, "general.file_type", (uint32_t)ftype);
    if (rc == 0) rc = gguf_writer_remove_kv(w, "split.no") | gguf_writer_remove_kv(w, "split.count") |
                      gguf_writer_remove_kv(w, "split.tensors.count");
    for (uint64_t k = 0; rc == 0 && k < f->n_tensors; k++) {
        const gguf_tensor *t = &f->tensors[keys[k].idx];
        rc = gguf_writer_add_tensor(w, keys[k].name, types[keys[k].idx], t->n_dims, t->ne, NULL);
    }
    if (rc == 0) rc = gguf_writer_write_header(w);
    uint64_t bytes_in = 0, bytes_out = 0, n_converted = 0, bytes_total = 0;
    for (uint64_t k = 0; k < f->n_tensors; k++) bytes_total += f->tensors[k].nbytes;
    for (uint64_t k = 0; rc == 0 && k < f->n_tensors; k++) {
        const gguf_tensor *t = &f->tensors[keys[k].idx];
        const qtype nt = (qtype)types[keys[k].idx];
        bytes_in += t->nbytes;
        bytes_out += gguf_writer_tensor_nbytes(w, keys[k].name);
        if (nt == t->type) {
            rc = gguf_writer_write_data(w, t->data, (size_t)t->nbytes);
        } else {
            rc = convert_tensor(w, t, keys[k].name, nt, n_threads);
            n_converted++;
        }
        if (rc == 0 && opts->progress && bytes_total) opts->progress((double)bytes_in / (double)bytes_total, opts->user);
    }
    if (rc == 0) {
        rc = gguf_writer_finish(w);
        w = NULL;
    }
    if (rc == 0)
        anv_log("quantize: %s -> %s (%s): %" PRIu64 " tensors, %" PRIu64 " converted; %.2f MiB -> %.2f MiB",
                in_path, out_path, quant_ftype_name(ftype), f->n_tensors, n_converted, bytes_in / 1048576.0,
                bytes_out / 1048576.0);
    gguf_writer_abort(w);
    free(types);
    free(keys);
    gguf_close(f);
    return rc;
}

int quantize_model(const char *in_path, const char *out_path, qtype type, int n_threads) {
    const int ftype = quant_ftype_from_qtype(type);
    if (ftype < 0) {
        const qtype_info *qi = qtype_get(type);
        anv_set_error("quantize: %s is not a target type (use f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, "
                      "q2_K, q3_K, q4_K, q5_K or q6_K)", qi ? qi->name : "this type");
        return -1;
    }
    const quantize_opts opts = {.n_threads = n_threads};
    return quantize_model_ftype(in_path, out_path, (quant_ftype)ftype, &opts);
}
