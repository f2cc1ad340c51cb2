/* cmd_bench: `anvil bench`, in the spirit of llama-bench: prompt processing (pp) and token
 * generation (tg) speed over lists of models, devices, -ngl values, thread counts, batch
 * sizes and KV cache types, as a Markdown table, CSV or JSON with llama-bench's field
 * names (plus Anvil's: device, model_bytes, kv_bytes, gbps, peak_gbps, pct_of_peak). For tg
 * it also gives the effective memory bandwidth (bytes read per token x tokens/s, see
 * engine/model/bench.h) and its share of the device's measured read bandwidth (the backend's
 * probe, backend_extras.membw: cpu/membw.c, engine/vulkan/vk_membw.c). The timing loops live in
 * engine/model/bench.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"
#include "device.h"
#include "device_extras.h"
#include "error.h"
#include "model_place.h"
#include "quant.h"
#include "quantize_model.h"

#define MAX_LIST 32
#define MAX_REPS 1000

typedef struct { int n; int v[MAX_LIST]; } int_list;
typedef struct { int n; const char *v[MAX_LIST]; } str_list;
typedef enum { OUT_MD, OUT_CSV, OUT_JSON, OUT_JSONL } out_format;

typedef struct {
    str_list models, devices;
    int_list n_prompt, n_gen, n_depth, n_threads, n_gpu_layers, n_batch, type_k, type_v;
    int reps;
    bool no_warmup, no_membw, progress, verbose;
    double peak_gbps;          /* --peak-gbps: given instead of measured (0 = measure) */
    int membw_mib;
    out_format out;
} bench_opts;

/* One result row: what llama-bench prints for a test, plus Anvil's bandwidth fields. */
typedef struct {
    const char *model_path, *devices_arg;
    char model_type[96], backends[32], device[32], gpu_info[200];
    uint64_t model_size, model_n_params, model_bytes;
    int n_batch, n_ubatch, n_threads, n_gpu_layers, n_prompt, n_gen, n_depth, reps;
    uint32_t type_k, type_v;
    char test_time[32];
    uint64_t samples_ns[MAX_REPS];
    double samples_ts[MAX_REPS];
    bench_stats ts, ns;
    double kv_bytes, gbps, peak_gbps, pct_of_peak; /* NAN = not applicable / unknown */
    char peak_source[96];
} bench_row;

static void bench_usage(void) {
    puts("usage: anvil bench MODEL [MODEL...] [options]   (or -m MODEL[,MODEL...])\n"
         "  Measures prompt processing (ppN) and token generation (tgN) in tokens/s like llama-bench.\n"
         "  Every option takes a comma-separated list; every combination is run.\n"
         "  -p, --n-prompt N         prompt tokens of a pp test (default 512; 0 = no pp test)\n"
         "  -n, --n-gen N            generated tokens of a tg test (default 128; 0 = no tg test)\n"
         "  -d, --n-depth N          tokens already in the KV cache before the test (default 0)\n"
         "  -r, --repetitions N      timed repetitions per test (default 5), after one warm-up\n"
         "  -t, --threads N          CPU threads (default: every online CPU)\n"
         "  -ngl, --n-gpu-layers N   last N layers on the GPU (default 99 = all; 0 = CPU only)\n"
         "  -b, --batch-size N       prompt tokens per call (default 2048; the engine runs 512 at a time)\n"
         "  -ctk, --cache-type-k T   KV cache type f16|f32|q8_0|q4_0 (default f16); -ctv must match\n"
         "  -dev, --device D         auto (placement as `anvil run`, honours ANVIL_VK_VISIBLE_DEVICES etc.),\n"
         "                           cpu, or a device id from `anvil devices` (vulkan0, ...); default auto\n"
         "  -o, --output md|csv|json|jsonl   output format (default md)\n"
         "  --no-warmup              skip the warm-up run\n"
         "  --peak-gbps X            the device's peak read bandwidth instead of measuring it\n"
         "  --membw-mib N            buffer of the bandwidth probe (default 256); --no-membw skips it\n"
         "  --progress, -v           progress / placement lines on stderr (and the Vulkan autotuner's choices)\n"
         "  --tune                   re-run the Vulkan kernel autotuning (ANVIL_VK_TUNE=1) and cache the new choices\n"
         "  tg rows give GB/s = (weights + mean KV bytes read per token) x tokens/s, and % of the peak.");
}

