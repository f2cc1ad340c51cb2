/* backend: views and size helpers shared by every backend (the interface is backend.h). */
#include "backend.h"
#include "error.h"
#include "quant.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

size_t be_row_bytes(const be_tensor *t) { return qtype_row_size((qtype)t->type, t->cols); }
size_t be_nbytes(const be_tensor *t) { return be_row_bytes(t) * (size_t)t->rows; }

be_tensor be_view_rows(const be_tensor *t, int64_t row0, int64_t n_rows) {
    be_tensor v = *t;
    v.offset = t->offset + (size_t)row0 * be_row_bytes(t);
    v.rows = n_rows;
    v.owned = false;
    return v;
}

be_tensor be_view_reshape(const be_tensor *t, int64_t cols, int64_t rows) {
    be_tensor v = *t;
    v.cols = cols;
    v.rows = rows;
    v.owned = false;
    return v;
}

void be_record_error(backend *be) {
    if (be->sticky_error[0]) return; /* the first failure is the one that explains the rest */
    snprintf(be->sticky_error, sizeof be->sticky_error, "%s: %s", be->name ? be->name : "backend", anv_last_error());
    anv_log("%s", be->sticky_error);
}

void be_fail(backend *be, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    anv_set_error("%s", msg);
    be_record_error(be);
}

const char *be_sticky_error(backend *be) { return be->sticky_error[0] ? be->sticky_error : NULL; }
