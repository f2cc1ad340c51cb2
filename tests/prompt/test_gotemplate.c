/* test_gotemplate: engine/prompt/gotemplate*.c against Go's own text/template. The goldens in
 * tests/data/gotemplate/render.json come from tests/prompt/gotemplate/make_golden.go (real Go,
 * Ollama's data shapes): every template (Ollama library-style templates for gemma3,
 * llama3.2, qwen2.5, qwen3, mistral, phi3, legacy per-turn ones, and small templates for
 * each language feature) x every variable set (conversations in .Messages mode, turns in
 * per-turn mode, the per-turn last-turn cut). The output must be byte-identical, and
 * where Go fails (parse or execution) Anvil must fail too. Then what Go has no golden for:
 * error messages with positions, the nesting and size limits, a 1 MB template, hostile
 * templates (runaway loops, random token soup), and constructs Anvil refuses on purpose. */
#include "error.h"
#include "gotemplate.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static const char *jstr(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static bool jbool(const cJSON *o, const char *key) { return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key)); }

static void show_diff(const char *name, int idx, const char *got, const char *want) {
    fprintf(stderr, "case %d (%s):\n  got:  [%s]\n  want: [%s]\n", idx, name, got ? got : "(NULL)", want);
    if (!got) fprintf(stderr, "  error: %s\n", anv_last_error());
}

static void test_goldens(void) {
    char *text = tu_read_file("data/gotemplate/render.json", NULL);
    CHECKF(text != NULL, "data/gotemplate/render.json missing (run from tests/)");
    if (!text) return;
    cJSON *root = cJSON_Parse(text);
    free(text);
    CHECK(root != NULL);
    const cJSON *templates = cJSON_GetObjectItemCaseSensitive(root, "templates");
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(root, "cases");
    int n_ok = 0, n_err = 0, n_bad = 0, idx = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cases) {
        const char *name = jstr(c, "template");
        const char *src = jstr(templates, name);
        const cJSON *vj = cJSON_GetObjectItemCaseSensitive(c, "vars");
        bool want_error = cJSON_GetObjectItemCaseSensitive(c, "error") != NULL;
        const char *want = jstr(c, "output");
        char want_bytes[4096];
        const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(c, "output_bytes");
        if (bytes) { /* output that is not valid UTF-8, byte by byte */
            int nb = cJSON_GetArraySize(bytes);
            for (int i = 0; i < nb && i < (int)sizeof(want_bytes) - 1; i++)
                want_bytes[i] = (char)cJSON_GetArrayItem(bytes, i)->valueint;
            want_bytes[nb < (int)sizeof(want_bytes) - 1 ? nb : (int)sizeof(want_bytes) - 1] = 0;
            want = want_bytes;
        }

        const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(vj, "messages");
        int n_msgs = cJSON_GetArraySize(msgs);
        chat_message *m = calloc((size_t)n_msgs + 1, sizeof(*m));
        for (int i = 0; i < n_msgs; i++) {
            const cJSON *mi = cJSON_GetArrayItem(msgs, i);
            m[i] = (chat_message){.role = jstr(mi, "role"), .content = jstr(mi, "content")};
        }
        bool msgs_mode = strcmp(jstr(vj, "mode"), "messages") == 0;
        gotmpl_vars v = {.system = jstr(vj, "system"), .prompt = jstr(vj, "prompt"), .response = jstr(vj, "response"),
                         .messages = msgs_mode ? m : NULL, .n_messages = n_msgs,
                         .think = jbool(vj, "think"), .is_think_set = jbool(vj, "is_think_set")};
        gotmpl *t = gotmpl_parse(src);
        char *got = NULL;
        if (t) got = jbool(c, "last_turn") ? gotmpl_render_last_turn(t, &v) : gotmpl_render(t, &v);
        if (want_error) {
            if (got) { show_diff(name, idx, got, "(an error, as Go gives)"); n_bad++; }
            else n_err++;
        } else if (!got || strcmp(got, want) != 0) {
            show_diff(name, idx, got, want);
            n_bad++;
        } else {
            n_ok++;
        }
        free(got);
        gotmpl_free(t);
        free(m);
        idx++;
    }
    fprintf(stderr, "render goldens: %d identical outputs, %d errors as in Go, %d mismatches\n", n_ok, n_err, n_bad);
    CHECK(n_bad == 0);
    CHECK(n_ok > 900 && n_err > 200);
    cJSON_Delete(root);
}

