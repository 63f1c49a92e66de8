/* beam.c: see beam.h. */
#include <math.h>
#include <time.h>
#include <unistd.h>
#include "engine/beam.h"
#include "codegen/codegen.h"
#include "engine/compile_jobs.h"
#include "engine/vars.h"
#include "runtime/thread_pool.h"
#include "util/util.h"
#include "util/settings.h"

#define BEAM_MAX_OPTS 8
#define BEAM_DEPTH 4
#define BEAM_PLAIN_START_S 0.005   /* see beam_opts */

typedef struct { kopt o[BEAM_MAX_OPTS]; int n; double t; } cand;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The CPU model, so a cached choice is only reused on the same kind of machine. */
static const char *machine_id(void) {
  static char id[256];
  if (id[0]) return id;
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[512];
  snprintf(id, sizeof id, "unknown");
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "model name", 10)) { char *c = strchr(line, ':'); if (c) snprintf(id, sizeof id, "%s", c + 2); break; }
  if (f) fclose(f);
  size_t n = strlen(id);
  snprintf(id + n, sizeof id - n, "|cores=%d", tg_pool_threads());
  return id;
}

static char *cache_file(sched_item *it, int width) {
  char *ast = uop_to_string(it->ast);
  char flags[512];
  /* the compile flags too: a winner found for other code generation (say
   * 256-bit vectors) need not win now */
  snprintf(flags, sizeof flags, "%s|beam=%d|%s|%s", it->dev->name, width, machine_id(), it->dev->compile_flags ? it->dev->compile_flags : "");
  char *p = compile_cache_path(ast, "beam-v2", flags, ".opts");
  free(ast);
  return p;
}

/* Best-of-3 time of one launch on the scratch buffers; +inf on failure. */
static double time_program(tg_device *dev, tg_program *p, void **bufs, int n, uop *ast, double give_up) {
  double best = INFINITY;
  const char *names[32];
  int64_t vars[32];
  int nv = kernel_var_names(ast, names, 32);
  if (vars_values(names, nv, vars) < 0) return INFINITY;
  for (int r = 0; r < 3; r++) {
    double dt;
    if (device_launch_timed(dev, p, bufs, n, vars, nv, &dt) < 0) return INFINITY;
    if (dt < best) best = dt;
    if (best > give_up) break;   /* clearly slower than the leader: stop early */
  }
  return best;
}

/* a symbolic axis has nothing to split */
static int64_t rsize_of(const uop *r) { return range_is_symbolic(r) ? 1 : range_max_size(r); }

/* Every single opt that could extend c. */
static int actions(uop *ast, const tg_renderer *ren, kopt *out, int max) {
  uop *axes[64];
  int fr;
  int n = kernel_axes(ast, axes, 64, &fr);
  int k = 0;
  static const int up[] = { 2, 3, 4, 5, 8, 16 }, un[] = { 2, 4, 8, 16, 32 };
  /* only amounts that divide the axis */
  for (int i = 0; i < fr; i++)
    for (int j = 0; j < 6 && k < max; j++) if (rsize_of(axes[i]) % up[j] == 0) out[k++] = (kopt){ OPT_UPCAST, i, up[j] };
  for (int i = fr; i < n; i++)
    for (int j = 0; j < 5 && k < max; j++) if (rsize_of(axes[i]) % un[j] == 0) out[k++] = (kopt){ OPT_UNROLL, i - fr, un[j] };
  if (ren->has_threads && fr > 0 && tg_pool_threads() > 1 && k < max) out[k++] = (kopt){ OPT_THREAD, 0, tg_pool_threads() };
  if (ren->has_local) {   /* work groups: threads along outputs, grouped reduces */
    static const int loc[] = { 2, 4, 8, 16, 32, 64, 128, 256 };
    for (int i = 0; i < fr; i++)
      for (int j = 0; j < 8 && k < max; j++) if (loc[j] <= ren->max_local && rsize_of(axes[i]) % loc[j] == 0) out[k++] = (kopt){ OPT_LOCAL, i, loc[j] };
    for (int i = fr; i < n; i++)
      for (int j = 2; j < 8 && k + 1 < max; j++)
        if (loc[j] <= ren->max_local && rsize_of(axes[i]) % loc[j] == 0) {
          out[k++] = (kopt){ OPT_GROUP, i - fr, loc[j] };
          out[k++] = (kopt){ OPT_GROUPTOP, i - fr, loc[j] };
        }
  }
  return k;
}

/* Compiles and times candidates; fills their t. */
static void evaluate(sched_item *it, cand *cs, int nc, void **bufs, double best) {
  compile_job *jobs = tg_xcalloc((size_t)nc, sizeof(compile_job));
  kernel_program *kps = tg_xcalloc((size_t)nc, sizeof(kernel_program));
  for (int i = 0; i < nc; i++) {
    cs[i].t = INFINITY;
    if (codegen_program(it->ast, it->name, it->dev->renderer, cs[i].o, cs[i].n, false, &kps[i]) < 0) kps[i].src = NULL;
  }
  /* compile the ones that rendered, all at once */
  int *map = tg_xcalloc((size_t)nc, sizeof(int)), nt = 0;
  for (int i = 0; i < nc; i++) if (kps[i].src) { jobs[nt] = (compile_job){ .dev = it->dev, .kp = &kps[i], .name = it->name }; map[nt++] = i; }
  compile_jobs_run(jobs, nt);
  for (int j = 0; j < nt; j++) {
    int i = map[j];
    tg_program *p = jobs[j].prog;
    if (!p) continue;
    cs[i].t = time_program(it->dev, p, bufs, it->nbufs, it->ast, best * 3);
    it->dev->program_free(it->dev, p);
  }
  for (int i = 0; i < nc; i++) free(kps[i].src);
  free(kps); free(jobs); free(map);
  tg_clear_error();
}

