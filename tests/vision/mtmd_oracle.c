/* mtmd_oracle: llama.cpp's side of the vision goldens (not built by Anvil's CMake; compiled by
 * tests/data/golden/vision/regen.sh against today's llama.cpp build). Loads a text model and a
 * projector with libmtmd, tokenizes PROMPT (one "<__media__>" marker) with one image read from
 * a binary PPM, and prints JSON: the image's embeddings from mtmd_encode_chunk (clip's output,
 * mtmd_get_output_embd), the encode time, and every text chunk's tokens and all their logits
 * after decoding the chunks in order (the image through mtmd_helper_decode_image_chunk, i.e.
 * gemma3's non-causal image batch).
 *
 *   mtmd_oracle MODEL MMPROJ IMAGE.ppm PROMPT [N_ENCODE_REPEATS]   > golden.json */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llama.h"
#include "mtmd.h"
#include "mtmd-helper.h"

static unsigned char *read_ppm(const char *path, int *w, int *h) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    int maxv = 0;
    if (fscanf(f, "P6 %d %d %d", w, h, &maxv) != 3 || maxv != 255) { fclose(f); return NULL; }
    fgetc(f);
    size_t n = (size_t)*w * *h * 3;
    unsigned char *p = malloc(n);
    if (!p || fread(p, 1, n, f) != n) { fclose(f); free(p); return NULL; }
    fclose(f);
    return p;
}

static void quiet(enum ggml_log_level level, const char *text, void *ud) { (void)level; (void)text; (void)ud; }

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    if (argc < 5) { fprintf(stderr, "usage: mtmd_oracle MODEL MMPROJ IMAGE.ppm PROMPT [REPEATS]\n"); return 2; }
    const int repeats = argc > 5 ? atoi(argv[5]) : 1;
    if (getenv("ORACLE_QUIET")) llama_log_set(quiet, NULL);
    if (getenv("ORACLE_QUIET")) mtmd_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) { fprintf(stderr, "cannot load %s\n", argv[1]); return 1; }
    struct mtmd_context_params vp = mtmd_context_params_default();
    vp.use_gpu = false;
    vp.n_threads = 2;
    vp.print_timings = false;
    vp.warmup = false;
    mtmd_context *mctx = mtmd_init_from_file(argv[2], model, vp);
    if (!mctx) { fprintf(stderr, "cannot init the mtmd context\n"); return 1; }
    int w, h;
    unsigned char *rgb = read_ppm(argv[3], &w, &h);
    if (!rgb) { fprintf(stderr, "cannot read %s\n", argv[3]); return 1; }
    mtmd_bitmap *bmp = mtmd_bitmap_init((uint32_t)w, (uint32_t)h, rgb);
    mtmd_input_chunks *chunks = mtmd_input_chunks_init();
    mtmd_input_text txt = {argv[4], strlen(argv[4]), true, true};
    const mtmd_bitmap *bmps[1] = {bmp};
    if (mtmd_tokenize(mctx, chunks, &txt, bmps, 1) != 0) { fprintf(stderr, "tokenize failed\n"); return 1; }
    /* 256 (and batches of 256), or enough for a prompt whose image has more rows: a bidirectional
     * image must be one ubatch */
    const int n_all = (int)mtmd_helper_get_n_tokens(chunks), n_ctx = n_all + 16 > 256 ? n_all + 16 : 256;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)n_ctx;
    cp.n_batch = (uint32_t)n_ctx;
    cp.n_ubatch = (uint32_t)n_ctx;
    cp.n_threads = cp.n_threads_batch = 2;
    struct llama_context *lctx = llama_init_from_model(model, cp);
    if (!lctx) { fprintf(stderr, "cannot init the context\n"); return 1; }
    const int n_embd = llama_model_n_embd(model);
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    printf("{\"n_embd\": %d, \"n_vocab\": %d, \"image\": [%d, %d], \"chunks\": [\n", n_embd, n_vocab, w, h);
    llama_pos n_past = 0;
    for (size_t ci = 0; ci < mtmd_input_chunks_size(chunks); ci++) {
        const mtmd_input_chunk *ch = mtmd_input_chunks_get(chunks, ci);
        if (ci) printf(",\n");
        if (mtmd_input_chunk_get_type(ch) == MTMD_INPUT_CHUNK_TYPE_TEXT) {
            size_t n;
            const llama_token *toks = mtmd_input_chunk_get_tokens_text(ch, &n);
            struct llama_batch b = llama_batch_init((int)n, 0, 1);
            for (size_t i = 0; i < n; i++) {
                b.token[i] = toks[i]; b.pos[i] = n_past + (int)i; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0; b.logits[i] = 1;
            }
            b.n_tokens = (int)n;
            if (llama_decode(lctx, b) != 0) { fprintf(stderr, "decode failed\n"); return 1; }
            printf("{\"type\": \"text\", \"tokens\": [");
            for (size_t i = 0; i < n; i++) printf("%s%d", i ? ", " : "", toks[i]);
            printf("], \"logits\": [");
            for (size_t i = 0; i < n; i++) {
                const float *lg = llama_get_logits_ith(lctx, (int)i);
                printf("%s[", i ? ",\n" : "");
                for (int v = 0; v < n_vocab; v++) printf("%s%.7g", v ? "," : "", lg[v]);
                printf("]");
            }
            printf("]}");
            llama_batch_free(b);
            n_past += (llama_pos)n;
        } else {
            double best = 1e30;
            for (int r = 0; r < (repeats < 1 ? 1 : repeats); r++) {
                const double t0 = now_ms();
                if (mtmd_encode_chunk(mctx, ch) != 0) { fprintf(stderr, "encode failed\n"); return 1; }
                const double t = now_ms() - t0;
                if (t < best) best = t;
            }
            const size_t nt = mtmd_input_chunk_get_n_tokens(ch);
            float *embd = mtmd_get_output_embd(mctx);
            printf("{\"type\": \"image\", \"n_tokens\": %zu, \"encode_ms\": %.3f, \"embd\": [", nt, best);
            for (size_t i = 0; i < nt * (size_t)n_embd; i++) printf("%s%.7g", i ? "," : "", embd[i]);
            printf("]}");
            llama_pos np;
            if (mtmd_helper_decode_image_chunk(mctx, lctx, ch, embd, n_past, 0, n_ctx, &np, NULL, NULL) != 0) { fprintf(stderr, "image decode failed\n"); return 1; }
            n_past = np;
        }
    }
    printf("\n]}\n");
    mtmd_input_chunks_free(chunks);
    mtmd_bitmap_free(bmp);
    free(rgb);
    mtmd_free(mctx);
    llama_free(lctx);
    llama_model_free(model);
    return 0;
}
