/* api_images: the images a generation request carries, on every API: Ollama's base64
 * "images" (/api/generate, /api/chat messages), OpenAI's image_url data URIs (/v1 chat) and
 * input_image (/v1/responses), Anthropic's base64 image blocks (/v1/messages). Gathered while
 * the messages are read, each with a marker "[img-N]" (N counts the request's images from 0)
 * in the message text where the image goes, placed as Ollama places it; then either refused
 * for a text-only model (400, nothing decoded) or decoded once under the server's limits
 * (engine/image; a bad image is a 400 naming it). */
#ifndef ANVIL_API_IMAGES_H
#define ANVIL_API_IMAGES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api_json.h"
#include "image.h"

typedef struct api_images {
    struct api_image_bytes { uint8_t *data; size_t size; } *src;   /* encoded, malloc'd */
    int n, cap;
    anv_image *decoded;   /* n of them after api_images_decode, in marker order */
} api_images;

/* The marker of image i: "[img-i]" (Ollama's, server/prompt.go). */
#define API_IMAGE_MARKER_MAX 24
void api_image_marker(int i, char out[API_IMAGE_MARKER_MAX]);

/* Adds one image to c->images (field names it in errors) and returns its number, or -1 after
 * a 400: from base64 text (standard alphabet, padding optional, CR/LF ignored), or from an URL
 * as Ollama's /v1 accepts them (data:image/{jpeg,jpg,png,webp};base64,... or data:;base64,...;
 * http(s) URLs refused). Where c->images is NULL the route takes no images: a 400 saying so. */
int api_images_add_base64(api_req *c, const char *b64, const char *field);
int api_images_add_url(api_req *c, const char *url, const char *field);

/* Ollama's placement for a message (or /api/generate's prompt) with count images numbered
 * from first: each image's marker replaces the first "[img]" left in the text, or when there
 * is none goes before the text (markers concatenated, no separator). malloc'd; NULL + 500. */
char *api_images_tag(api_req *c, const char *text, int first, int count);

/* Before the request runs: a 400 when images came for a model without vision (nothing
 * decoded: "model 'x' does not support image input"); else each image decoded under lim (a
 * 400 "image N: ..." naming a bad one). True when the request may go on. */
bool api_images_ready(api_req *c, api_images *im, const char *model, bool model_has_vision, const image_limits *lim);

void api_images_free(api_images *im);

/* The pieces under the request-level calls above (tests/server/test_server_images.c):
 * standard base64 (CR/LF skipped, '=' padding optional, only at the end): 0, -1 invalid, -2 no
 * memory; the base64 part of an image URL, or NULL with *why (one line); Ollama's placement
 * (NULL: no memory); every image decoded into im->decoded: -1, or the index of the first bad
 * one (anv_last_error() says why). */
int api_image_base64(const char *b64, uint8_t **out, size_t *size);
const char *api_image_url_payload(const char *url, const char **why);
char *api_image_tag_text(const char *text, int first, int count);
int api_images_decode_all(api_images *im, const image_limits *lim);
/* For an evaluator that takes one marker string and the images in the order of appearance
 * (engine/vision's vision_eval_prompt): each "[img-N]" in text becomes marker and order[k] the
 * N of the k-th (order holds n_images). malloc'd; NULL + anv_last_error() when a marker names
 * no image, one appears twice, or an image has none. */
char *api_images_to_marker(const char *text, const char *marker, int n_images, int *order, int *n_order);
#endif
