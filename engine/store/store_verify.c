/* store_verify: blob re-hashing (see store_verify.h). */
#include "store_verify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "error.h"
#include "store_impl.h"

int store_verify_blob_file(const char *path, const char *digest, const char *what) {
    char got[DIGEST_STR_LEN + 1];
    if (digest_file(path, got, NULL) != 0) return -1;
    if (strcmp(got, digest) != 0) {
        anv_set_error("%s: blob %s is corrupt: its content hashes to %s (remove the model and pull or create it again)",
                      what, digest, got);
        return -1;
    }
    return 0;
}

static void verify_one(store *s, const store_mlayer *ml, store_verify_layer *out, char *msg, size_t cap) {
    memset(out, 0, sizeof *out);
    out->media_type = ml->media_type;
    out->digest = ml->digest;
    out->size = ml->size;
    out->message = msg;
    msg[0] = '\0';
    char *path = store_find_blob(s, ml->digest);
    out->path = path;
    if (!path) {
        out->status = STORE_VERIFY_MISSING;
        snprintf(msg, cap, "layer %s (%s): blob is missing", ml->digest, ml->media_type);
        return;
    }
    if (digest_file(path, out->got, &out->got_size) != 0) {
        out->status = STORE_VERIFY_IO;
        snprintf(msg, cap, "layer %s (%s): %s", ml->digest, ml->media_type, anv_last_error());
    } else if (strcmp(out->got, ml->digest) != 0) {
        out->status = out->got_size != ml->size ? STORE_VERIFY_SIZE : STORE_VERIFY_DIGEST;
        snprintf(msg, cap, "layer %s (%s): blob %s is corrupt: its content (%llu bytes, manifest %llu) hashes to %s",
                 ml->digest, ml->media_type, path, (unsigned long long)out->got_size, (unsigned long long)ml->size,
                 out->got);
    }
}

int store_verify_model(store *s, const char *name, store_verify_fn fn, void *user) {
    store_entry e;
    if (store_lookup(s, name, &e) != 0) return -1;
    if (!e.manifest_path) {
        store_entry_clear(&e);
        anv_set_error("%s: not a model of the store", name);
        return -1;
    }
    size_t len = 0;
    char *json = anv_read_file(e.manifest_path, 1 << 20, &len);
    store_manifest m;
    int rc = -1;
    if (json && store_manifest_parse(json, len, e.manifest_path, &m) == 0) {
        rc = 0;
        char msg[1024];
        for (int i = -1; i < m.n_layers; i++) {
            const store_mlayer *ml = i < 0 ? &m.config : &m.layers[i];
            if (i < 0 && !ml->digest[0]) continue;
            store_verify_layer r;
            verify_one(s, ml, &r, msg, sizeof msg);
            if (r.status != STORE_VERIFY_OK) rc++;
            if (fn) fn(&r, user);
            free((char *)r.path);
        }
        store_manifest_free(&m);
    }
    free(json);
    store_entry_clear(&e);
    return rc;
}
