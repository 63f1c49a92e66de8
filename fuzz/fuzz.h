/* fuzz.h: what the libFuzzer harnesses in fuzz/ share (see docs/security.md).
 *
 * Every harness is one LLVMFuzzerTestOneInput over the bytes libFuzzer
 * gives it; whatever tg does with them must end in a result or an error,
 * never a crash, a sanitizer report, a leak or a hang. Readers that take a
 * path get the bytes as a memfd (fuzz_file), so no harness writes to disk.
 * Test data (vocabularies, chat templates) is looked up once under
 * $TG_FUZZ_TESTDATA, default ../shared/testdata from the project root. */
#ifndef TG_FUZZ_H
#define TG_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "tg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The bytes as a file: *fd is a fresh memfd holding them (close it after),
 * path gets "/proc/self/fd/N". False when the memfd cannot be made. */
static inline bool fuzz_file(const uint8_t *data, size_t size, int *fd, char *path, size_t cap) {
  *fd = memfd_create("tg-fuzz", MFD_CLOEXEC);
  if (*fd < 0) return false;
  for (size_t at = 0; at < size;) {
    ssize_t n = write(*fd, data + at, size - at);
    if (n <= 0) { close(*fd); return false; }
    at += (size_t)n;
  }
  snprintf(path, cap, "/proc/self/fd/%d", *fd);
  return true;
}

/* A path under the test data directory (static buffer). */
static inline const char *fuzz_testdata(const char *rel) {
  static char buf[4096];
  const char *root = getenv("TG_FUZZ_TESTDATA");
  snprintf(buf, sizeof buf, "%s/%s", root && *root ? root : "../shared/testdata", rel);
  return buf;
}

/* A whole file, malloc'd and NUL-terminated, or NULL. */
static inline char *fuzz_slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *p = malloc(n > 0 ? (size_t)n + 1 : 1);
  size_t got = n > 0 ? fread(p, 1, (size_t)n, f) : 0;
  fclose(f);
  p[got] = 0;
  if (len) *len = got;
  return p;
}

/* A NUL-terminated copy of bytes [0, n). */
static inline char *fuzz_str(const uint8_t *p, size_t n) {
  char *s = malloc(n + 1);
  if (n) memcpy(s, p, n);
  s[n] = 0;
  return s;
}

/* Reads bytes off the front of the input, 0 once they run out. */
typedef struct { const uint8_t *p; size_t n; } fuzz_in;
static inline unsigned fuzz_u8(fuzz_in *in) {
  if (!in->n) return 0;
  in->n--;
  return *in->p++;
}
static inline unsigned fuzz_u16(fuzz_in *in) { unsigned a = fuzz_u8(in); return a | fuzz_u8(in) << 8; }
/* Up to max bytes (fewer when the input runs out) as a NUL-terminated copy. */
static inline char *fuzz_take_str(fuzz_in *in, size_t max) {
  size_t n = max < in->n ? max : in->n;
  char *s = fuzz_str(in->p, n);
  in->p += n, in->n -= n;
  return s;
}

#endif
