/* cli_images: image files named in a prompt, found by Ollama's CLI rules (cmd/interactive.go
 * extractFileNames / normalizeFilePath / extractFileData / getImageData): a path that starts
 * with "/", "./" or "\" (a drive letter "C:" may come first), may hold spaces and escaped
 * characters ("\ ", "\(" ...), and ends in .jpg, .jpeg, .png or .webp (any case); a path that
 * does not exist stays in the text; one that exists is read (an image by its first bytes, at
 * most 100 MB) and taken out of the text (the caller says "Added image '<path>'" when it sends). */
#ifndef ANVIL_CLI_IMAGES_H
#define ANVIL_CLI_IMAGES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    struct cli_image_file { char *path; uint8_t *data; size_t size; } *files;
    int n;
} cli_images;

/* Every candidate path in input (before unescaping), as Ollama's regular expression finds
 * them; *n_out of them, malloc'd strings in a malloc'd array (NULL when none). */
char **cli_image_names(const char *input, int *n_out);
/* True when one of line's candidate paths starts with word (a REPL line "/tmp/cat.png what
 * is it" is a prompt, not an unknown command). */
bool cli_line_names_image(const char *line, const char *word);
/* Reads the images input names into out and returns the text without them (trimmed,
 * malloc'd); NULL + anv_last_error() (one line naming the file) when a named file exists but
 * cannot be used (not a JPEG/PNG/WebP/GIF, over 100 MB, unreadable). */
char *cli_images_extract(const char *input, cli_images *out);
void cli_images_free(cli_images *im);
/* A message's images as the chat keeps them (a read-only view of a cli_images). */
typedef struct {
    const struct cli_image_file *files;
    int n;
} cli_image_list;
#endif
