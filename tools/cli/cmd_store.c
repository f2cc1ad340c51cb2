/* cmd_store: the model-store subcommands, like Ollama's: `anvil list|ls`, `anvil rm NAME...`,
 * `anvil cp SRC DST`, `anvil create NAME [-f Modelfile] [-q TYPE]`, `anvil verify NAME...`. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "client.h"
#include "error.h"
#include "path.h"
#include "readfile.h"
#include "model_create.h"
#include "store.h"
#include "store_verify.h"

static store *open_store(void) {
    store *s = store_open();
    if (!s) anv_die("%s", anv_last_error());
    return s;
}

int cmd_list(int argc, char **argv) {
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        puts("usage: anvil list   (models of the anvil store and, read-only, of the Ollama store)");
        return 0;
    }
    if (argc > 1) anv_die("list: unexpected argument '%s'", argv[1]);
    if (client_store_remote()) return remote_list();
    store *s = open_store();
    store_entry *e = NULL;
    int n = 0;
    if (store_list(s, &e, &n) != 0) {
        fprintf(stderr, "anvil: %s\n", anv_last_error());
        store_close(s);
        return 1;
    }
    /* columns sized to their widest cell, three spaces apart, like Ollama's tabwriter */
    char (*size)[32] = calloc((size_t)n + 1, sizeof *size);
    char (*mod)[48] = calloc((size_t)n + 1, sizeof *mod);
    if (!size || !mod) anv_die("out of memory");
    int w_name = 4, w_id = 2, w_size = 4;
    for (int i = 0; i < n; i++) {
        cli_human_bytes(e[i].size, size[i], sizeof size[i]);
        cli_human_ago(e[i].modified, mod[i], sizeof mod[i]);
        int l = (int)strlen(e[i].name);
        if (l > w_name) w_name = l;
        if ((int)strlen(size[i]) > w_size) w_size = (int)strlen(size[i]);
    }
    w_id = 12;
    printf("%-*s   %-*s   %-*s   %s\n", w_name, "NAME", w_id, "ID", w_size, "SIZE", "MODIFIED");
    for (int i = 0; i < n; i++) {
        const char *hex = e[i].manifest_digest + 7;
        printf("%-*s   %-*.12s   %-*s   %s\n", w_name, e[i].name, w_id, hex, w_size, size[i], mod[i]);
    }
    free(size);
    free(mod);
    store_entries_free(e, n);
    store_close(s);
    return 0;
}

int cmd_rm(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        puts("usage: anvil rm MODEL [MODEL...]");
        return argc < 2 ? 2 : 0;
    }
    if (client_store_remote()) return remote_rm(argc - 1, argv + 1);
    store *s = open_store();
    int status = 0;
    for (int i = 1; i < argc; i++) {
        if (store_remove(s, argv[i]) != 0) {
            fprintf(stderr, "anvil: %s\n", anv_last_error());
            status = 1;
            continue;
        }
        printf("deleted '%s'\n", argv[i]);
    }
    store_close(s);
    return status;
}

int cmd_cp(int argc, char **argv) {
    if (argc != 3 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        puts("usage: anvil cp SOURCE DESTINATION");
        return argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) ? 0 : 2;
    }
    if (client_store_remote()) return remote_cp(argv[1], argv[2]);
    store *s = open_store();
    int rc = store_copy(s, argv[1], argv[2]);
    store_close(s);
    if (rc != 0) anv_die("%s", anv_last_error());
    printf("copied '%s' to '%s'\n", argv[1], argv[2]);
    return 0;
}

typedef struct {
    const char *name;
    int n, bad;
} verify_state;

static void print_verified(const store_verify_layer *l, void *user) {
    verify_state *v = user;
    v->n++;
    if (l->status == STORE_VERIFY_OK) {
        printf("ok       %s  %s\n", l->digest, l->media_type);
    } else {
        v->bad++;
        printf("CORRUPT  %s  %s\n", l->digest, l->media_type);
        fprintf(stderr, "anvil: %s: %s\n", v->name, l->message);
    }
    fflush(stdout);
}