static void parse_ints(int_list *l, const char *flag, const char *s, long lo, long hi) {
    l->n = 0;
    char *dup = strdup(s), *save = NULL;
    for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (l->n == MAX_LIST) anv_die("%s: more than %d values", flag, MAX_LIST);
        l->v[l->n++] = cli_int(flag, tok, lo, hi);
    }
    free(dup);
    if (l->n == 0) anv_die("%s: no value in '%s'", flag, s);
}

/* Copies behind the string lists, freed when the command ends. */
static char *g_dups[2 * MAX_LIST];
static int g_n_dups;

/* Splits a comma list into l; the strings point into a copy kept in g_dups. */
static void parse_strs(str_list *l, const char *flag, const char *s) {
    if (g_n_dups == 2 * MAX_LIST) anv_die("%s: given too many times", flag);
    char *dup = g_dups[g_n_dups++] = strdup(s), *save = NULL;
    for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (l->n == MAX_LIST) anv_die("%s: more than %d values", flag, MAX_LIST);
        l->v[l->n++] = tok;
    }
    if (l->n == 0) anv_die("%s: no value in '%s'", flag, s);
}

static void parse_kv_types(int_list *l, const char *flag, const char *s) {
    l->n = 0;
    char *dup = strdup(s), *save = NULL;
    for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int t = qtype_from_name(tok);
        if (t != QT_F16 && t != QT_F32 && t != QT_Q8_0 && t != QT_Q4_0) anv_die("%s: '%s' is not one of f16, f32, q8_0, q4_0", flag, tok);
        if (l->n == MAX_LIST) anv_die("%s: more than %d values", flag, MAX_LIST);
        l->v[l->n++] = t;
    }
    free(dup);
    if (l->n == 0) anv_die("%s: no value in '%s'", flag, s);
}

