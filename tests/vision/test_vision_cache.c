/* test_vision_cache: engine/vision's per-digest image cache and prefix matching (issue 32).
 * The cache: an entry is found only under its own digest and projector (two images of the same
 * size never share one), a hit returns the stored rows and layout, the byte bound is obeyed with
 * the least recently used entry evicted first, an entry over the bound is not kept, a bound of 0
 * keeps nothing. vision_plan_prefix: a context holding the same image (digest and layout) at the
 * same position is reused whole; a different image of the same size, an image without a
 * digest, one the context's record does not hold, or one cut by the history's end is not. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "vision_cache.h"
#include "vision_plan.h"

static void digest(uint8_t out[32], int seed) {
    for (int i = 0; i < 32; i++) out[i] = (uint8_t)(seed * 31 + i);
}

static void test_cache(void) {
    const vision_layout lay = {.n_tokens = 4, .grid_w = 2, .grid_h = 2, .width = 16, .height = 16};
    enum { ROWS = 4 * 8 };   /* 4 rows of 8 floats: 128 bytes an entry */
    float a[ROWS], b[ROWS], c[ROWS], d[ROWS];
    for (int i = 0; i < ROWS; i++) { a[i] = (float)i; b[i] = -(float)i; c[i] = 0.5f * (float)i; d[i] = 2.0f + (float)i; }
    uint8_t ka[32], kb[32], kc[32], kd[32];
    digest(ka, 1);
    digest(kb, 2);
    digest(kc, 3);
    digest(kd, 4);
    vision_cache *vc = vision_cache_new(3 * ROWS * sizeof(float));   /* room for three entries */
    CHECK(vc != NULL);
    vision_layout got;
    CHECK(vision_cache_get(vc, ka, 7, &got) == NULL);
    CHECK(vision_cache_put(vc, ka, 7, &lay, a, ROWS) == 0);
    CHECK(vision_cache_put(vc, kb, 7, &lay, b, ROWS) == 0);
    const float *ra = vision_cache_get(vc, ka, 7, &got);
    CHECKF(ra && memcmp(ra, a, sizeof a) == 0 && memcmp(&got, &lay, sizeof lay) == 0, "a hit returns a's rows and layout");
    const float *rb = vision_cache_get(vc, kb, 7, &got);
    CHECKF(rb && memcmp(rb, b, sizeof b) == 0, "the second image of the same size has its own rows");
    CHECKF(vision_cache_get(vc, ka, 8, &got) == NULL, "another projector misses");
    /* recency now: b, a; c fills the bound; d evicts the least recently used (a) */
    CHECK(vision_cache_put(vc, kc, 7, &lay, c, ROWS) == 0);
    CHECK(vision_cache_get(vc, kb, 7, &got) != NULL);   /* recency: b, c, a */
    CHECK(vision_cache_put(vc, kd, 7, &lay, d, ROWS) == 0);
    vision_cache_stats st;
    vision_cache_get_stats(vc, &st);
    CHECKF(st.entries == 3 && st.bytes <= st.max_bytes && st.evictions == 1, "the bound holds (%d entries, %zu of %zu bytes)",
           st.entries, st.bytes, st.max_bytes);
    CHECKF(vision_cache_get(vc, ka, 7, &got) == NULL, "the least recently used entry went first");
    CHECKF(vision_cache_get(vc, kb, 7, &got) && vision_cache_get(vc, kc, 7, &got) && vision_cache_get(vc, kd, 7, &got),
           "the recently used entries stay");
    float big[4 * ROWS] = {0};
    CHECK(vision_cache_put(vc, ka, 7, &lay, big, 4 * ROWS) == 0);
    vision_cache_get_stats(vc, &st);
    CHECKF(vision_cache_get(vc, ka, 7, &got) == NULL && st.entries == 3, "an entry over the bound is not kept");
    vision_cache_free(vc);
    vc = vision_cache_new(0);
    CHECK(vision_cache_put(vc, ka, 7, &lay, a, ROWS) == 0);
    CHECKF(vision_cache_get(vc, ka, 7, &got) == NULL, "a bound of 0 keeps nothing");
    vision_cache_free(vc);
}

/* tokens: 1 2 [image: 3 rows] 5 6 */
static void test_prefix(void) {
    const int32_t E_ = MODEL_TOKEN_EMBD;
    int32_t toks[] = {1, 2, E_, E_, E_, 5, 6};
    vision_span sp = {.pos = 2, .lay = {.n_tokens = 3, .grid_w = 3, .grid_h = 1, .width = 8, .height = 8}, .keyed = true};
    digest(sp.sha256, 1);
    const vision_plan p = {.tokens = toks, .n = 7, .spans = &sp, .n_spans = 1};
    int32_t hist[] = {1, 2, E_, E_, E_, 5, 9, 9};
    vision_span hs = sp;
    vision_held held = {.spans = &hs, .n = 1, .cap = 1};
    CHECKF(vision_plan_prefix(&p, hist, 8, &held) == 6, "the same image at the same place: reused with the text after it");
    digest(hs.sha256, 2);
    CHECKF(vision_plan_prefix(&p, hist, 8, &held) == 2, "another image of the same size: stops at its first row");
    hs = sp;
    hs.lay.grid_w = 1;
    hs.lay.grid_h = 3;
    CHECKF(vision_plan_prefix(&p, hist, 8, &held) == 2, "the same digest with another layout: not reused");
    hs = sp;
    held.n = 0;
    CHECKF(vision_plan_prefix(&p, hist, 8, &held) == 2, "an image the record does not hold: not reused");
    CHECKF(vision_plan_prefix(&p, hist, 8, NULL) == 2, "no record: not reused");
    held.n = 1;
    vision_span unkeyed = sp;
    unkeyed.keyed = false;
    const vision_plan pu = {.tokens = toks, .n = 7, .spans = &unkeyed, .n_spans = 1};
    CHECKF(vision_plan_prefix(&pu, hist, 8, &held) == 2, "an image without a digest: never reused");
    CHECKF(vision_plan_prefix(&p, hist, 4, &held) == 2, "an image cut by the history's end: not split");
    int32_t hist2[] = {1, 3};
    CHECKF(vision_plan_prefix(&p, hist2, 2, &held) == 1, "text differs: the common text");
    vision_span spans[2] = {{.pos = 0, .lay = sp.lay}, {.pos = 5, .lay = sp.lay}};
    vision_held h2 = {.spans = spans, .n = 2, .cap = 2};
    vision_held_truncate(&h2, 7);
    CHECKF(h2.n == 1 && h2.spans[0].pos == 0, "truncating the record drops the image past the end");
}

int main(void) {
    test_cache();
    test_prefix();
    return tu_finish();
}
