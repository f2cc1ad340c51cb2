/* testutil: the tiny assertion layer every C unit test uses (counts checks and prints
 * "N passed, N failed" so any runner can read the result), test data and file reads. */
#ifndef ANVIL_TESTUTIL_H
#define ANVIL_TESTUTIL_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

extern int tu_passed, tu_failed;

#define CHECK(cond) do { if (cond) tu_passed++; else { tu_failed++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define CHECKF(cond, ...) do { if (cond) tu_passed++; else { tu_failed++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

/* Prints the summary line and returns the process exit code. */
int tu_finish(void);
/* Deterministic pseudo-random numbers for test data. */
uint64_t tu_rand_u64(uint64_t *state);
float tu_rand_f32(uint64_t *state, float lo, float hi);
/* Max |a-b| and the relative error max|a-b|/max|b| over n floats. */
float tu_max_abs_diff(const float *a, const float *b, int64_t n);
float tu_rel_err(const float *a, const float *b, int64_t n);
/* The whole file, NUL-terminated (malloc'd; *len = its size if len), or NULL. */
char *tu_read_file(const char *path, size_t *len);
/* Temporary folders of a test: removed with everything in them when no check failed so far
 * (a failing run keeps its folder for debugging and names it on stderr); -1 if something
 * could not be removed. tu_rmtree is rm -r without a shell (also under Wine). */
int tu_tmpdir_done(const char *dir);
int tu_rmtree(const char *path);
#endif