static void parse_args(int argc, char **argv, bench_opts *o) {
    memset(o, 0, sizeof *o);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    o->n_prompt = (int_list){1, {512}};
    o->n_gen = (int_list){1, {128}};
    o->n_depth = (int_list){1, {0}};
    o->n_threads = (int_list){1, {ncpu > 0 ? (int)ncpu : 1}};
    o->n_gpu_layers = (int_list){1, {99}};
    o->n_batch = (int_list){1, {2048}};
    o->type_k = o->type_v = (int_list){1, {QT_F16}};
    o->reps = 5;
    o->membw_mib = 256;
    o->out = OUT_MD;
    bool ctv_given = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
#define IS(x, y) (!strcmp(a, x) || !strcmp(a, y))
        if (IS("-h", "--help")) { bench_usage(); exit(0); }
        else if (IS("-m", "--model")) parse_strs(&o->models, a, cli_value(argc, argv, &i));
        else if (IS("-p", "--n-prompt")) parse_ints(&o->n_prompt, a, cli_value(argc, argv, &i), 0, 1 << 20);
        else if (IS("-n", "--n-gen")) parse_ints(&o->n_gen, a, cli_value(argc, argv, &i), 0, 1 << 20);
        else if (IS("-d", "--n-depth")) parse_ints(&o->n_depth, a, cli_value(argc, argv, &i), 0, 1 << 20);
        else if (IS("-r", "--repetitions")) o->reps = cli_int(a, cli_value(argc, argv, &i), 1, MAX_REPS);
        else if (IS("-t", "--threads")) parse_ints(&o->n_threads, a, cli_value(argc, argv, &i), 1, 1024);
        else if (IS("-ngl", "--n-gpu-layers")) parse_ints(&o->n_gpu_layers, a, cli_value(argc, argv, &i), 0, 100000);
        else if (IS("-b", "--batch-size")) parse_ints(&o->n_batch, a, cli_value(argc, argv, &i), 1, 1 << 20);
        else if (IS("-ctk", "--cache-type-k")) parse_kv_types(&o->type_k, a, cli_value(argc, argv, &i));
        else if (IS("-ctv", "--cache-type-v")) {
            parse_kv_types(&o->type_v, a, cli_value(argc, argv, &i));
            ctv_given = true;
        }
        else if (IS("-dev", "--device")) parse_strs(&o->devices, a, cli_value(argc, argv, &i));
        else if (IS("-o", "--output")) {
            const char *v = cli_value(argc, argv, &i);
            if (!strcmp(v, "md")) o->out = OUT_MD;
            else if (!strcmp(v, "csv")) o->out = OUT_CSV;
            else if (!strcmp(v, "json")) o->out = OUT_JSON;
            else if (!strcmp(v, "jsonl")) o->out = OUT_JSONL;
            else anv_die("%s: '%s' is not one of md, csv, json, jsonl", a, v);
        } else if (!strcmp(a, "--no-warmup")) o->no_warmup = true;
        else if (!strcmp(a, "--no-membw")) o->no_membw = true;
        else if (!strcmp(a, "--peak-gbps")) {
            o->peak_gbps = cli_float(a, cli_value(argc, argv, &i));
            if (!(o->peak_gbps > 0)) anv_die("--peak-gbps: must be > 0");
        } else if (!strcmp(a, "--membw-mib")) o->membw_mib = cli_int(a, cli_value(argc, argv, &i), 1, 1 << 20);
        else if (!strcmp(a, "--progress")) o->progress = true;
        else if (!strcmp(a, "--tune")) setenv("ANVIL_VK_TUNE", "1", 1); /* read when the Vulkan backend opens */
        else if (IS("-v", "--verbose")) o->verbose = o->progress = true;
        else if (a[0] == '-') anv_die("bench: unknown option '%s' (see anvil bench --help)", a);
        else {
            if (o->models.n == MAX_LIST) anv_die("bench: more than %d models", MAX_LIST);
            o->models.v[o->models.n++] = a;
        }
#undef IS
    }
    if (o->models.n == 0) { bench_usage(); exit(2); }
    if (o->devices.n == 0) o->devices = (str_list){1, {"auto"}};
    if (!ctv_given) o->type_v = o->type_k;
    if (o->type_k.n != o->type_v.n) anv_die("-ctk and -ctv: the engine uses one KV cache type: give the same list to both (or -ctk alone)");
    for (int i = 0; i < o->type_k.n; i++)
        if (o->type_k.v[i] != o->type_v.v[i])
            anv_die("-ctk %s / -ctv %s: the engine uses one type for K and V", qtype_get((uint32_t)o->type_k.v[i])->name,
                    qtype_get((uint32_t)o->type_v.v[i])->name);
    bool any = false;
    for (int i = 0; i < o->n_prompt.n; i++) any |= o->n_prompt.v[i] > 0;
    for (int i = 0; i < o->n_gen.n; i++) any |= o->n_gen.v[i] > 0;
    if (!any) anv_die("bench: no test to run (-p 0 and -n 0)");
}

/* ------------------------------------------------------------------ loading */

/* The model's layer count from its metadata (to clamp -ngl 99 like llama.cpp does). */
static int model_layer_count(const char *path) {
    gguf_file *f = gguf_open(path);
    if (!f) anv_die("%s", anv_last_error());
    char *arch = gguf_get_str_dup(f, "general.architecture");
    char key[160];
    snprintf(key, sizeof key, "%s.block_count", arch ? arch : "?");
    uint32_t n = 0;
    bool ok = arch && gguf_get_u32(f, key, &n);
    free(arch);
    gguf_close(f);
    if (!ok) anv_die("%s: missing general.architecture or block_count", path);
    return (int)n;
}

