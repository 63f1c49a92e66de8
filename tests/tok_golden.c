/* tok_golden.c: see tok_golden.h. */
#include "tok_golden.h"
#include <stdio.h>
#include <string.h>

bool tok_unhex(const char *s, tok_bytes *out) {
  out->n = 0;
  if (!strcmp(s, "-")) return true;
  size_t n = strlen(s);
  if (n % 2) return false;
  for (size_t i = 0; i < n; i += 2) {
    unsigned v;
    if (sscanf(s + i, "%2x", &v) != 1) return false;
    VEC_PUSH(*out, (char)v);
  }
  return true;
}

void tok_show(const char *what, const char *s, size_t n) {
  printf("    %s: '", what);
  for (size_t i = 0; i < n && i < 200; i++) printf(s[i] >= 32 && s[i] < 127 ? "%c" : "\\x%02x", (unsigned char)s[i]);
  printf("'\n");
}
