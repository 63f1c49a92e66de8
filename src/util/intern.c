/* intern.c: the process's set of interned strings (intern.h): open
 * addressing over a power-of-two table, under one lock; entries are never
 * removed, so a returned pointer stays valid. */
#include <pthread.h>
#include <string.h>
#include "util/intern.h"
#include "util/util.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct { char **v; size_t n, cap; } set;

static size_t slot(char **v, size_t cap, const char *s, size_t len) {
  size_t h = (size_t)tg_hash_bytes(s, len, 0) & (cap - 1);
  while (v[h] && strcmp(v[h], s) != 0) h = (h + 1) & (cap - 1);
  return h;
}

const char *tg_intern(const char *s) {
  size_t len = strlen(s);
  pthread_mutex_lock(&lock);
  if (2 * (set.n + 1) > set.cap) {   /* at most half full */
    size_t cap = set.cap ? set.cap * 2 : 256;
    char **v = tg_xcalloc(cap, sizeof(char *));
    for (size_t i = 0; i < set.cap; i++) if (set.v[i]) v[slot(v, cap, set.v[i], strlen(set.v[i]))] = set.v[i];
    free(set.v);
    set.v = v; set.cap = cap;
  }
  size_t h = slot(set.v, set.cap, s, len);
  if (!set.v[h]) { set.v[h] = tg_xstrdup(s); set.n++; }
  const char *r = set.v[h];
  pthread_mutex_unlock(&lock);
  return r;
}