/* Loads a model on `dev`: "auto" = model_load_placed (the CLI's placement), "cpu", or a
 * device id (vulkan0, ...) opened directly (a software device too: naming it is asking). */
static model *load_on(const char *path, const char *dev, int ngl, int n_threads, uint32_t kv_type, int n_ctx, bool quiet) {
    const int n_layer = model_layer_count(path);
    if (ngl > n_layer) ngl = n_layer;
    if (!strcmp(dev, "auto")) {
        model_place_opts po = {.n_threads = n_threads, .n_ctx = n_ctx, .kv_type = kv_type, .n_gpu_layers = ngl, .quiet = quiet};
        return model_load_placed(path, &po);
    }
    if (!strcmp(dev, "cpu") || !strcmp(dev, "none")) {
        return model_load_with(path, n_threads, NULL, 0);
    }
    device_list *dl = device_list_probe();
    if (!dl) { anv_set_error("out of memory"); return NULL; }
    model *m = NULL;
    int i = device_list_find(dl, dev);
    if (i < 0) anv_set_error("-dev %s: no such device (see anvil devices)", dev);
    else if (!dl->dev[i].supported) anv_set_error("-dev %s: %s", dev, dl->dev[i].unsupported_why);
    else {
        backend *gpu = dl->dev[i].backend == DEV_BACKEND_CPU ? NULL : device_open(dl, i, n_threads);
        if (gpu || dl->dev[i].backend == DEV_BACKEND_CPU) {
            m = model_load_with(path, n_threads, gpu, ngl);
            if (m && gpu) m->owns_gpu = true;
            else if (gpu) gpu->ops->destroy(gpu);
        }
    }
    device_list_free(dl);
    return m;
}

/* ------------------------------------------------------------------ peak bandwidth */

typedef struct { char key[48]; double gbps; char source[96]; } peak_entry;
static peak_entry g_peaks[MAX_LIST];
static int g_n_peaks;

/* The read bandwidth ceiling of the device the output head runs on (measured once each). */
static double device_peak(const bench_opts *o, model *m, char *source, size_t source_len) {
    if (o->peak_gbps > 0) {
        snprintf(source, source_len, "given (--peak-gbps)");
        return o->peak_gbps;
    }
    const char *key = m->gpu ? m->gpu->name : "cpu";
    for (int i = 0; i < g_n_peaks; i++)
        if (!strcmp(g_peaks[i].key, key)) {
            snprintf(source, source_len, "%s", g_peaks[i].source);
            return g_peaks[i].gbps;
        }
    double gbps = NAN;
    char src[96] = "unknown";
    size_t bytes = (size_t)o->membw_mib << 20;
    if (o->no_membw) {
        snprintf(src, sizeof src, "not measured (--no-membw)");
    } else {   /* the device holding the weights: the GPU when there is one */
        backend *be = m->gpu ? m->gpu : m->cpu;
        const backend_extras *x = device_extras(be);
        if (!x || !x->membw) {
            snprintf(src, sizeof src, "no probe for %s%s", be->name, x ? "" : " in this build");
        } else if (x->membw(be, bytes, &gbps, src, sizeof src) != 0) {
            gbps = NAN;
            anv_log("bench: %s", anv_last_error());
        }
    }
    if (isfinite(gbps)) anv_log("bench: %s read bandwidth %.2f GB/s (%s)", key, gbps, src);
    if (g_n_peaks < MAX_LIST) {
        peak_entry *e = &g_peaks[g_n_peaks++];
        snprintf(e->key, sizeof e->key, "%s", key);
        e->gbps = gbps;
        snprintf(e->source, sizeof e->source, "%s", src);
    }
    snprintf(source, source_len, "%s", src);
    return gbps;
}

/* ------------------------------------------------------------------ output */

