/* test_cli_images: tools/cli/cli_images.c against Ollama's CLI rules (cmd/interactive.go):
 * which substrings its regular expression takes as paths (drive letters, "./", "/", "\",
 * spaces, escapes, extension case, word boundary, its leftmost-match quirk), and extraction:
 * an existing image is read and taken out of the text (quoted or not, escaped or not), a
 * missing one stays, a file that is not an image is a one-line error naming it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_images.h"
#include "error.h"
#include "testutil.h"

static void check_names(const char *input, int want_n, const char *const *want) {
    int n;
    char **names = cli_image_names(input, &n);
    bool ok = n == want_n;
    for (int i = 0; ok && i < n; i++) ok = !strcmp(names[i], want[i]);
    CHECKF(ok, "names in '%s': %d (got %d: '%s' ...)", input, want_n, n, n ? names[0] : "");
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f) { fwrite(data, 1, n, f); fclose(f); }
}

int main(void) {
    check_names("describe ./photo.jpg", 1, (const char *const[]){"./photo.jpg"});
    check_names("what is in /tmp/a.PNG?", 1, (const char *const[]){"/tmp/a.PNG"});
    check_names("C:\\Users\\me\\cat.webp please", 1, (const char *const[]){"C:\\Users\\me\\cat.webp"});
    check_names("compare ./a.jpeg and ./b.png", 2, (const char *const[]){"./a.jpeg", "./b.png"});
    check_names("/home/me/my photo.jpg is nice", 1, (const char *const[]){"/home/me/my photo.jpg"});
    check_names("/home/me/my\\ photo\\(1\\).png", 1, (const char *const[]){"/home/me/my\\ photo\\(1\\).png"});
    check_names("'/tmp/q.jpg'", 1, (const char *const[]){"/tmp/q.jpg"});     /* the quote is a word boundary */
    check_names("./notes.jpgx", 0, NULL);                                      /* no word boundary after it */
    check_names("./a.gif ./b.txt", 0, NULL);                                   /* not one of Ollama's extensions */
    check_names("photo.jpg", 0, NULL);                                         /* no leading ./ or / */
    check_names("./notes.jpgx ./b.txt photo.jpg", 1,                           /* spaces belong to a run: one match */
                (const char *const[]){"./notes.jpgx ./b.txt photo.jpg"});
    check_names("either/or and ./x.png", 1, (const char *const[]){"/or and ./x.png"});   /* Ollama's leftmost match */
    CHECK(cli_line_names_image("/tmp/cat.png what is it", "/tmp/cat.png"));
    CHECK(!cli_line_names_image("/set verbose", "/set"));

    char dir[] = "/tmp/anvil-cli-images-XXXXXX";
    if (!mkdtemp(dir)) { CHECK(0); return tu_finish(); }
    char png_path[128], spaced[128], text_path[128], missing[128], input[1024];
    snprintf(png_path, sizeof png_path, "%s/cat.png", dir);
    snprintf(spaced, sizeof spaced, "%s/my cat (1).png", dir);
    snprintf(text_path, sizeof text_path, "%s/notes.png", dir);
    snprintf(missing, sizeof missing, "%s/none.png", dir);
    static const unsigned char png_head[] = "\x89PNG\r\n\x1a\n rest of a file";
    write_file(png_path, png_head, sizeof png_head - 1);
    write_file(spaced, png_head, sizeof png_head - 1);
    write_file(text_path, "just text", 9);

    cli_images im;
    snprintf(input, sizeof input, "describe %s please", png_path);
    char *rest = cli_images_extract(input, &im);
    CHECKF(rest && !strcmp(rest, "describe  please") && im.n == 1 && !strcmp(im.files[0].path, png_path) &&
           im.files[0].size == sizeof png_head - 1, "one image taken out: '%s'", rest ? rest : anv_last_error());
    free(rest);
    cli_images_free(&im);

    snprintf(input, sizeof input, "'%s' what", png_path);   /* quoted: the quotes go too */
    rest = cli_images_extract(input, &im);
    CHECKF(rest && !strcmp(rest, "what") && im.n == 1, "quoted path taken out: '%s'", rest ? rest : "");
    free(rest);
    cli_images_free(&im);

    snprintf(input, sizeof input, "%s/my\\ cat\\ \\(1\\).png", dir);   /* escaped spaces and parentheses */
    rest = cli_images_extract(input, &im);
    CHECKF(rest && !strcmp(rest, "") && im.n == 1 && !strcmp(im.files[0].path, spaced), "escaped path read: %s",
           rest ? (im.n ? im.files[0].path : "none") : anv_last_error());
    free(rest);
    cli_images_free(&im);

    snprintf(input, sizeof input, "is %s there", missing);   /* missing: stays in the text */
    rest = cli_images_extract(input, &im);
    CHECKF(rest && !strcmp(rest, input) && im.n == 0, "missing file stays: '%s'", rest ? rest : "");
    free(rest);
    cli_images_free(&im);

    snprintf(input, sizeof input, "look at %s", text_path);   /* not an image: one line naming it */
    rest = cli_images_extract(input, &im);
    CHECKF(!rest && strstr(anv_last_error(), text_path) && !strchr(anv_last_error(), '\n'),
           "not an image: '%s'", anv_last_error());
    free(rest);

    remove(png_path);
    remove(spaced);
    remove(text_path);
    rmdir(dir);
    return tu_finish();
}
