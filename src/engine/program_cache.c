/* program_cache.c: see program_cache.h. */
#include <inttypes.h>
#include "engine/program_cache.h"
#include "uop/uop_serial.h"
#include "runtime/device.h"
#include "runtime/thread_pool.h"
#include "util/build_id.h"
#include "util/settings.h"

/* ---- the key */

char *program_cache_path(const sched_item *it, const char *opts_key) {
  char ast[65];   /* the digest of its text (remembered: a schedule read from the cache brings it) */
  if (!uop_text_digest(it->ast, ast)) return NULL;
  const tg_renderer *r = it->dev->renderer;
  strbuf who = { 0 };
  sb_printf(&who, "%s\n%s\n%s\n%s\n", it->name, it->dev->name, it->dev->description, it->dev->compile_flags ? it->dev->compile_flags : "");
  sb_printf(&who, "%s %d%d%d%d%d%d%d %" PRId64 " %d", r->name, r->has_threads, r->has_local, r->simd_vectors, r->byte_dot, r->prefetch,
            r->native_half, r->wide_layouts, r->local_mem, r->max_local);
  for (int d = 0; d < 3; d++) sb_printf(&who, " %" PRId64 " %" PRId64, r->global_max[d], r->local_max[d]);
  sb_printf(&who, " tc=%d\n", r->n_tensor_cores);
  for (int i = 0; i < r->n_tensor_cores; i++) {
    const tg_tensor_core *tc = &r->tensor_cores[i];
    sb_printf(&who, "tc %s %d %d %d %d %d\n", tc->helper ? tc->helper : "", tc->m, tc->n, tc->k, (int)tc->in, (int)tc->acc);
  }
  sb_printf(&who, "%s\nnovec=%lld noprefetch=%d threads=%d\n", opts_key, (long long)setting_int(SET_TG_NOVEC), setting_on(SET_TG_NO_PREFETCH),
            tg_pool_threads());
  char *path = compile_cache_path(ast, who.s, tg_build_identity(), ".prog");
  sb_free(&who);
  return path;
}

/* ---- the entry: a line of launch facts, a line of the engine's facts,
 * then the source */

#define ENTRY_MAGIC "tg program v2\n"

/* " flops writes nvars name..." (names are C identifiers) */
static bool read_facts(const char *line, program_facts *f) {
  int used = 0;
  unsigned long long w;
  if (sscanf(line, "%la %llu %d%n", &f->flops, &w, &f->nvars, &used) != 3 || f->nvars < 0 || f->nvars > 64) return false;
  f->writes = w;
  size_t at = 0;
  for (int i = 0; i < f->nvars; i++) {
    char name[PROGRAM_FACTS_NAMES];
    int n = 0;
    if (sscanf(line + used, " %255s%n", name, &n) != 1) return false;
    used += n;
    size_t len = strlen(name) + 1;
    if (at + len > sizeof f->names) return false;
    memcpy(f->names + at, name, len);
    at += len;
  }
  return line[used] == 0;
}

bool program_cache_read(const char *path, kernel_program *kp, program_facts *facts) {
  size_t n = 0;
  char *data = cache_read_file(path, &n);
  if (!data) return false;
  memset(kp, 0, sizeof *kp);
  bool ok = false;
  size_t magic = strlen(ENTRY_MAGIC);
  char *nl = n > magic && !memcmp(data, ENTRY_MAGIC, magic) ? memchr(data + magic, '\n', n - magic) : NULL;
  char *nl2 = nl ? memchr(nl + 1, '\n', n - (size_t)(nl + 1 - data)) : NULL;
  if (nl2) {
    *nl = *nl2 = 0;   /* the two lines */
    long long g[3], l[3], src_len;
    int cores, nbuf, used = 0;
    if (sscanf(data + magic, "%d %lld %lld %lld %lld %lld %lld %d %lld %n", &cores, &g[0], &g[1], &g[2], &l[0], &l[1], &l[2], &nbuf, &src_len, &used) == 9 &&
        src_len >= 0 && read_facts(nl + 1, facts)) {
      const char *opts = data + magic + used, *src = nl2 + 1;
      size_t left = n - (size_t)(src - data);
      if (strlen(opts) < sizeof kp->opts && (size_t)src_len == left && cores >= 0 && nbuf >= 0) {
        snprintf(kp->opts, sizeof kp->opts, "%s", opts);
        kp->max_cores = cores;
        kp->nbuf_args = nbuf;
        for (int d = 0; d < 3; d++) kp->global[d] = g[d], kp->local[d] = l[d];
        kp->src = tg_xmalloc(left + 1);
        memcpy(kp->src, src, left);
        kp->src[left] = 0;
        ok = strlen(kp->src) == left;
        if (!ok) { free(kp->src); kp->src = NULL; }
      }
    }
  }
  free(data);
  return ok;
}

void program_cache_write(const char *path, const kernel_program *kp, const program_facts *facts) {
  if (!kp->src || strchr(kp->opts, '\n')) return;
  strbuf sb = { 0 };
  sb_puts(&sb, ENTRY_MAGIC);
  sb_printf(&sb, "%d %lld %lld %lld %lld %lld %lld %d %zu %s\n", kp->max_cores, (long long)kp->global[0], (long long)kp->global[1],
            (long long)kp->global[2], (long long)kp->local[0], (long long)kp->local[1], (long long)kp->local[2], kp->nbuf_args,
            strlen(kp->src), kp->opts);
  sb_printf(&sb, "%a %llu %d", facts->flops, (unsigned long long)facts->writes, facts->nvars);
  const char *name = facts->names;
  for (int i = 0; i < facts->nvars; i++, name += strlen(name) + 1) sb_printf(&sb, " %s", name);
  sb_puts(&sb, "\n");
  sb_puts(&sb, kp->src);
  cache_write_file(path, sb.s, sb.n);
  sb_free(&sb);
}