static void cpu_model_name(char *out, size_t len) {
    snprintf(out, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10)) continue;
        const char *c = strchr(line, ':');
        if (!c) break;
        for (c++; *c == ' ' || *c == '\t'; c++) {}
        snprintf(out, len, "%s", c);
        out[strcspn(out, "\n")] = 0;
        break;
    }
    fclose(f);
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* "llama 500M Q4_0": architecture, size, file type (llama_model_desc's shape). */
static void describe_model(const model *m, char *out, size_t len) {
    uint64_t n = model_n_params(m);
    char size[24];
    if (n >= 1000000000ull) snprintf(size, sizeof size, "%.1fB", n / 1e9);
    else snprintf(size, sizeof size, "%.0fM", n / 1e6);
    uint32_t ft;
    const char *ftn = gguf_get_u32(m->gguf, "general.file_type", &ft) ? quant_ftype_name((int)ft) : NULL;
    snprintf(out, len, "%s %s %s", m->hp.arch_name, size, ftn ? ftn : "?");
}

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, "%.6f", v);
    else fputs("null", f);
}

static char g_cpu_info[160];

/* llama-bench's fields in its order (values that do not apply to Anvil get llama-bench's
 * defaults), then samples, then Anvil's own fields. */
static void print_json_row(FILE *f, const bench_row *r, bool pretty) {
    const char *nl = pretty ? "\n    " : " ";
    fprintf(f, pretty ? "  {\n    " : "{");
#define S(k, v) do { fprintf(f, "\"%s\": ", k); json_str(f, v); fprintf(f, ",%s", nl); } while (0)
#define I(k, v) fprintf(f, "\"%s\": %lld,%s", k, (long long)(v), nl)
#define B(k, v) fprintf(f, "\"%s\": %s,%s", k, (v) ? "true" : "false", nl)
#define F(k, v) do { fprintf(f, "\"%s\": ", k); json_num(f, v); fprintf(f, ",%s", nl); } while (0)
    S("build_commit", "anvil");
    I("build_number", 0);
    S("cpu_info", g_cpu_info);
    S("gpu_info", r->gpu_info);
    S("backends", r->backends);
    S("model_filename", r->model_path);
    S("model_type", r->model_type);
    I("model_size", r->model_size);
    I("model_n_params", r->model_n_params);
    I("n_batch", r->n_batch);
    I("n_ubatch", r->n_ubatch);
    I("n_threads", r->n_threads);
    S("cpu_mask", "0x0");
    B("cpu_strict", false);
    I("poll", 50);
    S("type_k", qtype_get(r->type_k)->name);
    S("type_v", qtype_get(r->type_v)->name);
    I("n_gpu_layers", r->n_gpu_layers);
    S("split_mode", "layer");
    I("main_gpu", 0);
    B("no_kv_offload", false);
    I("flash_attn", 1);  /* the engine's attention is always the fused (flash) kind */
    S("devices", r->devices_arg);
    S("tensor_split", "0.00");
    S("tensor_buft_overrides", "none");
    S("load_mode", "mmap");
    B("embeddings", false);
    I("n_prompt", r->n_prompt);
    I("n_gen", r->n_gen);
    I("n_depth", r->n_depth);
    S("test_time", r->test_time);
    I("avg_ns", llround(r->ns.mean));
    I("stddev_ns", llround(r->ns.stddev));
    F("avg_ts", r->ts.mean);
    F("stddev_ts", r->ts.stddev);
    fputs("\"samples_ns\": [", f);
    for (int i = 0; i < r->reps; i++) fprintf(f, "%s%llu", i ? ", " : " ", (unsigned long long)r->samples_ns[i]);
    fprintf(f, " ],%s\"samples_ts\": [", nl);
    for (int i = 0; i < r->reps; i++) { fputs(i ? ", " : " ", f); json_num(f, r->samples_ts[i]); }
    fprintf(f, " ],%s", nl);
    S("device", r->device);
    I("model_bytes", r->model_bytes);
    F("kv_bytes", r->kv_bytes);
    F("bytes_per_token", r->n_gen > 0 ? (double)r->model_bytes + r->kv_bytes : NAN);
    F("gbps", r->gbps);
    F("peak_gbps", r->peak_gbps);
    S("peak_source", r->peak_source);
    fprintf(f, "\"pct_of_peak\": ");
    json_num(f, r->pct_of_peak);
    fputs(pretty ? "\n  }" : "}\n", f);
#undef S
#undef I
#undef B
#undef F
}