/* The error names the problem and where it is. */
static void check_parse_error(const char *src, const char *want_sub, const char *want_pos) {
    gotmpl *t = gotmpl_parse(src);
    CHECKF(t == NULL, "parsed: %s", src);
    gotmpl_free(t);
    const char *e = anv_last_error();
    CHECKF(strstr(e, want_sub) != NULL, "error for %s: %s (want %s)", src, e, want_sub);
    if (want_pos) CHECKF(strstr(e, want_pos) != NULL, "error for %s: %s (want %s)", src, e, want_pos);
}

static char *render_msgs(const char *src, const chat_message *m, int n) {
    gotmpl *t = gotmpl_parse(src);
    if (!t) return NULL;
    static const chat_message none[1] = {{.role = "", .content = ""}};
    gotmpl_vars v = {.system = "sys", .messages = n ? m : none, .n_messages = n};
    char *out = gotmpl_render(t, &v);
    gotmpl_free(t);
    return out;
}

static void check_render_error(const char *src, const char *want_sub) {
    static const chat_message m[] = {{.role = "user", .content = "hi"}, {.role = "assistant", .content = "yo"}};
    char *out = render_msgs(src, m, 2);
    CHECKF(out == NULL, "rendered %s as [%s]", src, out ? out : "");
    free(out);
    CHECKF(strstr(anv_last_error(), want_sub) != NULL, "error for %s: %s (want %s)", src, anv_last_error(), want_sub);
}

static void test_errors(void) {
    check_parse_error("Hello {{ foo .System }}", "function \"foo\" not defined", "offset 9");
    check_parse_error("line1\nline2 {{ .System ", "unclosed action", "line 2");
    check_parse_error("{{ if .System }}x", "has no {{end}}", "offset 0");
    check_parse_error("ab{{ end }}", "unexpected {{end}}", "offset 2");
    check_parse_error("{{ $x }}", "undefined variable \"$x\"", "offset 3");
    check_parse_error("{{ range .Messages }}{{ end }}{{ break }}", "outside {{range}}", NULL);
    /* Go accepts these; Anvil refuses them rather than guessing */
    check_parse_error("{{ printf \"%s\" .System }}", "function \"printf\" is not supported", "offset 3");
    check_parse_error("{{ 1.5 }}", "floating-point", NULL);
    check_parse_error("{{ 'a' }}", "character constants", NULL);
    check_parse_error("{{ define \"x\" }}{{ end }}", "{{define}} is not supported", NULL);
    check_parse_error("{{ template \"x\" }}", "{{template}} is not supported", NULL);
    check_parse_error("{{ block \"x\" . }}{{ end }}", "{{block}} is not supported", NULL);
    check_parse_error("{{ 99999999999999999999 }}", "out of range", NULL);
    check_render_error("{{ index .Messages 0 }}", "cannot print a value of type *api.Message");
    check_render_error("{{ .Messages }}", "cannot print");
    check_render_error("{{ json .Messages }}", "not supported");
    check_render_error("{{ range .System }}{{ end }}", "range can't iterate");
    check_render_error("{{ .System.Foo }}", "can't evaluate field Foo in type string");
    check_render_error("{{ range $i, $m := 3 }}{{ end }}", "more than one variable");
    CHECK(gotmpl_parse(NULL) == NULL);
    CHECK(gotmpl_render(NULL, NULL) == NULL);
}

static void test_uses_messages(void) {
    static const struct { const char *src; bool msgs; } cases[] = {
        {"{{ range .Messages }}{{ end }}", true},  {"{{ if $.Messages }}{{ end }}", true},
        {"{{ .messages }}", true},                 {"{{ .Document }}", true},
        {"{{ .System }}{{ .Prompt }}", false},     {"{{ (index .X 0).Messages }}", false}, /* a chain: Ollama skips it */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        gotmpl *t = gotmpl_parse(cases[i].src);
        CHECKF(t && gotmpl_uses_messages(t) == cases[i].msgs, "%s", cases[i].src);
        gotmpl_free(t);
    }
}

