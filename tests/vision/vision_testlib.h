/* vision_testlib: what the projector unit tests (test_vision_*.c) share: loading each malformed
 * variant a test writes and checking that it is refused with one line naming the file. */
#ifndef ANVIL_VISION_TESTLIB_H
#define ANVIL_VISION_TESTLIB_H
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "testutil.h"
#include "vision.h"

/* For variant in [first, last): write(dir/bad<variant>.gguf, variant), then vision_load must
 * fail with one line holding expect[variant] and the path. */
static inline void vt_check_refusals(const char *dir, const vision_load_opts *vo, int first, int last,
                                     void (*write)(const char *path, int variant), const char *const *expect) {
    char path[256];
    for (int variant = first; variant < last; variant++) {
        snprintf(path, sizeof path, "%s/bad%d.gguf", dir, variant);
        write(path, variant);
        vision_model *v = vision_load(path, vo);
        const char *err = anv_last_error();
        CHECKF(v == NULL, "variant %d loaded", variant);
        CHECKF(strstr(err, expect[variant]) && !strchr(err, '\n') && strstr(err, path), "variant %d: '%s'", variant, err);
        vision_free(v);
    }
}
#endif
