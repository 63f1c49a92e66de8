/* program_cache.c: see program_cache.h. */
#include <dlfcn.h>
#include <elf.h>
#include <inttypes.h>
#include <link.h>
#include <pthread.h>
#include <sys/stat.h>
#include "engine/program_cache.h"
#include "runtime/device.h"
#include "runtime/thread_pool.h"
#include "util/settings.h"

/* ---- the build of tg */

typedef struct { uintptr_t addr; char hex[2 * 64 + 1]; } build_id_search;

/* The NT_GNU_BUILD_ID note of the loaded object holding s->addr. */
static int find_build_id(struct dl_phdr_info *info, size_t size, void *p) {
  (void)size;
  build_id_search *s = p;
  bool mine = false;
  for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    mine = ph->p_type == PT_LOAD && s->addr >= lo && s->addr < lo + ph->p_memsz;
  }
  if (!mine) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    const unsigned char *q = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr), *end = q + ph->p_memsz;
    while (q + sizeof(ElfW(Nhdr)) <= end) {
      const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)q;
      size_t name_sz = (nh->n_namesz + 3u) & ~3u, desc_sz = (nh->n_descsz + 3u) & ~3u;
      const unsigned char *name = q + sizeof *nh, *desc = name + name_sz;
      if (desc + desc_sz > end) break;
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4) && nh->n_descsz && nh->n_descsz <= 64) {
        for (unsigned k = 0; k < nh->n_descsz; k++) snprintf(s->hex + 2 * k, 3, "%02x", desc[k]);
        return 1;
      }
      q = desc + desc_sz;
    }
  }
  return 1;   /* our object, without a build id */
}

static char build_identity[256];
static pthread_once_t build_identity_once = PTHREAD_ONCE_INIT;

static void read_build_identity(void) {
  build_id_search s = { (uintptr_t)(void *)&tg_build_identity, "" };
  dl_iterate_phdr(find_build_id, &s);
  if (s.hex[0]) { snprintf(build_identity, sizeof build_identity, "build-id %s", s.hex); return; }
  Dl_info di;
  struct stat st;
  if (dladdr((void *)&tg_build_identity, &di) && di.dli_fname && stat(di.dli_fname, &st) == 0)
    snprintf(build_identity, sizeof build_identity, "file %s %lld %lld.%09ld", di.dli_fname, (long long)st.st_size,
             (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
  else
    snprintf(build_identity, sizeof build_identity, "unknown %s %s", __DATE__, __TIME__);
}

const char *tg_build_identity(void) {
  pthread_once(&build_identity_once, read_build_identity);
  return build_identity;
}

/* ---- the key */

/* Every node of the AST, children first: its op, dtype, sources (by
 * position) and argument, exactly (a node is those four: uops are
 * hash-consed on them). false for a pointer argument, which has no meaning
 * in another process. */
static bool serialize_ast(strbuf *sb, uop *ast) {
  uop_list l = uop_toposort(ast);
  ptrmap num = { 0 };
  bool ok = true;
  for (int i = 0; i < l.n && ok; i++) {
    uop *u = l.v[i];
    pm_put(&num, u, (void *)(intptr_t)(i + 1));
    sb_printf(sb, "%d %" PRIx32 " [", (int)u->op, u->dtype.bits);
    for (int s = 0; s < u->nsrc; s++) sb_printf(sb, "%d,", (int)(intptr_t)pm_get(&num, u->src[s]) - 1);
    sb_printf(sb, "] %d:", u->arg.kind);
    switch (u->arg.kind) {
    case ARG_INT: sb_printf(sb, "%" PRId64, u->arg.i); break;
    case ARG_FLOAT: sb_printf(sb, "%a", u->arg.f); break;
    case ARG_STR: sb_printf(sb, "%zu:", strlen(u->arg.s)); sb_puts(sb, u->arg.s); break;
    case ARG_INTS: for (int k = 0; k < u->arg.n; k++) sb_printf(sb, "%" PRId64 ",", u->arg.v[k]); break;
    case ARG_PTR: ok = false; break;
    default: break;
    }
    sb_puts(sb, "\n");
  }
  pm_free(&num);
  free(l.v);
  return ok;
}

char *program_cache_path(const sched_item *it, const char *opts_key) {
  strbuf ast = { 0 };
  if (!serialize_ast(&ast, it->ast)) { sb_free(&ast); return NULL; }
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
  char *path = compile_cache_path(ast.s ? ast.s : "", who.s, tg_build_identity(), ".prog");
  sb_free(&ast);
  sb_free(&who);
  return path;
}

/* ---- the entry: a header of launch facts, then the source */

#define ENTRY_MAGIC "tg program v1\n"

bool program_cache_read(const char *path, kernel_program *kp) {
  size_t n = 0;
  char *data = cache_read_file(path, &n);
  if (!data) return false;
  memset(kp, 0, sizeof *kp);
  bool ok = false;
  size_t magic = strlen(ENTRY_MAGIC);
  char *nl = n > magic && !memcmp(data, ENTRY_MAGIC, magic) ? memchr(data + magic, '\n', n - magic) : NULL;
  if (nl) {
    *nl = 0;   /* the launch line */
    long long g[3], l[3], src_len;
    int cores, nbuf, used = 0;
    if (sscanf(data + magic, "%d %lld %lld %lld %lld %lld %lld %d %lld %n", &cores, &g[0], &g[1], &g[2], &l[0], &l[1], &l[2], &nbuf, &src_len, &used) == 9 &&
        src_len >= 0) {
      const char *opts = data + magic + used, *src = nl + 1;
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

void program_cache_write(const char *path, const kernel_program *kp) {
  if (!kp->src || strchr(kp->opts, '\n')) return;
  strbuf sb = { 0 };
  sb_puts(&sb, ENTRY_MAGIC);
  sb_printf(&sb, "%d %lld %lld %lld %lld %lld %lld %d %zu %s\n", kp->max_cores, (long long)kp->global[0], (long long)kp->global[1],
            (long long)kp->global[2], (long long)kp->local[0], (long long)kp->local[1], (long long)kp->local[2], kp->nbuf_args,
            strlen(kp->src), kp->opts);
  sb_puts(&sb, kp->src);
  cache_write_file(path, sb.s, sb.n);
  sb_free(&sb);
}
