/* test_modelfile: Modelfile parsing (every directive, """ blocks, quoting, comments, case,
 * errors with their line numbers), rendering back (round trip), and store_create: layers
 * and their order, params merged over the FROM model's, inheritance from a store model,
 * a blob digest as FROM, and re-quantization. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "gguf.h"
#include "gguf_write.h"
#include "model_create.h"
#include "quant.h"
#include "store.h"
#include "testutil.h"

static char tmp_root[256];

static bool json_equal(const char *a, const char *b) {
    if (!a || !b) return a == b;
    cJSON *x = cJSON_Parse(a), *y = cJSON_Parse(b);
    bool eq = x && y && cJSON_Compare(x, y, true);
    cJSON_Delete(x);
    cJSON_Delete(y);
    return eq;
}

static bool str_eq(const char *a, const char *b) { return a && b ? !strcmp(a, b) : a == b; }

static void test_parse_all(void) {
    const char *text =
        "# a comment\n"
        "\n"
        "from ./model.gguf\n"
        "PARAMETER temperature 0.5\n"
        "parameter num_predict 12\n"
        "PARAMETER stop \"<end>\"\n"
        "PARAMETER stop User:\n"
        "PARAMETER seed 42\n"
        "PARAMETER Top_K 7\n"
        "PARAMETER temperature 0.25\n"
        "  PARAMETER use_mmap false\n"
        "TEMPLATE \"\"\"{{ if .System }}{{ .System }}\n"
        "{{ end }}{{ .Prompt }}\"\"\"\n"
        "SYSTEM \"You are \\\"terse\\\".\"\n"
        "LICENSE \"\"\"MIT\"\"\"\n"
        "License Apache 2.0   \n"
        "MESSAGE user Is it hot?\n"
        "message ASSISTANT \"\"\"No.\n"
        "Not at all.\"\"\"   # trailing comment\n"
        "REQUIRES 0.6.0\r\n";
    create_spec c;
    int rc = modelfile_parse(text, "/models", &c);
    CHECKF(rc == 0, "%s", anv_last_error());
    if (rc != 0) return;
    CHECK(str_eq(c.from, "/models/./model.gguf"));
    CHECKF(json_equal(c.params_json, "{\"temperature\":0.25,\"num_predict\":12,\"stop\":[\"<end>\",\"User:\"],\"seed\":42,\"top_k\":7,\"use_mmap\":false}"),
           "%s", c.params_json);
    CHECK(str_eq(c.template_text, "{{ if .System }}{{ .System }}\n{{ end }}{{ .Prompt }}"));
    CHECK(str_eq(c.system, "You are \"terse\"."));
    CHECK(str_eq(c.license, "MIT\n\nApache 2.0"));
    CHECKF(json_equal(c.messages_json, "[{\"role\":\"user\",\"content\":\"Is it hot?\"},{\"role\":\"assistant\",\"content\":\"No.\\nNot at all.\"}]"),
           "%s", c.messages_json);
    CHECK(c.quantize == NULL);
    create_spec_clear(&c);

    /* FROM forms: a store name, a digest, an absolute path, a path relative to the cwd */
    CHECK(modelfile_parse("FROM gemma3:270m\n", NULL, &c) == 0 && str_eq(c.from, "gemma3:270m") && !c.params_json && !c.system);
    create_spec_clear(&c);
    CHECK(modelfile_parse("FROM user/m\n", NULL, &c) == 0 && str_eq(c.from, "user/m"));
    create_spec_clear(&c);
    const char *dg = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    CHECK(modelfile_parse("FROM sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", NULL, &c) == 0 && str_eq(c.from, dg));
    create_spec_clear(&c);
    CHECK(modelfile_parse("FROM sha256-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", NULL, &c) == 0 && str_eq(c.from, dg));
    create_spec_clear(&c);
    CHECK(modelfile_parse("FROM \"/a b/m.gguf\"", NULL, &c) == 0 && str_eq(c.from, "/a b/m.gguf"));
    create_spec_clear(&c);
    char cwd[1024], want[1200];
    if (!getcwd(cwd, sizeof cwd)) cwd[0] = 0;
    snprintf(want, sizeof want, "%s/sub/m.gguf", cwd);
    CHECK(modelfile_parse("FROM sub/m.gguf\n", NULL, &c) == 0 && str_eq(c.from, want));
    create_spec_clear(&c);
    /* single-line forms of every text directive; an empty SYSTEM */
    CHECK(modelfile_parse("FROM m\nTEMPLATE {{ .Prompt }}\nSYSTEM \"\"\n", NULL, &c) == 0 &&
          str_eq(c.template_text, "{{ .Prompt }}") && str_eq(c.system, ""));
    create_spec_clear(&c);
    CHECK(modelfile_parse("FROM m\nSYSTEM \"\"\"\"\"\"\nTEMPLATE \"\"\"a\"\"\"\nTEMPLATE b\n", NULL, &c) == 0 && str_eq(c.system, "") && str_eq(c.template_text, "b"));
    create_spec_clear(&c);
}