static const char *CSV_FIELDS =
    "build_commit,cpu_info,gpu_info,backends,model_filename,model_type,model_size,model_n_params,n_batch,"
    "n_ubatch,n_threads,type_k,type_v,n_gpu_layers,devices,n_prompt,n_gen,n_depth,test_time,avg_ns,stddev_ns,"
    "avg_ts,stddev_ts,device,model_bytes,kv_bytes,gbps,peak_gbps,pct_of_peak";

static void csv_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) { if (*s == '"') fputc('"', f); fputc(*s, f); }
    fputs("\",", f);
}

static void csv_num(FILE *f, double v, const char *sep) {
    if (isfinite(v)) fprintf(f, "%.6f%s", v, sep);
    else fprintf(f, "%s", sep);
}

static void print_csv_row(FILE *f, const bench_row *r) {
    csv_str(f, "anvil"); csv_str(f, g_cpu_info); csv_str(f, r->gpu_info); csv_str(f, r->backends);
    csv_str(f, r->model_path); csv_str(f, r->model_type);
    fprintf(f, "%llu,%llu,%d,%d,%d,", (unsigned long long)r->model_size, (unsigned long long)r->model_n_params,
            r->n_batch, r->n_ubatch, r->n_threads);
    csv_str(f, qtype_get(r->type_k)->name); csv_str(f, qtype_get(r->type_v)->name);
    fprintf(f, "%d,", r->n_gpu_layers);
    csv_str(f, r->devices_arg);
    fprintf(f, "%d,%d,%d,", r->n_prompt, r->n_gen, r->n_depth);
    csv_str(f, r->test_time);
    fprintf(f, "%lld,%lld,", llround(r->ns.mean), llround(r->ns.stddev));
    csv_num(f, r->ts.mean, ","); csv_num(f, r->ts.stddev, ",");
    csv_str(f, r->device);
    fprintf(f, "%llu,", (unsigned long long)r->model_bytes);
    csv_num(f, r->kv_bytes, ","); csv_num(f, r->gbps, ","); csv_num(f, r->peak_gbps, ","); csv_num(f, r->pct_of_peak, "\n");
}

static void print_md_header(FILE *f) {
    fprintf(f, "| %-30s | %10s | %10s | %-8s | %-10s | %3s | %7s | %-5s | %13s | %20s | %8s | %6s |\n", "model", "size",
            "params", "backend", "device", "ngl", "threads", "kv", "test", "t/s", "GB/s", "% peak");
    fprintf(f, "| %.30s | %.9s: | %.9s: | %.8s | %.10s | %.2s: | %.6s: | %.5s | %.12s: | %.19s: | %.7s: | %.5s: |\n",
            "------------------------------", "----------", "----------", "--------", "----------", "---", "-------",
            "-----", "-------------", "--------------------", "--------", "------");
}

static void print_md_row(FILE *f, const bench_row *r) {
    char size[24], params[24], test[40], ts[48], gbps[16] = "", pct[16] = "";
    snprintf(size, sizeof size, "%.2f MiB", r->model_size / 1048576.0);
    if (r->model_n_params >= 1000000000ull) snprintf(params, sizeof params, "%.2f B", r->model_n_params / 1e9);
    else snprintf(params, sizeof params, "%.2f M", r->model_n_params / 1e6);
    if (r->n_prompt > 0) snprintf(test, sizeof test, "pp%d", r->n_prompt);
    else snprintf(test, sizeof test, "tg%d", r->n_gen);
    if (r->n_depth > 0) snprintf(test + strlen(test), sizeof test - strlen(test), " @ d%d", r->n_depth);
    snprintf(ts, sizeof ts, "%.2f ± %.2f", r->ts.mean, r->ts.stddev);
    if (isfinite(r->gbps)) snprintf(gbps, sizeof gbps, "%.2f", r->gbps);
    if (isfinite(r->pct_of_peak)) snprintf(pct, sizeof pct, "%.1f", r->pct_of_peak);
    /* "±" is 2 bytes in UTF-8: widen that column by one so the bars line up */
    fprintf(f, "| %-30.30s | %10s | %10s | %-8s | %-10s | %3d | %7d | %-5s | %13s | %21s | %8s | %6s |\n", r->model_type,
            size, params, r->backends, r->device, r->n_gpu_layers, r->n_threads, qtype_get(r->type_k)->name, test, ts,
            gbps, pct);
}

