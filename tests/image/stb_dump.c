/* stb_dump: llama.cpp's image loader (stb_image, as tools/mtmd/mtmd-helper.cpp calls it: 3
 * channels from memory) on one file, for comparing engine/image's pixels with it. Built by
 * tests/image/image.cmake only when llama.cpp's source tree (with vendor/stb/stb_image.h) is
 * on this machine. Usage: stb_dump FILE OUT.rgb -> prints "W H", or the failure and exit 1. */
#include <stdio.h>
#include <stdlib.h>

#define STB_IMAGE_IMPLEMENTATION
#include "stb_image.h"

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    FILE *f = fopen(argv[1], "rb");
    if (!f) return 2;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) return 2;
    fclose(f);
    int w, h, c;
    unsigned char *px = stbi_load_from_memory(buf, (int)n, &w, &h, &c, 3);
    free(buf);
    if (!px) { fprintf(stderr, "stb: %s\n", stbi_failure_reason()); return 1; }
    FILE *o = fopen(argv[2], "wb");
    if (!o || fwrite(px, 3, (size_t)w * h, o) != (size_t)w * h) return 2;
    fclose(o);
    stbi_image_free(px);
    printf("%d %d\n", w, h);
    return 0;
}
