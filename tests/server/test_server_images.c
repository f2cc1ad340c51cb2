/* test_server_images: tools/server/api_images.c's pieces that need no HTTP request: base64 as
 * Go's decoder reads it (padding optional here), image URLs as Ollama's /v1 accepts them,
 * Ollama's marker placement (server/prompt.go imageTaggedMessages: "[img-N]" replaces each
 * "[img]" in turn, else goes before the text), and decoding every image of a request under
 * the server's limits (the first bad one named). The routes themselves: tests/server/images_api.py. */
#include <stdlib.h>
#include <string.h>

#include "api_images.h"
#include "error.h"
#include "testutil.h"

/* A 2x1 RGB PNG, red then blue (made by hand with zlib; see tests/server/images_api.py tiny_png). */
static const char PNG_B64[] =
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAIAAAB7QOjdAAAADUlEQVR4nGP4zwAE/wEHAAH/4iOeWQAAAABJRU5ErkJggg==";

static void check_b64(const char *in, const char *want, size_t want_n) {
    uint8_t *out = NULL;
    size_t n = 0;
    int rc = api_image_base64(in, &out, &n);
    if (!want) {
        CHECKF(rc == -1, "base64 '%s' refused (rc %d)", in, rc);
    } else {
        CHECKF(rc == 0 && n == want_n && !memcmp(out, want, want_n), "base64 '%s' -> %zu bytes (rc %d, %zu)", in, want_n, rc, n);
    }
    free(out);
}

static void check_tag(const char *text, int first, int count, const char *want) {
    char *t = api_image_tag_text(text, first, count);
    CHECKF(t && !strcmp(t, want), "tag '%s' first %d count %d -> '%s' (got '%s')", text, first, count, want, t ? t : "(null)");
    free(t);
}

int main(void) {
    check_b64("aGVsbG8=", "hello", 5);
    check_b64("aGVsbG8", "hello", 5);          /* padding optional */
    check_b64("aGVs\r\nbG8=", "hello", 5);     /* line breaks skipped, as Go's decoder does */
    check_b64("aGk=", "hi", 2);
    check_b64("", "", 0);
    check_b64("aGVsbG8=x", NULL, 0);          /* data after padding */
    check_b64("aGV$bG8=", NULL, 0);           /* not in the alphabet */
    check_b64("a", NULL, 0);                  /* 6 bits: no whole byte */
    check_b64("aGl=", NULL, 0);               /* non-zero bits after the last byte */
    check_b64("aGVsbG8===", NULL, 0);

    const char *why = NULL;
    const char *p = api_image_url_payload("data:image/png;base64,QUJD", &why);
    CHECK(p && !strcmp(p, "QUJD"));
    p = api_image_url_payload("data:image/jpg;base64,QUJD", &why);
    CHECK(p && !strcmp(p, "QUJD"));
    p = api_image_url_payload("data:;base64,QUJD", &why);
    CHECK(p && !strcmp(p, "QUJD"));
    why = NULL;
    CHECK(!api_image_url_payload("https://example.com/a.png", &why) && why && strstr(why, "URLs are not supported"));
    why = NULL;
    CHECK(!api_image_url_payload("http://example.com/a.png", &why) && why);
    why = NULL;
    CHECK(!api_image_url_payload("data:image/bmp;base64,QUJD", &why) && why && strstr(why, "data URI"));
    why = NULL;
    CHECK(!api_image_url_payload("QUJD", &why) && why);

    check_tag("what is this?", 0, 1, "[img-0]what is this?");
    check_tag("compare", 2, 2, "[img-2][img-3]compare");
    check_tag("a [img] b [img] c", 0, 2, "a [img-0] b [img-1] c");
    check_tag("a [img] b", 4, 2, "[img-5]a [img-4] b");   /* one placeholder: the second image goes in front */
    check_tag("", 0, 1, "[img-0]");
    check_tag("no images", 0, 0, "no images");

    /* "[img-N]" to one marker, in order of appearance (engine/vision's vision_eval_prompt) */
    int order[4], n_order = -1;
    char *m = api_images_to_marker("[img-1]a [img-0] b [img-x] [img-]", "<M>", 2, order, &n_order);
    CHECKF(m && !strcmp(m, "<M>a <M> b [img-x] [img-]") && n_order == 2 && order[0] == 1 && order[1] == 0,
           "markers in order: '%s'", m ? m : anv_last_error());
    free(m);
    CHECK(!api_images_to_marker("[img-2]", "<M>", 2, order, &n_order));           /* names no image */
    CHECK(!api_images_to_marker("[img-0][img-0]", "<M>", 2, order, &n_order));    /* twice */
    CHECK(!api_images_to_marker("[img-0] only", "<M>", 2, order, &n_order));       /* an image without one */
    CHECKF(strstr(anv_last_error(), "2 image(s) but 1 marker(s)") != NULL, "%s", anv_last_error());

    /* decoding every image: good ones decoded, the first bad one named by its index */
    api_images im = {0};
    uint8_t *png;
    size_t png_n;
    CHECK(api_image_base64(PNG_B64, &png, &png_n) == 0);
    im.cap = 4;
    im.src = calloc(4, sizeof *im.src);
    im.src[0].data = png;
    im.src[0].size = png_n;
    im.n = 1;
    image_limits lim = image_limits_default();
    CHECK(api_images_decode_all(&im, &lim) == -1);
    CHECK(im.decoded[0].width == 2 && im.decoded[0].height == 1);
    static const uint8_t want_px[6] = {255, 0, 0, 0, 0, 255};
    CHECK(im.decoded[0].rgb && !memcmp(im.decoded[0].rgb, want_px, 6));
    api_images_free(&im);

    im.cap = 4;
    im.src = calloc(4, sizeof *im.src);
    CHECK(api_image_base64(PNG_B64, &im.src[0].data, &im.src[0].size) == 0);
    CHECK(api_image_base64("aGVsbG8=", &im.src[1].data, &im.src[1].size) == 0);   /* "hello": no image */
    im.n = 2;
    CHECK(api_images_decode_all(&im, &lim) == 1);
    CHECKF(strstr(anv_last_error(), "image: unknown format") != NULL, "bad image named: %s", anv_last_error());
    api_images_free(&im);

    im.cap = 4;
    im.src = calloc(4, sizeof *im.src);
    CHECK(api_image_base64(PNG_B64, &im.src[0].data, &im.src[0].size) == 0);
    im.n = 1;
    lim.max_pixels = 1;   /* the server's limits apply */
    CHECK(api_images_decode_all(&im, &lim) == 0);
    CHECKF(strstr(anv_last_error(), "over the limit") != NULL, "limit named: %s", anv_last_error());
    api_images_free(&im);
    return tu_finish();
}