/* ------------------------------------------------------------------ running */

static int g_rows_printed;

static void emit(const bench_opts *o, const bench_row *r) {
    if (o->out == OUT_JSON) {
        if (g_rows_printed) fputs(",\n", stdout);
        print_json_row(stdout, r, true);
    } else if (o->out == OUT_JSONL) {
        print_json_row(stdout, r, false);
    } else if (o->out == OUT_CSV) {
        print_csv_row(stdout, r);
    } else {
        print_md_row(stdout, r);
    }
    g_rows_printed++;
    fflush(stdout);
}

/* Runs every test of one loaded model (one device / ngl / threads / kv type). */
static void run_tests(const bench_opts *o, model *m, const char *path, const char *dev_arg, int n_threads, uint32_t kv_type) {
    bench_weight_bytes wb;
    bench_weight_bytes_per_token(m, &wb);
    bench_row *r = calloc(1, sizeof *r);
    if (!r) anv_die("out of memory");
    r->model_path = path;
    r->devices_arg = dev_arg;
    describe_model(m, r->model_type, sizeof r->model_type);
    if (m->gpu) {
        snprintf(r->backends, sizeof r->backends, "%s", !strncmp(m->gpu->name, "vulkan", 6) ? "Vulkan" : !strncmp(m->gpu->name, "hip", 3) ? "HIP" : m->gpu->name);
        snprintf(r->device, sizeof r->device, "%s", m->gpu->name);
        snprintf(r->gpu_info, sizeof r->gpu_info, "%s", m->gpu->device_desc ? m->gpu->device_desc : m->gpu->name);
    } else {
        snprintf(r->backends, sizeof r->backends, "CPU");
        snprintf(r->device, sizeof r->device, "cpu");
    }
    r->model_size = bench_model_size(m);
    r->model_n_params = model_n_params(m);
    r->model_bytes = wb.total;
    r->n_threads = n_threads;
    r->n_gpu_layers = 0;  /* the layers that did go to the GPU (llama-bench: -ngl as given) */
    for (int il = 0; il < m->hp.n_layer; il++) r->n_gpu_layers += m->gpu && m->layers[il].be == m->gpu;
    r->type_k = r->type_v = kv_type;
    r->reps = o->reps;
    for (int ib = 0; ib < o->n_batch.n; ib++)
        for (int id = 0; id < o->n_depth.n; id++)
            for (int kind = 0; kind < 2; kind++) {
                const int_list *ns = kind == 0 ? &o->n_prompt : &o->n_gen;
                for (int in = 0; in < ns->n; in++) {
                    if (ns->v[in] == 0) continue;
                    bench_test t = {.n_prompt = kind == 0 ? ns->v[in] : 0, .n_gen = kind == 1 ? ns->v[in] : 0,
                                    .n_depth = o->n_depth.v[id], .n_batch = o->n_batch.v[ib], .reps = o->reps,
                                    .no_warmup = o->no_warmup, .seed = 42};
                    if (o->progress)
                        anv_log("bench: %s on %s, %d threads: %s%d%s", base_name(path), r->device, n_threads, kind ? "tg" : "pp",
                                ns->v[in], t.n_depth ? " (at depth)" : "");
                    model_ctx *c = model_ctx_new(m, bench_test_n_ctx(&t), kv_type);
                    if (!c) anv_die("%s", anv_last_error());
                    time_t now = time(NULL);
                    strftime(r->test_time, sizeof r->test_time, "%FT%TZ", gmtime(&now));
                    if (bench_run(c, &t, r->samples_ns) != 0) anv_die("%s", anv_last_error());
                    model_ctx_free(c);
                    r->n_prompt = t.n_prompt;
                    r->n_gen = t.n_gen;
                    r->n_depth = t.n_depth;
                    r->n_batch = t.n_batch;
                    r->n_ubatch = t.n_batch < 512 ? t.n_batch : 512;
                    double ns_d[MAX_REPS];
                    for (int i = 0; i < o->reps; i++) ns_d[i] = (double)r->samples_ns[i];
                    r->ns = bench_stats_of(ns_d, o->reps);
                    bench_samples_ts(r->samples_ns, o->reps, t.n_prompt + t.n_gen, r->samples_ts);
                    r->ts = bench_stats_of(r->samples_ts, o->reps);
                    r->kv_bytes = r->gbps = r->pct_of_peak = r->peak_gbps = NAN;
                    snprintf(r->peak_source, sizeof r->peak_source, "-");
                    if (t.n_gen > 0) {
                        r->kv_bytes = bench_kv_bytes_mean(&m->hp, kv_type, t.n_depth, t.n_gen);
                        r->gbps = ((double)wb.total + r->kv_bytes) * r->ts.mean / 1e9;
                        r->peak_gbps = device_peak(o, m, r->peak_source, sizeof r->peak_source);
                        if (isfinite(r->peak_gbps) && r->peak_gbps > 0) r->pct_of_peak = 100.0 * r->gbps / r->peak_gbps;
                    }
                    emit(o, r);
                }
            }
    free(r);
}

