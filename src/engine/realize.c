/* realize.c: schedule -> compile (cached per AST) -> run, with counters and
 * DEBUG output like tinygrad's: DEBUG=2 one line per kernel run, DEBUG=3 the
 * kernel AST, DEBUG=4 the source. */
#include <pthread.h>
#include <time.h>
#include "engine/realize.h"
#include "codegen/codegen.h"
#include "codegen/opts.h"
#include "runtime/thread_pool.h"
#include "renderer/renderer.h"
#include "schedule/schedule.h"
#include "util/counters.h"

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct { tg_program *prog; double flops; int max_cores; } cached_prog;

/* Opts for every kernel from tg_set_kernel_opts (or TG_OPTS); NULL: the
 * heuristic picks (NOOPT=1: none). */
static char *opts_override;
int tg_set_kernel_opts(const char *spec) {
  if (spec && *spec) {
    kopt o[32];
    if (kopts_parse(spec, o, 32) < 0) return -1;
  }
  pthread_mutex_lock(&cache_lock);
  free(opts_override);
  opts_override = spec && *spec ? tg_xstrdup(spec) : NULL;
  pthread_mutex_unlock(&cache_lock);
  return 0;
}

/* Applies the opts for this kernel and expands its lanes (borrowed). */
static uop *optimize(sched_item *it, int *max_cores) {
  uop *ast = it->ast;
  const char *spec = opts_override ? opts_override : getenv("TG_OPTS");
  kopt o[32];
  if (spec && *spec) {
    int n = kopts_parse(spec, o, 32);
    if (n < 0) return NULL;
    if (kernel_apply_opts(&ast, o, n, false) < 0) {
      char msg[4096];
      snprintf(msg, sizeof msg, "%s", tg_error());
      tg_seterr("kernel %s: %s", it->name, msg);
      return NULL;
    }
  } else if (!tg_getenv_int("NOOPT", 0)) {
    int n = kernel_heuristic_opts(ast, tg_pool_threads(), o, 32);
    for (int i = 0; i < n; i++) {
      uop *trial = ast;
      if (kernel_apply_opt(&trial, o[i], false) == 0) ast = trial;   /* a pick that does not fit is skipped */
    }
    tg_clear_error();
  }
  *max_cores = kernel_thread_count(ast);
  return kernel_expand_lanes(ast);
}

static ptrmap prog_cache;   /* NOOP(ast, arg=device) -> cached_prog* */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

tg_buffer *uop_contiguous_buffer(const uop *u) {
  while (u->op == OP_RESHAPE) u = u->src[0];
  return u->op == OP_BUFFER ? u->arg.p : NULL;
}

/* The compiled program for a kernel, from the in-memory cache or fresh. */
static cached_prog *get_program(sched_item *it) {
  uop_pool_push();
  /* one program per kernel, device and opts setting */
  char keystr[512];
  const char *spec = opts_override ? opts_override : getenv("TG_OPTS");
  snprintf(keystr, sizeof keystr, "%s|%s|%d", it->dev->name, spec ? spec : "", (int)tg_getenv_int("NOOPT", 0));
  uop *key = uop1(OP_NOOP, DT_VOID, it->ast, arg_str(keystr));
  pthread_mutex_lock(&cache_lock);
  cached_prog *cp = pm_get(&prog_cache, key);
  pthread_mutex_unlock(&cache_lock);
  if (cp) { uop_pool_pop(); return cp; }
  int debug = (int)tg_getenv_int("DEBUG", 0);
  if (debug >= 3) { fprintf(stderr, "kernel %s AST:\n", it->name); uop_print(stderr, it->ast); }
  double t0 = now_s();
  int max_cores = 1;
  uop *opt_ast = optimize(it, &max_cores);
  if (!opt_ast) { uop_pool_pop(); return NULL; }
  char *src = render_c(opt_ast, it->name);
  if (!src) { uop_pool_pop(); return NULL; }
  if (debug >= 4) fprintf(stderr, "%s\n", src);
  tg_program *p = it->dev->compile(it->dev, src, it->name);
  free(src);
  if (!p) { uop_pool_pop(); return NULL; }
  if (debug >= 2) fprintf(stderr, "compiled %-24s in %7.2f ms\n", it->name, (now_s() - t0) * 1e3);
  cp = tg_xcalloc(1, sizeof *cp);
  cp->prog = p;
  cp->flops = kernel_flops(it->ast);
  cp->max_cores = max_cores;
  p->max_cores = max_cores;
  uop_retain(key);
  pthread_mutex_lock(&cache_lock);
  pm_put(&prog_cache, key, cp);
  pthread_mutex_unlock(&cache_lock);
  uop_pool_pop();
  return cp;
}

static int run_copy(sched_item *it) {
  tg_buffer *dst = it->bufs[0], *src = it->bufs[1];
  if (buffer_alloc(dst) < 0 || buffer_alloc(src) < 0) return -1;
  void *tmp = tg_xmalloc(src->nbytes);
  int rc = buffer_copyout(src, tmp, src->nbytes);
  if (rc == 0) rc = buffer_copyin(dst, tmp, src->nbytes);
  free(tmp);
  counters_add_run(0, (double)src->nbytes * 2, 0);
  return rc;
}

static int run_item(sched_item *it, int debug) {
  if (!it->ast) return run_copy(it);
  cached_prog *cp = get_program(it);
  if (!cp) return -1;   /* the compiler's message names the kernel */
  void *ptrs[256];
  if (it->nbufs > 256) return tg_seterr("kernel %s: more than 256 buffers", it->name);
  double bytes = 0;
  for (int i = 0; i < it->nbufs; i++) {
    if (buffer_alloc(it->bufs[i]) < 0) return -1;
    ptrs[i] = it->bufs[i]->ptr;
    bytes += (double)it->bufs[i]->nbytes;
  }
  double t0 = now_s();
  int rc = it->dev->launch(it->dev, cp->prog, ptrs, it->nbufs, NULL, 0);
  double dt = now_s() - t0;
  if (rc < 0) return rc;
  counters_add_run(cp->flops, bytes, dt);
  if (debug >= 2) {
    tg_counters c = tg_get_counters();
    fprintf(stderr, "*** %-4s %6lld %-28s bufs %2d  tm %10.2fus  %9.2f GFLOPS  %8.2f GB/s\n", it->dev->name,
            (long long)c.kernels_run, it->name, it->nbufs, dt * 1e6, dt > 0 ? cp->flops / dt * 1e-9 : 0, dt > 0 ? bytes / dt * 1e-9 : 0);
  }
  return 0;
}

int engine_realize(uop *const *roots, int n, const char *default_device, ptrmap *becomes) {
  schedule s;
  if (schedule_create(roots, n, default_device, &s, becomes) < 0) return -1;
  counters_add_schedule();
  int debug = (int)tg_getenv_int("DEBUG", 0);
  int rc = 0;
  for (int i = 0; i < s.n && rc == 0; i++) rc = run_item(&s.v[i], debug);
  schedule_free(&s);
  return rc;
}
