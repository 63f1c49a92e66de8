/* realize.c: schedule -> compile (cached per AST) -> a linear of calls
 * (linear.h) -> run, with counters and DEBUG output like tinygrad's:
 * DEBUG=2 one line per kernel run, DEBUG=3 the kernel AST, DEBUG=4 the
 * source. */
#include <math.h>
#include <pthread.h>
#include <time.h>
#include "engine/realize.h"
#include "engine/linear.h"
#include "uop/symbolic.h"
#include "codegen/codegen.h"
#include "codegen/opts.h"
#include "engine/beam.h"
#include "engine/program_cache.h"
#include "engine/compile_jobs.h"
#include "runtime/cpu_compiler.h"
#include "runtime/thread_pool.h"
#include "schedule/call.h"
#include "schedule/schedule.h"
#include "util/counters.h"
#include "viz/viz.h"
#include "util/intern.h"
#include "util/settings.h"

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct {
  tg_program *prog;
  double flops;
  const char *varnames[LINEAR_MAX_VARS];   /* the kernel's vars[] order (names live in the AST) */
  int nvars;
  char *src;            /* the rendered source (tg_jit_export writes it out) */
  uint64_t writes;      /* bit i: the kernel stores to buffer i (i < 64) */
  char *names;          /* where varnames point when they came with the program (else into the AST) */
} cached_prog;

static uint64_t stores_mask(uop *ast) {
  uint64_t w = 0;
  uop_list l = uop_toposort(ast);
  for (int i = 0; i < l.n; i++)
    if (l.v[i]->op == OP_STORE && l.v[i]->src[0]->src[0]->arg.i < 64) w |= 1ULL << l.v[i]->src[0]->src[0]->arg.i;
  free(l.v);
  return w;
}

/* The engine's facts about ast (program_cache.h); nvars -1 when its
 * variables' names do not fit. */
static void facts_of(uop *ast, program_facts *f) {
  const char *names[LINEAR_MAX_VARS];
  f->flops = kernel_flops(ast);
  f->writes = stores_mask(ast);
  f->nvars = kernel_var_names(ast, names, LINEAR_MAX_VARS);
  size_t at = 0;
  for (int i = 0; i < f->nvars; i++) {
    size_t len = strlen(names[i]) + 1;
    if (at + len > sizeof f->names || strpbrk(names[i], " \t\n")) { f->nvars = -1; return; }
    memcpy(f->names + at, names[i], len);
    at += len;
  }
}

/* Opts for every kernel from tg_set_kernel_opts (or TG_OPTS); NULL: the
 * heuristic picks (NOOPT=1: none). */
static char *opts_override;

/* The entries of a spec, one per call: the whole spec when it names no
 * kernel (no '='), else each "NAME=OPTS" of "NAME=OPTS;NAME2=OPTS2" (name
 * NULL for the whole spec). *cursor starts at the spec. Returns 1 with an
 * entry, 0 after the last, -1 for an entry without '='. */
typedef struct { const char *name, *opts; size_t nlen, olen; } opts_entry;
static int next_entry(const char *spec, const char **cursor, opts_entry *out) {
  const char *e = *cursor;
  if (!e || !*e) return 0;
  if (!strchr(spec, '=')) { *out = (opts_entry){ NULL, e, 0, strlen(e) }; *cursor = NULL; return 1; }
  const char *end = strchr(e, ';'), *eq = strchr(e, '=');
  if (!eq || (end && eq > end)) return -1;
  *out = (opts_entry){ e, eq + 1, (size_t)(eq - e), end ? (size_t)(end - eq - 1) : strlen(eq + 1) };
  *cursor = end ? end + 1 : NULL;
  return 1;
}

/* The opts spec gives kernel `name`: 1 with them in buf, 0 when the spec
 * names other kernels only (the heuristic picks), -1 + tg_error for a
 * malformed entry. */
static int opts_for(const char *spec, const char *name, char *buf, size_t size) {
  opts_entry en;
  int got;
  for (const char *e = spec; (got = next_entry(spec, &e, &en)) != 0;) {
    if (got < 0) return tg_seterr("TG_OPTS: \"%s\": expected NAME=OPTS entries separated by ';'", e);
    if (en.name && !(name && strlen(name) == en.nlen && !strncmp(en.name, name, en.nlen))) continue;
    if (en.olen >= size) return tg_seterr("TG_OPTS: opts too long");
    memcpy(buf, en.opts, en.olen);
    buf[en.olen] = 0;
    return 1;
  }
  return 0;
}