static void test_nesting_limit(void) {
    char buf[4096];
    for (int depth = 100; depth <= 101; depth++) {
        size_t k = 0;
        for (int i = 0; i < depth; i++) k += (size_t)snprintf(buf + k, sizeof(buf) - k, "{{if 1}}");
        k += (size_t)snprintf(buf + k, sizeof(buf) - k, "x");
        for (int i = 0; i < depth; i++) k += (size_t)snprintf(buf + k, sizeof(buf) - k, "{{end}}");
        gotmpl *t = gotmpl_parse(buf);
        if (depth == 100) {
            gotmpl_vars v = {.system = ""};
            char *out = t ? gotmpl_render(t, &v) : NULL;
            CHECKF(out && strcmp(out, "x") == 0, "depth 100: %s", out ? out : anv_last_error());
            free(out);
        } else {
            CHECK(t == NULL && strstr(anv_last_error(), "nesting deeper than 100") != NULL);
        }
        gotmpl_free(t);
    }
    /* parentheses count too */
    size_t k = 0;
    k += (size_t)snprintf(buf + k, sizeof(buf) - k, "{{ ");
    for (int i = 0; i < 150; i++) k += (size_t)snprintf(buf + k, sizeof(buf) - k, "(not ");
    k += (size_t)snprintf(buf + k, sizeof(buf) - k, "1");
    for (int i = 0; i < 150; i++) k += (size_t)snprintf(buf + k, sizeof(buf) - k, ")");
    snprintf(buf + k, sizeof(buf) - k, " }}");
    gotmpl *t = gotmpl_parse(buf);
    CHECK(t == NULL && strstr(anv_last_error(), "nesting deeper") != NULL);
    gotmpl_free(t);
    /* a long else-if chain is nesting as well: 50 works */
    k = 0;
    k += (size_t)snprintf(buf + k, sizeof(buf) - k, "{{ if eq .System \"a\" }}A");
    for (int i = 0; i < 50; i++) k += (size_t)snprintf(buf + k, sizeof(buf) - k, "{{ else if eq .System \"%d\" }}%d", i, i);
    snprintf(buf + k, sizeof(buf) - k, "{{ else }}none{{ end }}");
    t = gotmpl_parse(buf);
    gotmpl_vars v = {.system = "42"};
    char *out = t ? gotmpl_render(t, &v) : NULL;
    CHECKF(out && strcmp(out, "42") == 0, "else-if chain: %s", out ? out : anv_last_error());
    free(out);
    gotmpl_free(t);
}

/* A 1 MB template renders exactly; over the 8 MiB limit is refused. */
static void test_big_template(void) {
    const char *unit = "{{- if .System }}[{{ .System }}]{{ else }}-{{ end }} text {{/* c */}}\n";
    const char *unit_out = "[S] text \n";
    size_t ul = strlen(unit), n_units = (1u << 20) / ul + 1;
    char *src = malloc(n_units * ul + 1), *want = malloc(n_units * strlen(unit_out) + 16);
    size_t k = 0, w = 0;
    for (size_t i = 0; i < n_units; i++) {
        memcpy(src + k, unit, ul), k += ul;
        /* "{{-" trims the newline the previous unit ended with */
        const char *o = unit_out;
        size_t ol = strlen(o);
        if (i + 1 < n_units) ol--; /* its "\n" is trimmed by the next unit */
        memcpy(want + w, o, ol), w += ol;
    }
    src[k] = 0;
    memcpy(want + w, "S", 2); /* Ollama appends {{ .Response }}; response is "S" below */
    gotmpl *t = gotmpl_parse(src);
    CHECKF(t != NULL, "1 MB template: %s", anv_last_error());
    gotmpl_vars v = {.system = "S", .response = "S"};
    char *out = t ? gotmpl_render(t, &v) : NULL;
    CHECK(out && strcmp(out, want) == 0);
    free(out);
    gotmpl_free(t);
    free(want);
    char *huge = malloc((9u << 20) + 1);
    memset(huge, 'a', 9u << 20);
    huge[9u << 20] = 0;
    t = gotmpl_parse(huge);
    CHECK(t == NULL && strstr(anv_last_error(), "limit") != NULL);
    gotmpl_free(t);
    free(huge);
    free(src);
}