static void expect_error(const char *text, const char *want1, const char *want2) {
    create_spec c;
    anv_set_error("-");
    int rc = modelfile_parse(text, NULL, &c);
    const char *err = anv_last_error();
    CHECKF(rc == -1, "accepted: %s", text);
    CHECKF(strstr(err, want1) && (!want2 || strstr(err, want2)) && !strchr(err, '\n'), "error '%s' for %s", err, text);
    if (rc == 0) create_spec_clear(&c);
}

static void test_parse_errors(void) {
    expect_error("FROM m\n\nFOO bar\n", "Modelfile line 3: unknown command 'FOO'", NULL);
    expect_error("FROM m\nPARAMETER temperature hot\n", "Modelfile line 2:", "'hot' is not a number");
    expect_error("FROM m\nPARAMETER bogus 1\n", "Modelfile line 2:", "unknown parameter 'bogus'");
    expect_error("FROM m\nPARAMETER num_predict 1.5\n", "Modelfile line 2:", "not an integer");
    expect_error("FROM m\nPARAMETER use_mmap maybe\n", "line 2", "true or false");
    expect_error("FROM m\nPARAMETER\n", "line 2", "PARAMETER needs a name");
    expect_error("FROM m\nPARAMETER seed\n", "line 2", "needs a value");
    expect_error("FROM m\nSYSTEM \"\"\"never\nclosed\n", "Modelfile line 2:", "never closed");
    expect_error("FROM m\n# c\nSYSTEM \"open\n", "Modelfile line 3:", "not closed");
    expect_error("FROM m\nSYSTEM \"\"\"a\"\"\" junk\n", "Modelfile line 2:", "after the closing quote");
    expect_error("FROM m\nTEMPLATE \"\"\"a\nb\"\"\" junk\n", "Modelfile line 3:", "after the closing quote");
    expect_error("FROM m\nMESSAGE robot hi\n", "Modelfile line 2:", "not one of system, user, assistant");
    expect_error("FROM m\nMESSAGE\n", "Modelfile line 2:", "MESSAGE role");
    expect_error("FROM m\nADAPTER ./lora.gguf\n", "Modelfile line 2:", "not supported");
    expect_error("PARAMETER seed 1\n", "no FROM", NULL);
    expect_error("", "no FROM", NULL);
    expect_error("FROM a\nFROM b\n", "Modelfile line 2:", "second FROM");
    expect_error("FROM\n", "Modelfile line 1:", "FROM needs");
    expect_error("FROM bad name!\n", "Modelfile line 1:", "neither a file nor a model name");
    expect_error("FROM sha256:1234\n", "Modelfile line 1:", "not a valid sha256");
    char many[2048] = "FROM m\n";
    for (int i = 0; i < 17; i++) strcat(many, "PARAMETER stop x\n");
    expect_error(many, "Modelfile line 18:", "too many stop strings");
}