int tg_set_kernel_opts(const char *spec) {
  opts_entry en;
  int got;
  for (const char *e = spec; (got = next_entry(spec, &e, &en)) != 0;) {
    if (got < 0) return tg_seterr("tg_set_kernel_opts: \"%s\": expected NAME=OPTS entries separated by ';'", e);
    kopt o[32];
    char buf[512];
    if (en.olen >= sizeof buf) return tg_seterr("tg_set_kernel_opts: opts too long");
    memcpy(buf, en.opts, en.olen);
    buf[en.olen] = 0;
    if (kopts_parse(buf, o, 32) < 0) return -1;
  }
  pthread_mutex_lock(&cache_lock);
  free(opts_override);
  opts_override = spec && *spec ? tg_xstrdup(spec) : NULL;
  pthread_mutex_unlock(&cache_lock);
  return 0;
}

/* JITBEAM: a BEAM width for the kernels a JIT's step compiles (set around
 * its first calls), 0 for none: then $BEAM applies. */
static _Thread_local int beam_override;
int engine_set_beam(int width) { int prev = beam_override; beam_override = width; return prev; }
static int beam_width(void) { return beam_override > 0 ? beam_override : (int)setting_int(SET_BEAM); }

/* Picks the opts for this kernel (TG_OPTS or tg_set_kernel_opts, BEAM, the
 * heuristic, or none with NOOPT=1) and runs codegen with them. */
static int generate(sched_item *it, kernel_program *kp, int debug) {
  const tg_renderer *ren = it->dev->renderer;
  const char *spec = opts_override ? opts_override : setting_str(SET_TG_OPTS);
  char mine[512];
  if (spec && *spec) {
    int found = opts_for(spec, it->name, mine, sizeof mine);
    if (found < 0) return -1;
    spec = found ? mine : NULL;
  }
  kopt o[32];
  int n = 0;
  bool heuristic = false;
  if (spec && *spec) {
    if ((n = kopts_parse(spec, o, 32)) < 0) return -1;
  } else if (it->ast->op == OP_SINK && it->ast->arg.kind == ARG_STR) {   /* a custom kernel's own (tg_k_opts) */
    if ((n = kopts_parse(it->ast->arg.s, o, 32)) < 0) return -1;
  } else if (beam_width() > 0) {
    if ((n = beam_opts(it, beam_width(), o, 32)) < 0) return -1;
  } else if (!setting_int(SET_NOOPT)) {
    n = kernel_heuristic_opts(it->ast, ren, tg_pool_threads(), o, 32);
    heuristic = true;   /* a pick that does not fit is skipped */
  }
  bool hook = debug >= 5 || viz_on;   /* DEBUG=5/6 and VIZ see the final codegen, not BEAM's trials */
  if (hook) viz_final_codegen(debug);
  int cg = codegen_program(it->ast, it->name, ren, o, n, heuristic, kp);
  if (hook) viz_final_codegen(-1);
  if (cg < 0) return -1;
  if (heuristic && debug >= 3) fprintf(stderr, "opts %s: %s\n", it->name, kp->opts[0] ? kp->opts : "(none)");   /* what TG_OPTS would reproduce */
  return 0;
}

static ptrmap prog_cache;   /* NOOP(ast, arg=device) -> cached_prog* */
static VEC(ptrmap) forgotten_programs;   /* engine_forget_programs: kept, never freed */