int cmd_bench(int argc, char **argv) {
    bench_opts o;
    parse_args(argc, argv, &o);
    cpu_model_name(g_cpu_info, sizeof g_cpu_info);
    if (!o.verbose) anv_log_enabled = 0;
    if (o.out == OUT_JSON) fputs("[\n", stdout);
    else if (o.out == OUT_CSV) printf("%s\n", CSV_FIELDS);
    else if (o.out == OUT_MD) print_md_header(stdout);
    for (int im = 0; im < o.models.n; im++)
        for (int idev = 0; idev < o.devices.n; idev++)
            for (int ingl = 0; ingl < o.n_gpu_layers.n; ingl++)
                for (int ikv = 0; ikv < o.type_k.n; ikv++)
                    for (int it = 0; it < o.n_threads.n; it++) {
                        const char *path = o.models.v[im], *dev = o.devices.v[idev];
                        int ngl = o.n_gpu_layers.v[ingl], nt = o.n_threads.v[it];
                        uint32_t kv = (uint32_t)o.type_k.v[ikv];
                        int max_ctx = 1;
                        for (int a = 0; a < o.n_prompt.n; a++)
                            for (int b = 0; b < o.n_gen.n; b++)
                                for (int d = 0; d < o.n_depth.n; d++) {
                                    int need = o.n_prompt.v[a] + o.n_gen.v[b] + o.n_depth.v[d];
                                    if (need > max_ctx) max_ctx = need;
                                }
                        model *m = load_on(path, dev, ngl, nt, kv, max_ctx, !o.verbose);
                        if (!m) {
                            anv_log_enabled = 1;
                            anv_die("%s", anv_last_error());
                        }
                        char desc[2200];
                        if (o.verbose && device_describe(m->cpu, desc, sizeof desc) > 0) anv_log("%s", desc);
                        run_tests(&o, m, path, dev, nt, kv);
                        if (o.verbose && m->gpu && device_describe(m->gpu, desc, sizeof desc) > 0) anv_log("%s", desc);
                        model_free(m);
                    }
    if (o.out == OUT_JSON) fputs("\n]\n", stdout);
    anv_log_enabled = 1;
    for (int i = 0; i < g_n_dups; i++) free(g_dups[i]);
    g_n_dups = 0;
    return 0;
}