static void test_render_roundtrip(void) {
    store_entry e;
    memset(&e, 0, sizeof e);
    e.name = "user/m:v1";
    e.manifest_path = "/x/manifest";
    e.model_path = "/store/blobs/sha256-abc";
    e.template_text = "{{ .System }}\n{{ .Prompt }}";
    e.system = "Be brief. Say \"hi\".";
    e.license = "line one\nline two";
    e.params_json = "{\"stop\":[\"<end>\",\"a \\\"q\\\" \\\\ b\",\"multi\\nline\"],\"temperature\":0.7,\"num_predict\":5,\"use_mmap\":true}";
    e.messages_json = "[{\"role\":\"user\",\"content\":\"one \\\"two\\\"\"},{\"role\":\"assistant\",\"content\":\"three\\nfour\"}]";
    char *mf = modelfile_render(&e);
    CHECK(mf && strstr(mf, "FROM /store/blobs/sha256-abc\n") && strstr(mf, "# FROM user/m:v1"));
    CHECK(mf && strstr(mf, "PARAMETER temperature 0.7\n") && strstr(mf, "PARAMETER stop \"<end>\"\n"));
    create_spec c;
    int rc = mf ? modelfile_parse(mf, NULL, &c) : -1;
    CHECKF(rc == 0, "%s\n%s", anv_last_error(), mf ? mf : "");
    if (rc == 0) {
        CHECK(str_eq(c.from, e.model_path));
        CHECK(str_eq(c.template_text, e.template_text));
        CHECK(str_eq(c.system, e.system));
        CHECK(str_eq(c.license, e.license));
        CHECKF(json_equal(c.params_json, e.params_json), "%s", c.params_json);
        CHECKF(json_equal(c.messages_json, e.messages_json), "%s", c.messages_json);
        create_spec_clear(&c);
    }
    free(mf);
    /* a plain GGUF path: FROM the path, nothing else */
    store_entry p;
    memset(&p, 0, sizeof p);
    p.name = "/m/x.gguf";
    p.model_path = "/m/x.gguf";
    mf = modelfile_render(&p);
    CHECK(mf && strstr(mf, "\nFROM /m/x.gguf\n") && !strstr(mf, "TEMPLATE") && !strstr(mf, "PARAMETER"));
    free(mf);
}

/* ---- store_create ---- */

static char *path_of(const char *rel) {
    static char buf[8][1024];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 1024, "%s/%s", tmp_root, rel);
    return p;
}

static void make_gguf(const char *path) {
    static float data[2][256];
    for (int i = 0; i < 256; i++) data[0][i] = data[1][i] = (float)(i % 17) * 0.1f - 0.8f;
    gguf_writer *w = gguf_writer_new(path);
    gguf_writer_set_str(w, "general.architecture", "llama");
    gguf_writer_set_u32(w, "general.file_type", 0);
    int64_t ne[2] = {256, 1};
    gguf_writer_add_tensor(w, "blk.0.ffn_down.weight", QT_F32, 2, ne, data[0]);
    gguf_writer_add_tensor(w, "blk.0.attn_norm.weight", QT_F32, 1, ne, data[1]);
    if (gguf_writer_finish(w) != 0) { fprintf(stderr, "%s\n", anv_last_error()); exit(1); }
}

static char statuses[4096];
static void collect(const char *status, void *user) {
    (void)user;
    strncat(statuses, status, sizeof statuses - strlen(statuses) - 2);
    strcat(statuses, "\n");
}

/* The media types of a model's manifest layers, in order, joined by ','. */
static void layer_types(const store_entry *e, char *out, size_t cap) {
    FILE *f = fopen(e->manifest_path, "rb");
    char buf[8192] = {0};
    if (f) { if (fread(buf, 1, sizeof buf - 1, f)) {} fclose(f); }
    cJSON *m = cJSON_Parse(buf);
    out[0] = 0;
    const cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItem(m, "layers")) {
        const char *mt = cJSON_GetObjectItem(l, "mediaType")->valuestring;
        const char *dot = strrchr(mt, '.');
        strncat(out, dot ? dot + 1 : mt, cap - strlen(out) - 2);
        strcat(out, ",");
    }
    cJSON_Delete(m);
}