/* Re-hashes every blob of each model's manifest (either root; the Ollama store is only
 * read). Exit 1 if any blob is missing or does not match its digest. */
int cmd_verify(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        puts("usage: anvil verify NAME...   (re-hash every blob of the models' manifests; exit 1 on a mismatch)");
        return argc >= 2 ? 0 : 2;
    }
    store *s = open_store();
    int failed = 0;
    for (int i = 1; i < argc; i++) {
        verify_state v = {argv[i], 0, 0};
        int rc = store_verify_model(s, argv[i], print_verified, &v);
        if (rc < 0) fprintf(stderr, "anvil: %s\n", anv_last_error());
        else if (rc == 0) printf("%s: %d blobs intact\n", argv[i], v.n);
        else printf("%s: %d of %d blobs corrupt or missing\n", argv[i], v.bad, v.n);
        failed += rc != 0;
    }
    store_close(s);
    return failed ? 1 : 0;
}

static void print_status(const char *status, void *user) {
    (void)user;
    fprintf(stderr, "%s\n", status);
}

int cmd_create(int argc, char **argv) {
    const char *name = NULL, *file = "Modelfile", *quantize = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            puts("usage: anvil create MODEL [-f Modelfile] [-q TYPE]\n"
                 "  -f, --file FILE       the Modelfile (default: ./Modelfile; - or a pipe: standard input / the pipe)\n"
                 "  -q, --quantize TYPE   re-quantize the model (q4_K_M, q4_K_S, q8_0, q4_0, q6_K, ...)");
            return 0;
        }
        if (!strcmp(a, "-f") || !strcmp(a, "--file")) file = cli_value(argc, argv, &i);
        else if (!strcmp(a, "-q") || !strcmp(a, "--quantize")) quantize = cli_value(argc, argv, &i);
        else if (a[0] == '-' && a[1]) anv_die("create: unknown option '%s'", a);
        else if (!name) name = a;
        else anv_die("create: unexpected argument '%s'", a);
    }
    if (!name) anv_die("create: give the new model's name (anvil create NAME -f Modelfile)");
    store_name parsed;
    if (store_name_parse(name, &parsed) != 0) anv_die("%s", anv_last_error());
    /* the user's own Modelfile may be a pipe, <(...) or "-" (stdin), as with Ollama */
    char *text = anv_read_user_file(file, 64u << 20, NULL);
    if (!text) anv_die("create: the Modelfile: %s", anv_last_error());
    /* relative FROM paths are relative to the Modelfile's directory; for standard input or a
     * pipe (/dev/fd/N, /proc/self/fd/N) to the current directory */
    struct stat st;
    const bool piped = !strcmp(file, "-") || stat(file, &st) != 0 || !S_ISREG(st.st_mode);
    char *dir = strdup(piped ? "." : file);
    const ptrdiff_t dir_len = piped ? -1 : path_dir_len(dir);
    if (dir_len >= 0) dir[dir_len] = 0;
    else strcpy(dir, ".");
    fprintf(stderr, "parsing modelfile\n");
    create_spec spec;
    int rc = modelfile_parse(text, dir, &spec);
    free(text);
    free(dir);
    if (rc != 0) anv_die("%s (%s)", anv_last_error(), file);
    if (quantize) spec.quantize = strdup(quantize);
    if (client_store_remote()) {   /* the server's store: FROM uploaded as a blob when a file */
        rc = remote_create(name, &spec);
        create_spec_clear(&spec);
        return rc;
    }
    store *s = open_store();
    rc = store_create(s, name, &spec, print_status, NULL);
    create_spec_clear(&spec);
    store_close(s);
    if (rc != 0) anv_die("%s", anv_last_error());
    return 0;
}