/* Runaway templates stop with an error instead of hanging or exhausting memory. */
static void test_hostile(void) {
    chat_message m[40];
    for (int i = 0; i < 40; i++) m[i] = (chat_message){.role = "user", .content = "0123"};
    char src[2048];
    size_t k = 0;
    for (int i = 0; i < 8; i++) k += (size_t)snprintf(src + k, sizeof(src) - k, "{{ range $.Messages }}");
    k += (size_t)snprintf(src + k, sizeof(src) - k, "{{ .Content }}");
    for (int i = 0; i < 8; i++) k += (size_t)snprintf(src + k, sizeof(src) - k, "{{ end }}");
    char *out = render_msgs(src, m, 40);
    CHECK(out == NULL && (strstr(anv_last_error(), "steps") || strstr(anv_last_error(), "output larger")));
    free(out);
    k = 0;
    for (int i = 0; i < 8; i++) k += (size_t)snprintf(src + k, sizeof(src) - k, "{{ range $.Messages }}");
    for (int i = 0; i < 8; i++) k += (size_t)snprintf(src + k, sizeof(src) - k, "{{ end }}");
    out = render_msgs(src, m, 40); /* no output at all, still bounded */
    CHECK(out == NULL && strstr(anv_last_error(), "steps") != NULL);
    free(out);
    out = render_msgs("{{ $s := \"0123456789abcdef\" }}{{ range 18 }}{{ $s = print $s $s }}{{ end }}"
                      "{{ range 1000 }}{{ $t := print $s }}{{ end }}", m, 1); /* 4 MiB strings, kept */
    CHECK(out == NULL && strstr(anv_last_error(), "exceed") != NULL);
    free(out);
    out = render_msgs("{{ range 100000000000 }}{{ end }}", m, 1);
    CHECK(out == NULL && strstr(anv_last_error(), "steps") != NULL);
    free(out);

    /* token soup: whatever it is, parse + render must return cleanly (ASan watches) */
    static const char *const pieces[] = {
        "{{", "}}", "{{-", " -}}", " ", "if", "else", "end", "range", "with", "$x", ":=", "=", "$", ".", ".Messages",
        ".Content", ".Role", "$.System", "(", ")", "|", "eq", "len", "slice", "index", "and", "or", "not", "print",
        "json", "\"s\"", "`r`", "1", "-1", "0x", ",", "$i", "{{/*", "*/}}", "break", "continue", "nil", "true", "\n",
        "x", "{{ range $i, $m := .Messages }}", "{{ end }}", "\"\\", "'", "ü", "\xff"};
    uint64_t rng = 12345;
    int n_parsed = 0, n_rendered = 0;
    for (int iter = 0; iter < 3000; iter++) {
        char buf[1024];
        size_t b = 0;
        int n = 1 + (int)(tu_rand_u64(&rng) % 40);
        for (int i = 0; i < n; i++) {
            const char *p = pieces[tu_rand_u64(&rng) % (sizeof(pieces) / sizeof(pieces[0]))];
            size_t l = strlen(p);
            if (b + l + 1 >= sizeof(buf)) break;
            memcpy(buf + b, p, l), b += l;
        }
        buf[b] = 0;
        gotmpl *t = gotmpl_parse(buf);
        if (!t) {
            CHECKF(strncmp(anv_last_error(), "gotemplate: ", 12) == 0, "%s", anv_last_error());
            continue;
        }
        n_parsed++;
        gotmpl_vars v = {.system = "s", .messages = m, .n_messages = 3};
        char *o = gotmpl_render(t, &v);
        if (o) n_rendered++;
        free(o);
        o = gotmpl_render_last_turn(t, &(gotmpl_vars){.prompt = "p"});
        free(o);
        gotmpl_free(t);
    }
    fprintf(stderr, "token soup: %d of 3000 parsed, %d rendered\n", n_parsed, n_rendered);
    CHECK(n_parsed > 50 && n_rendered > 20);
}

/* Whitespace trimming and the last-turn cut, spelled out. */
static void test_basics(void) {
    gotmpl *t = gotmpl_parse("{{ if .System }}<s>{{ .System }}</s>\n{{ end }}<u>{{ .Prompt }}</u>\n<a>{{ .Response }}</a>\n");
    CHECK(t && !gotmpl_uses_messages(t));
    gotmpl_vars v = {.system = "S", .prompt = "P", .response = "R"};
    char *full = gotmpl_render(t, &v), *last = gotmpl_render_last_turn(t, &v);
    CHECK(full && strcmp(full, "<s>S</s>\n<u>P</u>\n<a>R</a>\n") == 0);
    CHECK(last && strcmp(last, "<s>S</s>\n<u>P</u>\n<a>R") == 0);
    free(full);
    free(last);
    gotmpl_free(t);
    t = gotmpl_parse("A \n\t{{- \"B\" -}} \r\n C{{- /* x */ -}} D");
    full = t ? gotmpl_render(t, &(gotmpl_vars){0}) : NULL;
    CHECKF(full && strcmp(full, "ABCD") == 0, "[%s]", full ? full : anv_last_error());
    free(full);
    gotmpl_free(t);
}

int main(void) {
    anv_log_enabled = 0;
    test_basics();
    test_goldens();
    test_errors();
    test_uses_messages();
    test_nesting_limit();
    test_big_template();
    test_hostile();
    return tu_finish();
}