static int by_time(const void *a, const void *b) {
  double x = ((const cand *)a)->t, y = ((const cand *)b)->t;
  return x < y ? -1 : x > y;
}

int beam_opts(sched_item *it, int width, kopt *out, int max) {
  char *path = cache_file(it, width);
  /* a cached choice: read and use it */
  if (path) {
    FILE *f = fopen(path, "r");
    if (f) {
      char spec[1024] = "";
      if (!fgets(spec, sizeof spec, f)) spec[0] = 0;
      fclose(f);
      spec[strcspn(spec, "\n")] = 0;
      free(path);
      return kopts_parse(spec, out, max);
    }
  }
  /* scratch buffers: candidates must not touch the real data */
  void *bufs[256];
  int nb = it->nbufs < 256 ? it->nbufs : 256;
  for (int i = 0; i < nb; i++) {
    bufs[i] = it->dev->alloc(it->dev, it->bufs[i]->nbytes);
    if (bufs[i]) {   /* zeros: no NaNs or denormals to slow a candidate down */
      void *z = tg_xcalloc(1, it->bufs[i]->nbytes ? it->bufs[i]->nbytes : 1);
      it->dev->copyin(it->dev, bufs[i], z, it->bufs[i]->nbytes);
      free(z);
    }
  }
  double t0 = now_s();
  /* start from the heuristic's choice and from the plain kernel. The plain
   * kernel is timed (once: it gives up past 3x the heuristic) only when the
   * heuristic's kernel is quick: unoptimized, a big matmul or conv runs for
   * seconds and never wins. */
  cand start[2] = { { .n = 0 }, { .n = 0 } };
  start[0].n = kernel_heuristic_opts(it->ast, it->dev->renderer, tg_pool_threads(), start[0].o, BEAM_MAX_OPTS);
  int nstart = 1;
  if (start[0].n) {
    evaluate(it, start, 1, bufs, INFINITY);
    if (start[0].t <= BEAM_PLAIN_START_S) {
      evaluate(it, start + 1, 1, bufs, start[0].t);
      nstart = 2;
    }
  } else evaluate(it, start, 1, bufs, INFINITY);
  qsort(start, (size_t)nstart, sizeof(cand), by_time);
  cand beam[64];
  int nbeam = nstart;
  memcpy(beam, start, sizeof(cand) * (size_t)nstart);
  cand best = start[0];
  int tried = nstart;
  for (int depth = 0; depth < BEAM_DEPTH; depth++) {
    cand *next = NULL;
    int nn = 0, cap = 0;
    for (int b = 0; b < nbeam; b++) {
      uop_pool_push();
      uop *a = it->ast;
      kernel_apply_opts(&a, beam[b].o, beam[b].n, it->dev->renderer);
      kopt acts[128];
      int na = actions(a, it->dev->renderer, acts, 128);
      uop_pool_pop();
      for (int j = 0; j < na; j++) {
        if (beam[b].n >= BEAM_MAX_OPTS) break;
        cand c = beam[b];
        c.o[c.n++] = acts[j];
        /* only candidates whose opts apply */
        uop_pool_push();
        uop *t = it->ast;
        bool ok = kernel_apply_opts(&t, c.o, c.n, it->dev->renderer) == 0;
        uop_pool_pop();
        if (!ok) continue;
        if (nn == cap) { cap = cap ? cap * 2 : 64; next = tg_xrealloc(next, sizeof(cand) * (size_t)cap); }
        next[nn++] = c;
      }
    }
    tg_clear_error();
    if (!nn) { free(next); break; }
    evaluate(it, next, nn, bufs, best.t);
    tried += nn;
    qsort(next, (size_t)nn, sizeof(cand), by_time);
    bool improved = next[0].t < best.t * 0.98;
    if (next[0].t < best.t) best = next[0];
    nbeam = nn < width ? nn : width;
    if (nbeam > 64) nbeam = 64;
    memcpy(beam, next, sizeof(cand) * (size_t)nbeam);
    free(next);
    if (!improved) break;
  }
  for (int i = 0; i < nb; i++) if (bufs[i]) it->dev->free(it->dev, bufs[i], it->bufs[i]->nbytes);
  char spec[1024];
  kopts_format(best.o, best.n, spec, sizeof spec);
  if (setting_int(SET_DEBUG) >= 2)
    fprintf(stderr, "beam %-24s %4d candidates in %6.2f s: %s (%.2f us)\n", it->name, tried, now_s() - t0, spec[0] ? spec : "(no opts)", best.t * 1e6);
  if (path) {
    /* write atomically: other processes may be searching the same kernel */
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (f) { fprintf(f, "%s\n", spec); fclose(f); rename(tmp, path); }
    free(path);
  }
  int n = best.n < max ? best.n : max;
  memcpy(out, best.o, sizeof(kopt) * (size_t)n);
  return n;
}
