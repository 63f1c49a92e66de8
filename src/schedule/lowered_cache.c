/* lowered_cache.c: see lowered_cache.h. */
#include <inttypes.h>
#include <pthread.h>
#include "schedule/lowered_cache.h"
#include "runtime/device.h"
#include "uop/uop_serial.h"
#include "util/build_id.h"

enum { LOWERED_MAX = 8192 };
static ptrmap lowered_all;   /* key -> lowered_kernel* */
static pthread_mutex_t lowered_lock = PTHREAD_MUTEX_INITIALIZER;

void lowered_kernel_clear(lowered_kernel *e) {
  uop_release(e->ast);
  free(e->ord);
  e->ast = NULL;
  e->ord = NULL;
}

static void free_all(void) {
  for (size_t i = 0; i < lowered_all.cap; i++) {
    if (!lowered_all.e[i].key) continue;
    lowered_kernel *e = lowered_all.e[i].val;
    if (e) { lowered_kernel_clear(e); free(e); }
    uop_release((uop *)lowered_all.e[i].key);
  }
  pm_free(&lowered_all);
}

static void copy_out(const lowered_kernel *e, lowered_kernel *out) {
  *out = *e;
  uop_retain(out->ast);
  out->ord = tg_xmalloc(sizeof(int) * (size_t)(e->nbufs ? e->nbufs : 1));
  memcpy(out->ord, e->ord, sizeof(int) * (size_t)(e->nbufs ? e->nbufs : 1));
}

/* Puts e under key unless one is there (then e and the key's reference are
 * dropped). Under the lock. */
static void put_locked(uop *key, lowered_kernel *e) {
  if (pm_get(&lowered_all, key)) { lowered_kernel_clear(e); free(e); uop_release(key); return; }
  if (lowered_all.n >= LOWERED_MAX) free_all();
  pm_put(&lowered_all, key, e);
}

/* ---- on disk */

/* The file of key's structure on dev (malloc'd), or NULL. The key is
 * NOOP(structure, ints) with ints[2] the device's address (lower_key):
 * on disk, the device's name instead. */
static char *disk_path(uop *key, tg_device *dev) {
  if (key->op != OP_NOOP || key->nsrc != 1 || key->arg.kind != ARG_INTS || key->arg.n < 3) return NULL;
  strbuf text = { 0 };
  if (!uop_serialize(&text, key->src[0])) { sb_free(&text); return NULL; }
  sb_puts(&text, "key");
  for (int i = 0; i < key->arg.n; i++) if (i != 2) sb_printf(&text, " %" PRId64, key->arg.v[i]);
  strbuf who = { 0 };
  sb_printf(&who, "%s\n%s\n", dev->name, dev->renderer ? dev->renderer->name : "");
  char *path = compile_cache_path(text.s, who.s, tg_build_identity(), ".low");
  sb_free(&text);
  sb_free(&who);
  return path;
}

#define LOW_MAGIC "tg lowered v1\n"

static void write_entry(const char *path, const lowered_kernel *e) {
  strbuf body = { 0 };
  sb_printf(&body, "%d %d %d\n", e->nbufs, e->permuted, e->nd);
  for (int i = 0; i < e->nbufs; i++) sb_printf(&body, "%d ", e->ord[i]);
  sb_puts(&body, "\n");
  for (int i = 0; i < e->nd; i++) sb_printf(&body, "%" PRId64 " %" PRId64 " ", e->pshape[i], e->back[i]);
  sb_puts(&body, "\n");
  sb_printf(&body, "%zu:%s\n", strlen(e->name), e->name);
  if (!uop_serialize(&body, e->ast)) { sb_free(&body); return; }
  cache_write_checked(path, LOW_MAGIC, body.s, body.n);
  sb_free(&body);
}

/* Reads one integer at *p (space-separated); false at the end or on junk. */
static bool read_int(const char **p, const char *end, int64_t *v) {
  while (*p < end && (**p == ' ' || **p == '\n')) (*p)++;
  if (*p >= end) return false;
  char *e;
  long long x = strtoll(*p, &e, 10);
  if (e == *p || e > end) return false;
  *v = x;
  *p = e;
  return true;
}

static bool read_entry(const char *path, lowered_kernel *e) {
  size_t n = 0;
  char *data = cache_read_checked(path, LOW_MAGIC, &n);
  if (!data) return false;
  memset(e, 0, sizeof *e);
  const char *p = data, *end = data + n;
  int64_t nbufs, permuted, nd;
  bool ok = read_int(&p, end, &nbufs) && read_int(&p, end, &permuted) && read_int(&p, end, &nd) && nbufs >= 1 && nbufs <= 4096 &&
       nd >= 0 && nd <= TG_MAX_DIMS * 4;
  if (ok) {
    e->nbufs = (int)nbufs, e->permuted = permuted != 0, e->nd = (int)nd;
    e->ord = tg_xcalloc((size_t)nbufs, sizeof(int));
    for (int i = 0; i < e->nbufs && ok; i++) { int64_t v; ok = read_int(&p, end, &v) && v >= -1 && v < 4096; e->ord[i] = (int)v; }
    for (int i = 0; i < e->nd && ok; i++) ok = read_int(&p, end, &e->pshape[i]) && read_int(&p, end, &e->back[i]);
    int64_t name_len;
    while (ok && p < end && *p == '\n') p++;
    ok = ok && read_int(&p, end, &name_len) && name_len >= 0 && (size_t)name_len < sizeof e->name && p < end && *p == ':' &&
         end - p > name_len + 1 && p[1 + name_len] == '\n';
    if (ok) {
      memcpy(e->name, p + 1, (size_t)name_len);
      e->name[name_len] = 0;
      p += name_len + 2;
      uop_pool_push();
      e->ast = uop_deserialize(p, (size_t)(end - p));
      if (e->ast) uop_retain(e->ast);
      uop_pool_pop();
      ok = e->ast && e->ast->op == OP_SINK;
    }
  }
  if (!ok) lowered_kernel_clear(e);
  free(data);
  return ok;
}

/* ---- the API */

bool lowered_find(uop *key, tg_device *dev, lowered_kernel *out) {
  pthread_mutex_lock(&lowered_lock);
  lowered_kernel *e = pm_get(&lowered_all, key);
  if (e) copy_out(e, out);
  pthread_mutex_unlock(&lowered_lock);
  if (e) return true;
  char *path = disk_path(key, dev);
  lowered_kernel *d = tg_xcalloc(1, sizeof *d);
  bool got = path && read_entry(path, d);
  free(path);
  if (!got) { free(d); return false; }
  copy_out(d, out);
  uop_retain(key);
  pthread_mutex_lock(&lowered_lock);
  put_locked(key, d);
  pthread_mutex_unlock(&lowered_lock);
  return true;
}

void lowered_add(uop *key, tg_device *dev, lowered_kernel *e) {
  char *path = disk_path(key, dev);
  if (path) write_entry(path, e);
  free(path);
  pthread_mutex_lock(&lowered_lock);
  put_locked(key, e);
  pthread_mutex_unlock(&lowered_lock);
}

void lowered_cache_forget(void) {
  pthread_mutex_lock(&lowered_lock);
  free_all();
  pthread_mutex_unlock(&lowered_lock);
}
