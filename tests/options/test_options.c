/* test_options: engine/options (request options with Ollama's names and defaults, Modelfile
 * PARAMETER text, JSON layers, stop lists, the sampling defaults) on its own: defaults,
 * ranges, one-line errors naming the key, unknown keys, layering and the JSON round trip. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "options.h"
#include "testutil.h"

static void test_defaults(void) {
    run_options o;
    options_default(&o);
    CHECK(fabsf(o.sp.temperature - 0.8f) < 1e-6f && o.sp.top_k == 40 && fabsf(o.sp.top_p - 0.9f) < 1e-6f);
    CHECK(o.sp.repeat_penalty == 1.0f && o.sp.repeat_last_n == 64 && o.sp.seed == 0);
    CHECK(o.num_predict == -1 && o.num_ctx == 0 && o.num_batch == 512 && o.num_gpu == -1 && o.num_keep == 4);
    char *json = options_to_json(&o);
    CHECKF(json && !strcmp(json, "{}"), "defaults serialize to {} (%s)", json ? json : "NULL");
    free(json);
}

static void test_text(void) {
    run_options o;
    options_default(&o);
    CHECK(options_set_text(&o, "temperature", "0.25") == 0 && fabsf(o.sp.temperature - 0.25f) < 1e-6f);
    CHECK(options_set_text(&o, "num_ctx", "4096") == 0 && o.num_ctx == 4096);
    CHECK(options_set_text(&o, "seed", "7") == 0 && o.sp.seed == 8);   /* Ollama's 7 is our 7 + 1 */
    CHECK(options_set_text(&o, "seed", "-1") == 0 && o.sp.seed == 0);  /* -1: random */
    CHECK(options_set_text(&o, "use_mmap", "true") == 0);              /* accepted, no effect */
    CHECK(options_set_text(&o, "stop", "<|end|>") == 0 && options_set_text(&o, "stop", "###") == 0 && o.n_stop == 2);
    CHECK(options_set_text(&o, "colour", "1") == -1 && strstr(anv_last_error(), "unknown parameter 'colour'"));
    CHECK(options_set_text(&o, "top_p", "1.5") == -1 && strstr(anv_last_error(), "top_p") && strstr(anv_last_error(), "out of range"));
    CHECK(options_set_text(&o, "num_ctx", "12x") == -1 && strstr(anv_last_error(), "is not a number"));
    CHECK(options_set_text(&o, "num_batch", "2.5") == -1 && strstr(anv_last_error(), "is not an integer"));
    CHECK(options_set_text(&o, "repeat_penalty", "0") == -1 && strstr(anv_last_error(), "must be >"));
    CHECK(options_set_text(&o, "temperature", "nan") == -1 && strstr(anv_last_error(), "finite"));
    CHECK(options_set_text(&o, "numa", "yes") == -1 && strstr(anv_last_error(), "true or false"));
    CHECK(!strchr(anv_last_error(), '\n'));
    for (int i = 0; i < OPTIONS_MAX_STOP - 2; i++) CHECK(options_set_text(&o, "stop", "s") == 0);
    CHECK(options_set_text(&o, "stop", "one too many") == -1 && strstr(anv_last_error(), "too many stop strings"));
    options_clear(&o);
    CHECK(o.n_stop == 0);
}

static void test_json_layers(void) {
    run_options o, copy;
    options_default(&o);
    char *unknown = NULL;
    CHECK(options_apply_json_text(&o, "{\"temperature\":0,\"stop\":[\"a\",\"b\"],\"mirostat\":2,\"zz\":1}", &unknown) == 0);
    CHECK(o.sp.temperature == 0.0f && o.n_stop == 2 && !strcmp(o.stop[1], "b"));
    CHECKF(unknown && !strcmp(unknown, "mirostat, zz"), "unknown keys collected (%s)", unknown ? unknown : "NULL");
    free(unknown);
    /* a later layer replaces the keys it names: stop as a string replaces the list */
    CHECK(options_apply_json_text(&o, "{\"stop\":\"c\",\"top_k\":5}", NULL) == 0);
    CHECK(o.n_stop == 1 && !strcmp(o.stop[0], "c") && o.sp.top_k == 5 && o.sp.temperature == 0.0f);
    CHECK(options_apply_json_text(&o, "{\"top_k\":\"5\"}", NULL) == -1 && strstr(anv_last_error(), "top_k: must be a number"));
    CHECK(options_apply_json_text(&o, "{\"stop\":[1]}", NULL) == -1 && strstr(anv_last_error(), "every element must be a string"));
    CHECK(options_apply_json_text(&o, "[1]", NULL) == -1 && strstr(anv_last_error(), "JSON object"));
    CHECK(o.n_stop == 1 && o.sp.top_k == 5); /* a failed layer leaves the stop list as it was */
    options_copy(&copy, &o);
    CHECK(copy.n_stop == 1 && copy.stop[0] != o.stop[0] && !strcmp(copy.stop[0], "c"));
    char *json = options_to_json(&o);
    run_options back;
    options_default(&back);
    CHECKF(json && options_apply_json_text(&back, json, NULL) == 0, "round trip of %s", json ? json : "NULL");
    CHECK(back.sp.top_k == 5 && back.sp.temperature == 0.0f && back.n_stop == 1 && !strcmp(back.stop[0], "c"));
    free(json);
    options_clear(&back);
    options_clear(&copy);
    options_clear(&o);
}

int main(void) {
    test_defaults();
    test_text();
    test_json_layers();
    return tu_finish();
}
