/* util.c: errors, allocation, string buffers, hashing, pointer maps. */
#include <errno.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "util/util.h"
#include "tg.h"
#include "util/settings.h"

static _Thread_local char err_msg[4096];

int tg_seterr(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err_msg, sizeof err_msg, fmt, ap);
  va_end(ap);
  if (setting_int(SET_DEBUG) >= 1) fprintf(stderr, "tg error: %s\n", err_msg);
  return -1;
}
const char *tg_error(void) { return err_msg; }
void tg_clear_error(void) { err_msg[0] = 0; }

static void oom(size_t n) {
  fprintf(stderr, "tg: out of memory allocating %zu bytes\n", n);
  abort();
}
void *tg_xmalloc(size_t n) { void *p = malloc(n ? n : 1); if (!p) oom(n); return p; }
void *tg_xcalloc(size_t n, size_t sz) { void *p = calloc(n ? n : 1, sz ? sz : 1); if (!p) oom(n * sz); return p; }
void *tg_xrealloc(void *p, size_t n) { p = realloc(p, n ? n : 1); if (!p) oom(n); return p; }
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23   /* Linux 5.14; older kernels refuse it, and pages fault in as before */
#endif
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#define HUGE_PAGE ((size_t)2 << 20)
void *tg_map_pages(size_t n, bool populate) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE), keep = (n + page - 1) / page * page, len = keep >= HUGE_PAGE ? keep + HUGE_PAGE : keep;
  char *p = mmap(NULL, len ? len : page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  if (len != keep) {   /* trimmed to a 2 MiB boundary */
    size_t lead = (HUGE_PAGE - (uintptr_t)p % HUGE_PAGE) % HUGE_PAGE;
    if (lead) munmap(p, lead);
    if (len - lead > keep) munmap(p + lead + keep, len - lead - keep);
    p += lead;
    (void)madvise(p, keep, MADV_HUGEPAGE);   /* advice only */
  }
  if (populate) tg_populate_pages(p, keep, true);   /* else the pages fault in when written */
  return p;
}
void tg_populate_pages(void *p, size_t n, bool write) { if (p && n) (void)madvise(p, n, write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ); }
void tg_unmap_pages(void *p, size_t n) { if (p) munmap(p, n ? n : 1); }
char *tg_xstrdup(const char *s) { size_t n = strlen(s) + 1; char *d = tg_xmalloc(n); memcpy(d, s, n); return d; }

/* One formatting pass when the text fits the spare room (the usual case:
 * serialized graphs are built from many short pieces); a second only after
 * growing. */
void sb_printf(strbuf *b, const char *fmt, ...) {
  if (b->cap - b->n < 64) {
    b->cap = (b->n + 64) * 2;
    b->s = tg_xrealloc(b->s, b->cap);
  }
  va_list ap;
  va_start(ap, fmt);
  int need = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
  va_end(ap);
  if (need < 0) { b->s[b->n] = 0; return; }
  if ((size_t)need >= b->cap - b->n) {
    b->cap = (b->n + (size_t)need + 1) * 2;
    b->s = tg_xrealloc(b->s, b->cap);
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
  }
  b->n += (size_t)need;
}
void sb_puts(strbuf *b, const char *s) { sb_append(b, s, strlen(s)); }
void sb_append(strbuf *b, const void *p, size_t n) {
  if (b->n + n + 1 > b->cap) {
    b->cap = (b->n + n + 1) * 2;
    b->s = tg_xrealloc(b->s, b->cap);
  }
  if (n) memcpy(b->s + b->n, p, n);   /* p may be NULL when n is 0 */
  b->n += n;
  b->s[b->n] = 0;
}
void sb_free(strbuf *b) { free(b->s); b->s = NULL; b->n = b->cap = 0; }

uint64_t tg_hash_bytes(const void *p, size_t n, uint64_t seed) {
  /* FNV-1a, then a final mix so nearby inputs spread */
  const unsigned char *c = p;
  uint64_t h = 0xcbf29ce484222325ULL ^ seed;
  for (size_t i = 0; i < n; i++) { h ^= c[i]; h *= 0x100000001b3ULL; }
  return tg_hash_mix(h, n);
}

static size_t pm_slot(const ptrmap *m, const void *key) {
  size_t h = (size_t)tg_hash_mix((uint64_t)(uintptr_t)key, 0) & (m->cap - 1);
  while (m->e[h].key && m->e[h].key != key) h = (h + 1) & (m->cap - 1);
  return h;
}
void *pm_get(const ptrmap *m, const void *key) {
  if (!m->cap) return NULL;
  size_t h = pm_slot(m, key);
  return m->e[h].key ? m->e[h].val : NULL;
}
void **pm_slot_value(const ptrmap *m, const void *key) {
  if (!m->cap) return NULL;
  size_t h = pm_slot(m, key);
  return m->e[h].key && m->e[h].val ? &m->e[h].val : NULL;
}
static void pm_grow(ptrmap *m) {
  ptrmap old = *m;
  m->cap = old.cap ? old.cap * 2 : 64;
  m->e = tg_xcalloc(m->cap, sizeof *m->e);
  m->n = 0;
  for (size_t i = 0; i < old.cap; i++)
    if (old.e[i].key) pm_put(m, old.e[i].key, old.e[i].val);
  free(old.e);
}
void pm_put(ptrmap *m, const void *key, void *val) {
  if ((m->n + 1) * 2 > m->cap) pm_grow(m);
  size_t h = pm_slot(m, key);
  if (!m->e[h].key) { m->e[h].key = (void *)key; m->n++; }
  m->e[h].val = val;
}
bool pm_add(ptrmap *m, const void *key, void *val) {
  if ((m->n + 1) * 2 > m->cap) pm_grow(m);
  size_t h = pm_slot(m, key);
  if (m->e[h].key) return false;
  m->e[h].key = (void *)key; m->n++;
  m->e[h].val = val;
  return true;
}
void pm_free(ptrmap *m) { free(m->e); memset(m, 0, sizeof *m); }
void pm_reserve(ptrmap *m, size_t n) {
  size_t cap = 64;
  while (cap < 2 * (n + 1)) cap *= 2;
  if (m->n || cap <= m->cap) return;
  free(m->e);
  m->e = tg_xcalloc(cap, sizeof *m->e);
  m->cap = cap;
}

double tg_now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* mkdir -p; 0 when path is (now) a directory. */
int tg_mkdir_p(const char *path) {
  char *p = tg_xstrdup(path);
  size_t n = strlen(p);
  while (n > 1 && p[n - 1] == '/') p[--n] = 0;
  int rc = 0;
  for (char *s = p + 1; ; s++) {
    if (*s == '/' || *s == 0) {
      char c = *s;
      *s = 0;
      if (mkdir(p, 0755) != 0 && errno != EEXIST) { rc = -1; *s = c; break; }
      *s = c;
      if (!c) break;
    }
  }
  struct stat st;
  if (rc == 0 && (stat(p, &st) != 0 || !S_ISDIR(st.st_mode))) rc = -1;
  free(p);
  return rc;
}