static void test_create(void) {
    make_gguf(path_of("base.gguf"));
    store *s = store_open_at(path_of("anvil"), NULL);
    char mf[1024], types[256];
    snprintf(mf, sizeof mf,
             "FROM base.gguf\nPARAMETER temperature 0\nPARAMETER stop END\nPARAMETER num_predict 3\n"
             "SYSTEM be brief\nTEMPLATE \"\"\"{{ .Prompt }}\"\"\"\nLICENSE MIT\nMESSAGE user hi\n");
    create_spec c;
    CHECK(modelfile_parse(mf, tmp_root, &c) == 0 && str_eq(c.from, path_of("base.gguf")));
    statuses[0] = 0;
    int rc = store_create(s, "first", &c, collect, NULL);
    CHECKF(rc == 0, "%s", anv_last_error());
    CHECK(strstr(statuses, "writing manifest\nsuccess\n") && strstr(statuses, "creating new layer sha256:"));
    create_spec_clear(&c);
    store_entry e;
    CHECK(store_lookup(s, "first", &e) == 0);
    layer_types(&e, types, sizeof types);
    CHECKF(!strcmp(types, "model,template,system,license,params,messages,"), "%s", types);
    CHECK(str_eq(e.system, "be brief") && str_eq(e.template_text, "{{ .Prompt }}") && str_eq(e.license, "MIT"));
    CHECK(json_equal(e.params_json, "{\"temperature\":0,\"stop\":[\"END\"],\"num_predict\":3}"));
    CHECK(json_equal(e.messages_json, "[{\"role\":\"user\",\"content\":\"hi\"}]"));
    char model_digest[80];
    snprintf(model_digest, sizeof model_digest, "%s", e.model_digest);
    store_entry_clear(&e);

    /* a second FROM: a vision projector file becomes a projector layer (Ollama's layout), kept by
     * a model made FROM this one, rendered back as a second FROM; a non-projector is refused */
    {
        gguf_writer *w = gguf_writer_new(path_of("proj.gguf"));
        gguf_writer_set_str(w, "general.architecture", "clip");
        CHECK(gguf_writer_finish(w) == 0);
        snprintf(mf, sizeof mf, "FROM base.gguf\nFROM proj.gguf\n");
        CHECK(modelfile_parse(mf, tmp_root, &c) == 0 && str_eq(c.projector, path_of("proj.gguf")));
        CHECKF(store_create(s, "vis", &c, NULL, NULL) == 0, "%s", anv_last_error());
        create_spec_clear(&c);
        CHECK(store_lookup(s, "vis", &e) == 0 && e.projector_path && e.projector_digest);
        layer_types(&e, types, sizeof types);
        CHECKF(!strcmp(types, "model,projector,"), "%s", types);
        char *r = modelfile_render(&e);
        CHECK(r && strstr(r, "\nFROM ") && strstr(r, e.projector_path));
        free(r);
        store_entry_clear(&e);
        CHECK(modelfile_parse("FROM vis\nSYSTEM s\n", NULL, &c) == 0 && store_create(s, "vis2", &c, NULL, NULL) == 0);
        create_spec_clear(&c);
        CHECK(store_lookup(s, "vis2", &e) == 0 && e.projector_path);
        store_entry_clear(&e);
        snprintf(mf, sizeof mf, "FROM base.gguf\nFROM base.gguf\n");
        CHECK(modelfile_parse(mf, tmp_root, &c) == -1 && strstr(anv_last_error(), "line 2") && strstr(anv_last_error(), "projector"));
        create_spec_clear(&c);
        snprintf(mf, sizeof mf, "FROM base.gguf\nFROM proj.gguf\nFROM proj.gguf\n");
        CHECK(modelfile_parse(mf, tmp_root, &c) == -1 && strstr(anv_last_error(), "line 3") && strstr(anv_last_error(), "third FROM"));
        create_spec_clear(&c);
        CHECK(store_remove(s, "vis") == 0 && store_remove(s, "vis2") == 0);
    }

    /* FROM a store model: its layers are reused, params merged key by key, text replaced */
    CHECK(modelfile_parse("FROM first\nPARAMETER temperature 0.9\nPARAMETER seed 7\nSYSTEM other\n", NULL, &c) == 0);
    statuses[0] = 0;
    rc = store_create(s, "user/second:v2", &c, collect, NULL);
    CHECKF(rc == 0, "%s", anv_last_error());
    CHECK(strstr(statuses, "using existing layer"));
    create_spec_clear(&c);
    CHECK(store_lookup(s, "user/second:v2", &e) == 0);
    CHECK(!strcmp(e.model_digest, model_digest) && str_eq(e.system, "other") && str_eq(e.template_text, "{{ .Prompt }}"));
    CHECKF(json_equal(e.params_json, "{\"temperature\":0.9,\"stop\":[\"END\"],\"num_predict\":3,\"seed\":7}"), "%s", e.params_json);
    CHECK(json_equal(e.messages_json, "[{\"role\":\"user\",\"content\":\"hi\"}]"));
    store_entry_clear(&e);

    /* an empty SYSTEM removes the inherited one; stop replaces the inherited stops */
    CHECK(modelfile_parse("FROM user/second:v2\nSYSTEM \"\"\nPARAMETER stop A\nPARAMETER stop B\n", NULL, &c) == 0);
    CHECK(store_create(s, "third", &c, NULL, NULL) == 0);
    create_spec_clear(&c);
    CHECK(store_lookup(s, "third", &e) == 0 && !e.system);
    CHECKF(json_equal(e.params_json, "{\"temperature\":0.9,\"stop\":[\"A\",\"B\"],\"num_predict\":3,\"seed\":7}"), "%s", e.params_json);
    layer_types(&e, types, sizeof types);
    CHECKF(!strcmp(types, "model,template,license,params,messages,"), "%s", types);
    store_entry_clear(&e);

    /* FROM a blob digest */
    create_spec d = {0};
    d.from = strdup(model_digest);
    CHECK(store_create(s, "fromblob", &d, NULL, NULL) == 0);
    CHECK(store_lookup(s, "fromblob", &e) == 0 && !strcmp(e.model_digest, model_digest) && !e.params_json);
    store_entry_clear(&e);
    free(d.from);
    d.from = strdup("sha256:2222222222222222222222222222222222222222222222222222222222222222");
    CHECK(store_create(s, "x", &d, NULL, NULL) == -1 && strstr(anv_last_error(), "2222222222"));
    free(d.from);
    /* bad input */
    d.from = strdup("nothere");
    CHECK(store_create(s, "x", &d, NULL, NULL) == -1 && strstr(anv_last_error(), "not found"));
    CHECK(store_create(s, "../x", &d, NULL, NULL) == -1 && strstr(anv_last_error(), "invalid model name"));
    free(d.from);
    d.from = strdup(path_of("not-a-gguf"));
    FILE *f = fopen(d.from, "w");
    if (f) { fputs("hello", f); fclose(f); }
    CHECK(store_create(s, "x", &d, NULL, NULL) == -1 && strstr(anv_last_error(), "not-a-gguf"));
    free(d.from);
    d.from = strdup("first");
    d.params_json = strdup("{\"temperature\":\"hot\"}");
    CHECK(store_create(s, "x", &d, NULL, NULL) == -1 && strstr(anv_last_error(), "temperature"));
    free(d.params_json);
    d.params_json = NULL;
    d.messages_json = strdup("{\"role\":\"user\"}");
    CHECK(store_create(s, "x", &d, NULL, NULL) == -1 && strstr(anv_last_error(), "messages"));
    free(d.messages_json);
    d.messages_json = NULL;
    d.quantize = strdup("q9_Z");
    CHECK(store_create(s, "x", &d, NULL, NULL) == -1 && strstr(anv_last_error(), "q9_Z"));
    CHECK(store_lookup(s, "x", &e) == -1);

    /* re-quantized: a new model layer of the requested file type */
    free(d.quantize);
    d.quantize = strdup("q8_0");
    statuses[0] = 0;
    rc = store_create(s, "quant", &d, collect, NULL);
    CHECKF(rc == 0, "%s", anv_last_error());
    CHECK(strstr(statuses, "quantizing ALL_F32 model to Q8_0") || strstr(statuses, "quantizing F32 model to Q8_0"));
    CHECK(store_lookup(s, "quant", &e) == 0 && strcmp(e.model_digest, model_digest) != 0);
    gguf_file *g = e.model_path ? gguf_open(e.model_path) : NULL;
    uint32_t ft = 0;
    CHECK(g && gguf_get_u32(g, "general.file_type", &ft) && ft == 7);
    gguf_close(g);
    CHECK(str_eq(e.system, "be brief"));  /* the rest is inherited from FROM */
    store_entry_clear(&e);
    create_spec_clear(&d);
    store_close(s);
}

int main(void) {
    anv_log_enabled = 0;
    snprintf(tmp_root, sizeof tmp_root, "/tmp/anvil-test-modelfile-XXXXXX");
    if (!mkdtemp(tmp_root)) { perror("mkdtemp"); return 1; }
    test_parse_all();
    test_parse_errors();
    test_render_roundtrip();
    test_create();
    tu_tmpdir_done(tmp_root);
    return tu_finish();
}
