/* test_store_race: a create racing a remove of a model that shares its blobs must never
 * lose data. Each round makes model A (a GGUF + SYSTEM layer), then at once creates B (FROM
 * A, or from the same GGUF file: the same model blob) and removes A. Whatever the order, a
 * create that answered success must leave B complete (every blob of its manifest present,
 * loadable), and at the end every manifest references only blobs that exist. 200 rounds with
 * two threads on one store handle, 100 with two processes (fork) on the same root, the
 * second with its own handle, and a final prune racing creates. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "error.h"
#include "gguf_write.h"
#include "model_create.h"
#include "quant.h"
#include "readfile.h"
#include "store.h"
#include "testutil.h"

static char tmp_root[256], root[300], gguf_path[300];

static void make_gguf(const char *path) {
    static float data[2][64];
    for (int i = 0; i < 64; i++) data[0][i] = data[1][i] = (float)i * 0.5f;
    gguf_writer *w = gguf_writer_new(path);
    gguf_writer_set_str(w, "general.architecture", "llama");
    gguf_writer_set_u32(w, "general.file_type", 15);
    int64_t ne[2] = {32, 2};
    gguf_writer_add_tensor(w, "a.weight", QT_F32, 2, ne, data[0]);
    gguf_writer_add_tensor(w, "b.weight", QT_F32, 2, ne, data[1]);
    if (gguf_writer_finish(w) != 0) { fprintf(stderr, "%s\n", anv_last_error()); exit(1); }
}

static int create_from(store *s, const char *name, const char *from) {
    create_spec spec = {0};
    spec.from = (char *)from;
    spec.system = (char *)"a shared system prompt";
    return store_create(s, name, &spec, NULL, NULL);
}

/* Whether name's manifest exists and every blob it references is present. -1: no manifest. */
static int complete(store *s, const char *name) {
    store_entry e;
    if (store_lookup(s, name, &e) != 0) return strstr(anv_last_error(), "not found") ? -1 : 0;
    size_t len = 0;
    char *json = anv_read_file(e.manifest_path, 1 << 20, &len);
    char **d = NULL;
    int n = 0, ok = json && store_manifest_digests(json, len, &d, &n) == 0;
    for (int i = 0; ok && i < n; i++) ok = store_has_blob(s, d[i]);
    store_digests_free(d, n);
    free(json);
    store_entry_clear(&e);
    return ok;
}

/* Every manifest of the store references only blobs that exist: the number that does not. */
static int broken_manifests(store *s) {
    store_entry *all = NULL;
    int n = 0, bad = 0;
    store_list(s, &all, &n);
    for (int i = 0; i < n; i++) bad += complete(s, all[i].name) != 1;
    store_entries_free(all, n);
    return bad;
}

typedef struct {
    store *s;
    pthread_barrier_t *go;
    const char *from;
    int rc;
} creator;

static void *create_thread(void *arg) {
    creator *c = arg;
    pthread_barrier_wait(c->go);
    c->rc = create_from(c->s, "b", c->from);
    return NULL;
}

static void test_threads(int rounds) {
    store *s = store_open_at(root, NULL);
    int lost = 0, created = 0, setup_failed = 0;
    for (int r = 0; r < rounds; r++) {
        if (create_from(s, "a", gguf_path) != 0) { setup_failed++; continue; }
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, 2);
        creator c = {.s = s, .go = &go, .from = r % 2 ? gguf_path : "a"};
        pthread_t t;
        pthread_create(&t, NULL, create_thread, &c);
        pthread_barrier_wait(&go);
        store_remove(s, "a");
        pthread_join(t, NULL);
        pthread_barrier_destroy(&go);
        if (c.rc == 0) {
            created++;
            if (complete(s, "b") != 1) lost++;
        }
        store_remove(s, "b");
    }
    printf("threads: %d rounds, %d creates succeeded, %d lost blobs\n", rounds, created, lost);
    CHECKF(setup_failed == 0, "%d setups failed: %s", setup_failed, anv_last_error());
    CHECKF(lost == 0, "%d of %d successful creates lost blobs", lost, created);
    CHECK(created > 0);
    CHECK(broken_manifests(s) == 0);
    store_close(s);
}

/* The same race between two processes: the child creates B, the parent removes A. */
static void test_processes(int rounds) {
    int p2c[2], c2p[2];
    if (pipe(p2c) || pipe(c2p)) { perror("pipe"); exit(1); }
    pid_t pid = fork();
    if (pid == 0) {
        close(p2c[1]);
        close(c2p[0]);
        store *s = store_open_at(root, NULL);
        char cmd;
        int r = 0;
        while (read(p2c[0], &cmd, 1) == 1) {
            char rc = (char)(create_from(s, "b", r++ % 2 ? gguf_path : "a") == 0);
            if (write(c2p[1], &rc, 1) != 1) break;
        }
        store_close(s);
        _exit(0);
    }
    close(p2c[0]);
    close(c2p[1]);
    store *s = store_open_at(root, NULL);
    int lost = 0, created = 0;
    for (int r = 0; r < rounds; r++) {
        if (create_from(s, "a", gguf_path) != 0) continue;
        char go = 1, rc = 0;
        if (write(p2c[1], &go, 1) != 1) break;
        store_remove(s, "a");
        if (read(c2p[0], &rc, 1) != 1) break;
        if (rc) {
            created++;
            if (complete(s, "b") != 1) lost++;
        }
        store_remove(s, "b");
    }
    close(p2c[1]);
    close(c2p[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    printf("processes: %d rounds, %d creates succeeded, %d lost blobs\n", rounds, created, lost);
    CHECKF(lost == 0, "%d of %d successful creates lost blobs", lost, created);
    CHECK(created > 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(broken_manifests(s) == 0);
    store_close(s);
}

typedef struct {
    store *s;
    volatile int stop;
} pruner;

static void *prune_thread(void *arg) {
    pruner *p = arg;
    while (!p->stop) store_prune(p->s);
    return NULL;
}

/* store_prune in a loop while models are created and replaced: none may lose a blob (an
 * unreferenced blob young enough to be an upload waiting for its create stays, too). */
static void test_prune_race(int rounds) {
    store *s = store_open_at(root, NULL);
    pruner p = {.s = s};
    pthread_t t;
    pthread_create(&t, NULL, prune_thread, &p);
    int lost = 0, created = 0;
    char upload[DIGEST_STR_LEN + 1];
    for (int r = 0; r < rounds; r++) {
        char name[32];
        snprintf(name, sizeof name, "p%d", r % 4);
        if (create_from(s, name, gguf_path) == 0) {
            created++;
            lost += complete(s, name) != 1;
        }
    }
    CHECK(store_put_bytes(s, "an upload", 9, upload) == 0);
    p.stop = 1;
    pthread_join(t, NULL);
    printf("prune: %d creates, %d lost blobs\n", created, lost);
    CHECK(created == rounds && lost == 0);
    CHECK(store_prune(s) >= 0 && store_has_blob(s, upload));
    CHECK(broken_manifests(s) == 0);
    store_close(s);
}

int main(void) {
    anv_log_enabled = 0;
    snprintf(tmp_root, sizeof tmp_root, "/tmp/anvil-test-race-XXXXXX");
    if (!mkdtemp(tmp_root)) { perror("mkdtemp"); return 1; }
    snprintf(root, sizeof root, "%s/store", tmp_root);
    snprintf(gguf_path, sizeof gguf_path, "%s/model.gguf", tmp_root);
    make_gguf(gguf_path);
    test_threads(200);
    test_processes(100);
    test_prune_race(100);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp_root);
    return tu_finish();
}
