/* test.h: the tiny test harness. Each test file defines TEST(name)
 * functions; they register themselves and tests/main.c runs them all (or those
 * whose name contains argv[1]) and prints "N passed, N failed, N skipped".
 * Tests run with the working directory set to tests/. */
#ifndef TG_TEST_H
#define TG_TEST_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tg.h"

typedef void (*test_fn)(void);
void test_register(const char *name, test_fn fn);
#define TEST(name) \
  static void test_##name(void); \
  __attribute__((constructor)) static void reg_##name(void) { test_register(#name, test_##name); } \
  static void test_##name(void)

/* Failures are counted per test; a test with any failure fails. */
extern int test_failures;
extern bool test_skipped;
void test_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define CHECK(c) do { if (!(c)) test_fail(__FILE__, __LINE__, "CHECK(%s)", #c); } while (0)
#define CHECK_MSG(c, ...) do { if (!(c)) test_fail(__FILE__, __LINE__, __VA_ARGS__); } while (0)
#define CHECK_EQ_INT(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
  if (a_ != b_) test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, a_, b_); } while (0)
#define CHECK_NEAR(a, b, tol) do { double a_ = (a), b_ = (b); \
  if (!(fabs(a_ - b_) <= (tol) * (1 + fabs(b_))) && !(isnan(a_) && isnan(b_))) \
    test_fail(__FILE__, __LINE__, "%s ~ %s: %.9g vs %.9g", #a, #b, a_, b_); } while (0)
/* A tensor call must have succeeded; prints tg_error() otherwise. */
#define CHECK_OK(t) do { if (!(t)) test_fail(__FILE__, __LINE__, "%s failed: %s", #t, tg_error()); } while (0)
/* A call that must fail (NULL tensor / negative result) with an error
 * message containing every given string. */
#define CHECK_ERROR_HAS_(expr, ...) do { \
    const char *want_[] = { __VA_ARGS__ }; \
    for (size_t i_ = 0; i_ < sizeof want_ / sizeof want_[0]; i_++) \
      CHECK_MSG(strstr(tg_error(), want_[i_]) != NULL, "%s: message \"%s\" lacks \"%s\"", #expr, tg_error(), want_[i_]); \
  } while (0)
#define CHECK_ERR(expr, ...) do { \
    tg_clear_error(); \
    tg_tensor *r_ = (expr); \
    CHECK_MSG(r_ == NULL, "%s: expected an error", #expr); \
    CHECK_ERROR_HAS_(expr, __VA_ARGS__); \
  } while (0)
#define CHECK_FAILS(expr, ...) do { \
    tg_clear_error(); \
    CHECK_MSG((expr) < 0, "%s: expected -1", #expr); \
    CHECK_ERROR_HAS_(expr, __VA_ARGS__); \
  } while (0)
#define SKIP(...) do { test_skipped = true; printf("  skip: "); printf(__VA_ARGS__); printf("\n"); return; } while (0)

/* Reads a whole file (e.g. "goldens/x.bin"); NULL when missing. *n gets its size. */
void *test_read_file(const char *path, size_t *n);
/* Runs fn(ctx) with TRACK_REWRITES=level and stderr sent to a file: what
 * it printed (malloc'd, NUL-terminated), or NULL without a temporary file.
 * The setting and stderr are restored after. */
char *test_track_rewrites(int level, void (*fn)(void *ctx), void *ctx);
/* Compares n floats with a relative+absolute tolerance; reports the first
 * mismatches. Returns true when all match. NaNs must match NaNs. */
bool test_close_f32(const float *got, const float *want, size_t n, double rtol, double atol, const char *what);

/* nblocks ggml blocks of bpb random bytes (a fixed sequence per seed) whose
 * fp16 scale at byte scale_at is modest (about 2^-8 .. 2^-6), every fifth
 * negative. malloc'ed; *nbytes gets the size. */
uint8_t *test_random_blocks(uint64_t seed, int64_t nblocks, int bpb, int scale_at, int64_t *nbytes);

/* The directory of the build whose tg is $TG_BIN ("../build", where its
 * libraries and tests/ lie); NULL when TG_BIN is unset (make test sets it). */
const char *test_build_dir(void);
/* Runs cmd through the shell, its output (stderr too) into out (n bytes);
 * the exit status (-1: it could not run, 128+N: killed by signal N). */
int test_run_capture(const char *cmd, char *out, size_t n);

/* How many of t's kernels, as the C renderer writes them with the
 * heuristic's opts, contain needle (-1 on an error); *nkernels gets how many
 * kernels there are (tests/kernel_sources.c). */
int test_kernels_with(const char *needle, tg_tensor *t, int *nkernels);

#endif
