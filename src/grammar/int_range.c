/* int_range.c: GBNF for the decimal integers in a range (JSON schema's
 * minimum / maximum on an integer), written as llama.cpp's
 * _build_min_max_int does it in spirit: digit by digit, one alternative per
 * number of digits, no leading zeros, no "-0". Bounds past 16 digits (the
 * grammar's integers have at most 16) count as no bound. */
#include <string.h>
#include "grammar/grammar.h"
#include "util/util.h"

#define MAXV 9999999999999999LL   /* 16 digits */

static bool all_of(const char *s, int n, char d) {
  for (int i = 0; i < n; i++) if (s[i] != d) return false;
  return true;
}

/* The n-digit strings (leading zeros allowed) from x to y, x <= y. */
static void same_len(strbuf *b, const char *x, const char *y, int n) {
  if (n == 0) return;
  if (x[0] == y[0]) { sb_printf(b, " \"%c\"", x[0]); same_len(b, x + 1, y + 1, n - 1); return; }
  char lo = x[0], hi = y[0], nines[20], zeros[20];
  memset(nines, '9', sizeof nines);
  memset(zeros, '0', sizeof zeros);
  bool first = true;
  sb_puts(b, " (");
  if (!all_of(x + 1, n - 1, '0')) { sb_printf(b, " \"%c\"", lo); same_len(b, x + 1, nines, n - 1); lo++; first = false; }
  char mid_hi = all_of(y + 1, n - 1, '9') ? hi : (char)(hi - 1);
  if (lo <= mid_hi) {
    sb_puts(b, first ? "" : " |");
    if (lo == mid_hi) sb_printf(b, " \"%c\"", lo);
    else sb_printf(b, " [%c-%c]", lo, mid_hi);
    if (n > 1) sb_printf(b, " [0-9]{%d}", n - 1);
    first = false;
  }
  if (mid_hi < hi) { sb_printf(b, "%s \"%c\"", first ? "" : " |", hi); same_len(b, zeros, y + 1, n - 1); }
  sb_puts(b, " )");
}

static int n_digits(int64_t v) { int n = 1; while (v >= 10) { v /= 10; n++; } return n; }
static int64_t pow10i(int n) { int64_t p = 1; while (n-- > 0) p *= 10; return p; }

/* v as exactly n digits (n <= 17) */
static void put_digits(char *out, int64_t v, int n) {
  for (int i = n - 1; i >= 0; i--, v /= 10) out[i] = (char)('0' + v % 10);
  out[n] = 0;
}

/* Non-negative integers in [a, b] (b < 0: no upper bound). */
static void nonneg(strbuf *b, int64_t a, int64_t hi) {
  int la = n_digits(a), lb = hi < 0 ? la : n_digits(hi);
  bool first = true;
  sb_puts(b, " (");
  for (int L = la; L <= lb; L++) {
    int64_t lo = L == 1 ? 0 : pow10i(L - 1), top = pow10i(L) - 1;
    if (lo < a) lo = a;
    if (hi >= 0 && top > hi) top = hi;
    char x[20], y[20];
    put_digits(x, lo, L);
    put_digits(y, top, L);
    sb_puts(b, first ? "" : " |");
    first = false;
    same_len(b, x, y, L);
  }
  if (hi < 0 && lb < 16) sb_printf(b, " | [1-9] [0-9]{%d,15}", lb);   /* every longer number */
  sb_puts(b, " )");
}

int gbnf_int_range(strbuf *b, bool has_lo, int64_t lo, bool has_hi, int64_t hi) {
  if (has_lo && lo < -MAXV) has_lo = false;
  if (has_hi && hi > MAXV) has_hi = false;
  if ((has_lo && lo > MAXV) || (has_hi && hi < -MAXV) || (has_lo && has_hi && lo > hi)) return -1;
  bool neg = !has_lo || lo < 0, pos = !has_hi || hi >= 0;
  sb_puts(b, "(");
  if (neg) {   /* -v for v in [max(1, -hi), -lo] */
    int64_t v_lo = has_hi && hi < 0 ? -hi : 1;
    sb_puts(b, " \"-\"");
    nonneg(b, v_lo, has_lo ? -lo : -1);
  }
  if (pos) {
    sb_puts(b, neg ? " |" : "");
    nonneg(b, has_lo && lo > 0 ? lo : 0, has_hi ? hi : -1);
  }
  sb_puts(b, " )");
  return 0;
}