void engine_forget_programs(void) {
  pthread_mutex_lock(&cache_lock);
  VEC_PUSH(forgotten_programs, prog_cache);
  memset(&prog_cache, 0, sizeof prog_cache);
  pthread_mutex_unlock(&cache_lock);
  cpu_forget_loaded();
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

tg_buffer *uop_contiguous_buffer(const uop *u) {
  while (u->op == OP_RESHAPE || u->op == OP_SHRINK_VAR) u = u->src[0];
  return u->op == OP_BUFFER ? u->arg.p : NULL;
}

/* A kernel on its way to a program: found in the in-memory cache, or
 * rendered and waiting for the compiler. */
typedef struct {
  uop *key;            /* retained while pending */
  kernel_program kp;   /* rendered source and launch (pending only) */
  double t_render;
  program_facts facts; /* with kp (pending only) */
  cached_prog *cp;     /* the result */
  bool dup;            /* the same kernel as an earlier item of the schedule: filled from it */
} prep;

static kernel_observer observer;
static void *observer_ctx;
void engine_set_kernel_observer(kernel_observer fn, void *ctx) { observer = fn; observer_ctx = ctx; }

/* VIZ: a kernel compiled before the trace began is generated once more
 * (its program stays the cached one), so the trace has its AST, opts,
 * rewrites and source too. */
static void viz_record_cached(sched_item *it, int item) {
  kernel_program kp;
  viz_kernel_context(it->name, item);
  double t0 = now_s();
  if (generate(it, &kp, 0) == 0) viz_kernel(it->name, item, it->dev->name, it->ast, kp.opts, kp.src, now_s() - t0);
  viz_kernel_context(NULL, -1);
  free(kp.src);
}

/* The opts setting a kernel's program depends on besides its AST. */
static void opts_key(sched_item *it, char *buf, size_t n) {
  const char *spec = opts_override ? opts_override : setting_str(SET_TG_OPTS);
  snprintf(buf, n, "%s|%s|%d|%d", it->dev->name, spec ? spec : "", (int)setting_int(SET_NOOPT), beam_width());
}

/* opts_key of the last device, kept while one schedule is prepared (the
 * settings cannot change meanwhile; a model's schedule has hundreds of
 * items, and reading the settings is most of finding a program) */
static _Thread_local struct { const tg_device *dev; char s[512]; } key_memo;

static uop *program_key(sched_item *it) {
  /* one program per kernel, device and opts setting */
  if (key_memo.dev != it->dev) { opts_key(it, key_memo.s, sizeof key_memo.s); key_memo.dev = it->dev; }
  return uop1(OP_NOOP, DT_VOID, it->ast, arg_str(key_memo.s));
}

/* The program from an earlier process (program_cache.h), or a fresh one
 * that is then stored there. VIZ and DEBUG>=3 want to see codegen run. */
static int generate_or_load(sched_item *it, kernel_program *kp, program_facts *facts, int debug) {
  char *path = NULL;
  if (!viz_on && debug < 3) {
    char keystr[512];
    opts_key(it, keystr, sizeof keystr);
    path = program_cache_path(it, keystr);
  }
  if (path && program_cache_read(path, kp, facts)) { free(path); counters_add_render(true); return 0; }
  int rc = generate(it, kp, debug);
  if (rc == 0) counters_add_render(false), facts_of(it->ast, facts);
  if (rc == 0 && path && facts->nvars >= 0) program_cache_write(path, kp, facts);
  free(path);
  return rc;
}

/* Finds the program in memory, or optimizes and renders the kernel (once
 * per schedule: the layers of a model give the same kernel many times, and
 * optimizing a big one takes milliseconds). */
static int prepare(sched_item *it, prep *p, const prep *earlier, int nearlier, int item, int debug) {
  memset(p, 0, sizeof *p);
  if (observer) observer(it->ast, it->name, observer_ctx);
  uop_pool_push();
  uop *key = program_key(it);
  pthread_mutex_lock(&cache_lock);
  p->cp = pm_get(&prog_cache, key);
  pthread_mutex_unlock(&cache_lock);
  for (int j = 0; j < nearlier && !p->cp && !p->dup; j++) p->dup = earlier[j].kp.src && earlier[j].key == key;
  if (p->cp && viz_on && viz_first_sight(key)) viz_record_cached(it, item);
  if (p->cp || p->dup) { uop_pool_pop(); return 0; }
  if (debug >= 3) { fprintf(stderr, "kernel %s AST:\n", it->name); uop_print(stderr, it->ast); }
  double t0 = now_s();
  if (viz_on) viz_kernel_context(it->name, item);
  int gen = generate_or_load(it, &p->kp, &p->facts, debug);
  if (viz_on) viz_kernel_context(NULL, -1);
  if (gen < 0) { uop_pool_pop(); return -1; }
  p->t_render = now_s() - t0;
  if (viz_on) { viz_first_sight(key); viz_kernel(it->name, item, it->dev->name, it->ast, p->kp.opts, p->kp.src, p->t_render); }
  if (debug >= 4) fprintf(stderr, "%s\n", p->kp.src);
  uop_retain(key);
  p->key = key;
  uop_pool_pop();
  return 0;
}

/* Compiles every pending kernel at once (the compiler runs as processes in
 * parallel) and files the programs in the in-memory cache. */
static int compile_pending(sched_item *items, prep *ps, int n, int debug) {
  int npending = 0;   /* a job is 4 KB: sized by the kernels to compile, not the schedule's */
  for (int i = 0; i < n; i++) npending += ps[i].kp.src != NULL;
  compile_job *jobs = tg_xcalloc((size_t)(npending ? npending : 1), sizeof(compile_job));
  int *idx = tg_xcalloc((size_t)(npending ? npending : 1), sizeof(int)), nj = 0;
  for (int i = 0; i < n; i++) {
    if (!ps[i].kp.src) continue;
    /* the same kernel twice in one schedule: compile once */
    bool dup = false;
    for (int j = 0; j < nj && !dup; j++) dup = ps[idx[j]].key == ps[i].key;
    if (dup) continue;
    jobs[nj] = (compile_job){ .dev = items[i].dev, .kp = &ps[i].kp, .name = items[i].name };
    idx[nj++] = i;
  }
  compile_jobs_run(jobs, nj);
  int rc = 0;
  for (int j = 0; j < nj; j++) {
    prep *p = &ps[idx[j]];
    if (!jobs[j].prog) { if (rc == 0) tg_seterr("%s", jobs[j].err); rc = -1; continue; }
    if (debug >= 2) fprintf(stderr, "compiled %-24s in %7.2f ms (render %.2f ms)\n", items[idx[j]].name, jobs[j].seconds * 1e3, p->t_render * 1e3);
    if (debug >= 7) viz_debug_disasm(jobs[j].prog, items[idx[j]].name);
    if (viz_on) viz_compiled(items[idx[j]].name, jobs[j].seconds);
    cached_prog *cp = tg_xcalloc(1, sizeof *cp);
    cp->prog = jobs[j].prog;
    cp->flops = p->facts.flops;
    cp->writes = p->facts.writes;
    if (p->facts.nvars < 0) cp->nvars = kernel_var_names(items[idx[j]].ast, cp->varnames, LINEAR_MAX_VARS);
    else {   /* names kept with the program (the entry lives as long as the process) */
      cp->nvars = p->facts.nvars;
      char *names = cp->names = tg_xmalloc(sizeof p->facts.names);
      memcpy(names, p->facts.names, sizeof p->facts.names);
      for (int v = 0; v < cp->nvars; v++, names += strlen(names) + 1) cp->varnames[v] = names;
    }
    cp->src = tg_xstrdup(p->kp.src);   /* for tg_jit_export */
    pthread_mutex_lock(&cache_lock);
    cached_prog *had = pm_get(&prog_cache, p->key);
    if (!had) pm_put(&prog_cache, p->key, cp), p->key = NULL;   /* the cache owns the key now */
    pthread_mutex_unlock(&cache_lock);
    if (had) {   /* another thread compiled the same kernel meanwhile: keep its entry (ours would leak) */
      items[idx[j]].dev->program_free(items[idx[j]].dev, cp->prog);
      free(cp->src);
      free(cp->names);
      free(cp);
    }
  }
  /* fill every item from the cache (duplicates included) */
  for (int i = 0; i < n && rc == 0; i++) {
    if (ps[i].cp || (!ps[i].kp.src && !ps[i].dup)) continue;
    pthread_mutex_lock(&cache_lock);
    uop_pool_push();
    ps[i].cp = pm_get(&prog_cache, program_key(&items[i]));
    uop_pool_pop();
    pthread_mutex_unlock(&cache_lock);
  }
  for (int i = 0; i < n; i++) { free(ps[i].kp.src); ps[i].kp.src = NULL; if (ps[i].key) uop_release(ps[i].key); ps[i].key = NULL; }
  free(jobs); free(idx);
  return rc;
}

/* A kernel whose one store writes a zero constant to its one buffer (a
 * zeros tensor made contiguous: a KV cache, optimizer state). Whatever it
 * does not cover was never written, so memory that reads as zeros is a
 * valid result for all of it. */
static bool stores_only_zeros(const sched_item *it) {
  const uop *sink = it->ast;
  if (it->nbufs != 1 || sink->op != OP_SINK || sink->nsrc != 1 || sink->src[0]->op != OP_STORE) return false;
  const uop *v = sink->src[0]->src[sink->src[0]->nsrc - 1];
  if (v->op != OP_CONST) return false;
  if (v->arg.kind == ARG_INT) return v->arg.i == 0;
  return v->arg.kind == ARG_FLOAT && v->arg.f == 0 && !signbit(v->arg.f);
}

void engine_print_kernel_run(const char *tag, const char *device, const char *name, int nbufs, double dt, double flops, double bytes) {
  tg_counters c = tg_get_counters();
  fprintf(stderr, "%s %-4s %6lld %-28s bufs %2d  tm %10.2fus  %9.2f GFLOPS  %8.2f GB/s\n", tag, device, (long long)c.kernels_run, name,
          nbufs, dt * 1e6, dt > 0 ? flops / dt * 1e-9 : 0, dt > 0 ? bytes / dt * 1e-9 : 0);
}

double engine_now_s(void) { return now_s(); }

/* The kernels of a schedule whose calls stayed one item each
 * (schedule_create_calls), numbered for finding programs: item i's own
 * kernel, or a call's body's kernels, counted once per body. */
typedef struct {
  int *which;          /* item -> its entry in uniq (-1: a copy, or a call: see body_at) */
  ptrmap body_at;      /* call_body -> 1 + where its kernels' entries start in bwhich */
  VEC(int) bwhich;     /* a body's kernel -> its entry in uniq */
  VEC(const char *) bname;   /* a body's kernel -> its name, interned */
  VEC(sched_item) uniq;   /* one per distinct kernel (shallow copies; a body's kernel as the body has it) */
} kernel_index;

/* uniq entry for kernel it (an earlier one of the same AST and device, or new) */
static int kernel_entry(kernel_index *x, ptrmap *first, const sched_item *it) {
  intptr_t f = (intptr_t)pm_get(first, it->ast);
  if (f && x->uniq.v[f - 1].dev == it->dev) return (int)f - 1;
  if (!f) pm_put(first, it->ast, (void *)(intptr_t)(x->uniq.n + 1));
  VEC_PUSH(x->uniq, *it);
  return x->uniq.n - 1;
}

static void kernel_index_make(const schedule *s, kernel_index *x) {
  memset(x, 0, sizeof *x);
  ptrmap first = { 0 };   /* ast -> 1 + its entry in uniq */
  x->which = tg_xmalloc(sizeof(int) * (size_t)(s->n ? s->n : 1));
  for (int i = 0; i < s->n; i++) {
    const call_instance *c = s->v[i].call;
    x->which[i] = -1;
    if (c) {
      if (pm_get(&x->body_at, c->body)) continue;
      pm_put(&x->body_at, c->body, (void *)(intptr_t)(x->bwhich.n + 1));
      for (int k = 0; k < c->body->sched.n; k++) {
        const sched_item *it = &c->body->sched.v[k];
        VEC_PUSH(x->bwhich, it->ast ? kernel_entry(x, &first, it) : -1);
        VEC_PUSH(x->bname, tg_intern(it->name));
      }
    } else if (s->v[i].ast) x->which[i] = kernel_entry(x, &first, &s->v[i]);
  }
  pm_free(&first);
}

static void kernel_index_free(kernel_index *x) {
  free(x->which); pm_free(&x->body_at); VEC_FREE(x->bwhich); VEC_FREE(x->bname); VEC_FREE(x->uniq);
}

/* Where a call's body's kernels start in x->bwhich (and x->bname). */
static intptr_t body_at(const kernel_index *x, const call_instance *c) { return (intptr_t)pm_get(&x->body_at, c->body) - 1; }
static const int *body_which(const kernel_index *x, const call_instance *c) { return x->bwhich.v + body_at(x, c); }

/* Finds or makes the program of every distinct kernel, in schedule order. */
static int prepare_all(const schedule *s, kernel_index *x, prep *ps, int debug) {
  int rc = 0, u = 0;
  for (int i = 0; i < s->n && rc == 0; i++) {
    const call_instance *c = s->v[i].call;
    int nk = c ? c->body->sched.n : 1;
    const int *w = c ? body_which(x, c) : &x->which[i];
    for (int k = 0; k < nk && rc == 0; k++) {
      if (w[k] < 0) continue;
      const sched_item *it = c ? &c->body->sched.v[k] : &s->v[i];
      if (w[k] < u) { if (observer) observer(it->ast, it->name, observer_ctx); continue; }
      rc = prepare(&x->uniq.v[u], &ps[u], ps, u, i, debug);
      u++;
    }
  }
  return rc;
}

static linear_call call_of(const sched_item *it, const char *name, const cached_prog *cp, tg_buffer **bufs, bool in_block) {
  linear_call c = { .prog = cp ? cp->prog : NULL, .dev = it->dev, .bufs = bufs, .nbufs = it->nbufs, .bufs_in_block = in_block, .name = name,
                    .flops = cp ? cp->flops : 0, .src = cp ? cp->src : NULL, .writes = 1 /* a copy writes its destination */ };
  if (cp) { c.nvars = cp->nvars; c.varnames = cp->varnames; c.writes = cp->writes; }
  c.zeros = it->ast && stores_only_zeros(it);
  return c;
}

/* The scratch slots of a body's intermediates (linear_body): in order of
 * first use, each takes a slot of its device and size whose last use came
 * before, else a new one. */
static void plan_scratch(linear_body *lb) {
  const call_body *b = lb->body;
  int ni = b->internal.n;
  int *first = tg_xmalloc(sizeof(int) * (size_t)(2 * ni + 1)), *last = first + ni;
  for (int i = 0; i < ni; i++) first[i] = last[i] = -1;
  for (int k = 0; k < b->sched.n; k++)
    for (int j = 0; j < b->sched.v[k].nbufs; j++) {
      int r = b->roles[b->role_at[k] + j];
      if (r >= 0) continue;
      if (first[-r - 1] < 0) first[-r - 1] = k;
      last[-r - 1] = k;
    }
  lb->slot = tg_xmalloc(sizeof(int) * (size_t)(ni ? ni : 1));
  int *slot_last = tg_xmalloc(sizeof(int) * (size_t)(ni ? ni : 1));
  lb->scratch = tg_xmalloc(sizeof(tg_buffer *) * (size_t)(ni ? ni : 1));
  for (int k = 0; k < b->sched.n; k++)   /* intermediates in order of first use */
    for (int i = 0; i < ni; i++) {
      if (first[i] != k || b->internal_out[i]) continue;
      tg_buffer *t = b->internal.v[i];
      int s = -1;
      for (int q = 0; q < lb->nscratch && s < 0; q++)
        if (slot_last[q] < k && lb->scratch[q]->dev == t->dev && lb->scratch[q]->dtype == t->dtype && lb->scratch[q]->numel == t->numel) s = q;
      if (s < 0) { s = lb->nscratch++; lb->scratch[s] = buffer_new(t->dev, t->dtype, t->numel); }
      slot_last[s] = last[i];
      lb->slot[i] = s;
    }
  for (int i = 0; i < ni; i++) if (b->internal_out[i] || first[i] < 0) lb->slot[i] = -1;
  free(slot_last);
  free(first);
}

/* The linear's entry for body b's kernels (made on its first call). */
static linear_body *linear_body_of(linear *l, ptrmap *made, call_body *b, const prep *ps, const kernel_index *x, const call_instance *c) {
  linear_body *lb = pm_get(made, b);
  if (lb) return lb;
  lb = tg_xcalloc(1, sizeof *lb);
  call_body_retain(b);
  lb->body = b;
  lb->nk = b->sched.n;
  lb->k = tg_xmalloc(sizeof(linear_call) * (size_t)(lb->nk ? lb->nk : 1));
  lb->var_at = tg_xmalloc(sizeof(int) * (size_t)(lb->nk ? lb->nk : 1));
  const int *w = body_which(x, c);
  const char *const *names = x->bname.v + body_at(x, c);
  for (int k = 0; k < lb->nk; k++) {
    lb->k[k] = call_of(&b->sched.v[k], names[k], w[k] >= 0 ? ps[w[k]].cp : NULL, NULL, false);
    lb->var_at[k] = lb->nvars;
    lb->nvars += lb->k[k].nvars;
  }
  plan_scratch(lb);
  counters_add_work(lb->nk);
  lb->index = l->bodies.n;
  VEC_PUSH(l->bodies, lb);
  pm_put(made, b, lb);
  return lb;
}

/* The linear of a schedule: each item with its program and its buffers
 * (taken over from the item, with their references); a function call one
 * entry (its instance taken over from the item) over its body's kernels,
 * made once per body. */
static void linear_of(schedule *s, const prep *ps, const kernel_index *x, linear *l) {
  if (l->cap < l->n + s->n) { l->cap = l->n + s->n; l->v = tg_xrealloc(l->v, sizeof(linear_call) * (size_t)l->cap); }
  ptrmap made = { 0 };   /* call_body -> its linear_body */
  for (int i = 0; i < s->n; i++) {
    sched_item *it = &s->v[i];
    call_instance *c = it->call;
    if (!c) {
      l->v[l->n++] = call_of(it, tg_intern(it->name), x->which[i] >= 0 ? ps[x->which[i]].cp : NULL, it->bufs, false);
      it->bufs = NULL; it->nbufs = 0;
      continue;
    }
    const linear_body *lb = linear_body_of(l, &made, c->body, ps, x, c);
    l->v[l->n++] = (linear_call){ .call = c, .body = lb, .bufs = c->tab, .nbufs = c->body->nparams + c->body->internal.n, .dev = it->dev, .name = lb->nk ? lb->k[0].name : "" };
    it->call = NULL;
  }
  pm_free(&made);
  counters_add_work(s->n);
}

/* Schedules and compiles into l; vs: the VIZ schedule's id (0: none). */
static int schedule_to_linear(uop *const *roots, int n, const char *default_device, ptrmap *becomes, linear *l, int vs) {
  schedule s;
  uop_simplify_memo_begin();   /* scheduling and optimizing simplify the same index math many times */
  int sc = schedule_create_calls(roots, n, default_device, &s, becomes);
  if (sc >= 0 && vs) schedule_expand_calls(&s);   /* VIZ shows each kernel with its buffers */
  if (vs) viz_schedule_scheduled(vs, &s, sc >= 0);
  if (sc < 0) { uop_simplify_memo_end(); return -1; }
  counters_add_schedule();
  int debug = (int)setting_int(SET_DEBUG);
  double t_phase = vs ? now_s() : 0;
  key_memo.dev = NULL;
  /* one prep per distinct kernel: a kernel met again in this schedule (a
   * model's layers, every call of a function body) takes the program found
   * for its first item, so finding programs costs per kernel, not per item */
  kernel_index x;
  kernel_index_make(&s, &x);
  int nu = x.uniq.n;
  prep *ps = tg_xcalloc((size_t)(nu ? nu : 1), sizeof(prep));
  int rc = prepare_all(&s, &x, ps, debug);
  uop_simplify_memo_end();
  if (rc == 0) rc = compile_pending(x.uniq.v, ps, nu, debug);
  else for (int i = 0; i < nu; i++) { free(ps[i].kp.src); if (ps[i].key) uop_release(ps[i].key); }
  for (int i = 0; i < nu && rc == 0; i++)
    if (!ps[i].cp) rc = tg_seterr("internal: kernel %s has no program", x.uniq.v[i].name);
  if (vs) viz_span("compile", vs, t_phase);
  if (rc == 0) linear_of(&s, ps, &x, l);
  free(ps);
  kernel_index_free(&x);
  schedule_free(&s);
  return rc;
}

int engine_linearize(uop *const *roots, int n, const char *default_device, ptrmap *becomes, linear *l) {
  int vs = viz_on ? viz_schedule_begin(roots, n) : 0;
  int rc = schedule_to_linear(roots, n, default_device, becomes, l, vs);
  if (vs) viz_schedule_end(vs);
  return rc;
}

int engine_realize(uop *const *roots, int n, const char *default_device, ptrmap *becomes) {
  int vs = viz_on ? viz_schedule_begin(roots, n) : 0;   /* VIZ: the tensor graph, then the kernel list */
  linear l = { 0 };
  int rc = schedule_to_linear(roots, n, default_device, becomes, &l, vs);
  double t_phase = vs ? now_s() : 0;
  if (rc == 0) rc = linear_run(&l, NULL);
  if (vs) { viz_span("run", vs, t_phase); viz_schedule_end(vs); }
  linear_free(&l);
  return rc;
}
