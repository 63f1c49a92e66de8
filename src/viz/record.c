/* record.c: the VIZ recorder (see viz.h): tg_viz_begin/end, the hooks the
 * engine, the rewriter and the runtime call while viz_on is set, and VIZ=1 /
 * VIZ=-1 from the environment.
 *
 * Every event becomes one JSON line, appended to a buffer that goes to the
 * file with write(2) at line boundaries (so a crash leaves whole lines, and
 * a forked child that exits never writes the parent's buffer twice). The
 * rules that fire inside one graph_rewrite are collected per thread and
 * written as one "pass" line when it returns; passes where nothing fired
 * leave no record. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "tg.h"
#include "viz/viz.h"
#include "codegen/codegen.h"
#include "schedule/schedule.h"
#include "runtime/buffer.h"
#include "util/settings.h"

int viz_on;
_Thread_local int viz_codegen_hook;

#define FLUSH_AT (1 << 16)
#define MAX_STEPS 200          /* rule firings written per pass (the rest counted) */
#define MAX_PASS_DEPTH 8       /* rule callbacks may rewrite too: passes nest */
#define MAX_GRAPH_NODES 20000  /* a bigger graph is recorded by its size only */
#define MAX_SCHED_ITEMS 4096
#define SEXPR_CHARS 320        /* a rewrite's before/after, as text */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int fd = -1;
static pid_t rec_pid;
static strbuf wbuf;
static bool write_failed;
static char cur_path[4096];
static double t_start;
static size_t written, max_detail;
static long dropped, npasses, nrules;
static int sched_counter, file_seq, env_level;
static ptrmap seen;   /* program keys whose kernel this trace has */

static _Thread_local int ctx_sched;
static _Thread_local double ctx_sched_t0;
static _Thread_local char ctx_kernel[96];
static _Thread_local int ctx_item = -1;
static _Thread_local char *lowered_text;   /* the kernel being generated: its linearized program */

static double now_us(void) { return (tg_now_seconds() - t_start) * 1e6; }

/* ---- JSON text */

/* Length of the valid UTF-8 sequence at s, or 0. */
static int utf8_len(const unsigned char *s) {
  int n = s[0] >= 0xf0 && s[0] < 0xf5 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
  for (int i = 1; i < n; i++) if ((s[i] & 0xc0) != 0x80) return 0;
  return n;
}

/* A JSON string of at most max bytes of s (a "..." says it was cut). */
static void jstr_n(strbuf *b, const char *s, size_t max) {
  if (!s) { sb_puts(b, "null"); return; }
  sb_append(b, "\"", 1);
  size_t i = 0;
  for (; s[i] && i < max; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') { char e[2] = { '\\', (char)c }; sb_append(b, e, 2); }
    else if (c == '\n') sb_append(b, "\\n", 2);
    else if (c == '\t') sb_append(b, "\\t", 2);
    else if (c < 0x20) sb_printf(b, "\\u%04x", c);
    else if (c < 0x80) sb_append(b, &s[i], 1);
    else {
      int n = utf8_len((const unsigned char *)s + i);
      if (n) { sb_append(b, &s[i], (size_t)n); i += (size_t)n - 1; }
      else sb_append(b, "?", 1);
    }
  }
  if (s[i]) sb_puts(b, "...");
  sb_append(b, "\"", 1);
}
static void jstr(strbuf *b, const char *s) { jstr_n(b, s, (size_t)-1); }

static void jint(strbuf *b, long long v);
static void jus(strbuf *b, double us);

/* Starts an event line: {"ev":"NAME","ts":T */
static void ev_open(strbuf *b, const char *ev, double ts) {
  sb_puts(b, "{\"ev\":");
  jstr(b, ev);
  sb_puts(b, ",\"ts\":");
  jus(b, ts);
}

static void flush_locked(void) {
  size_t off = 0;
  while (off < wbuf.n && fd >= 0) {
    ssize_t w = write(fd, wbuf.s + off, wbuf.n - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) { write_failed = true; break; }
    off += (size_t)w;
  }
  wbuf.n = 0;
  if (wbuf.s) wbuf.s[0] = 0;
}

/* Writes the line (closing its brace); detail lines count against the
 * size cap. Frees b. */
static void emit(strbuf *b, bool detail) {
  sb_puts(b, "}\n");
  pthread_mutex_lock(&lock);
  if (fd >= 0) {
    if (detail && written + b->n > max_detail) dropped++;
    else {
      sb_append(&wbuf, b->s, b->n);
      written += b->n;
      if (wbuf.n >= FLUSH_AT) flush_locked();
    }
  }
  pthread_mutex_unlock(&lock);
  sb_free(b);
}

/* ---- graphs and nodes as data */

/* An integer, without printf (graphs have many). */
static void jint(strbuf *b, long long v) {
  char t[24];
  int i = 24;
  unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
  do { t[--i] = (char)('0' + u % 10); u /= 10; } while (u);
  if (v < 0) t[--i] = '-';
  sb_append(b, t + i, (size_t)(24 - i));
}

/* A time in µs with 3 decimals (ns resolution), without printf. */
static void jus(strbuf *b, double us) {
  long long ns = (long long)llround(us * 1e3);
  if (ns < 0) { sb_append(b, "-", 1); ns = -ns; }
  jint(b, ns / 1000);
  char f[4] = { '.', (char)('0' + ns / 100 % 10), (char)('0' + ns / 10 % 10), (char)('0' + ns % 10) };
  sb_append(b, f, 4);
}

/* A count (flops, bytes): an integer when it is one. */
static void jnum(strbuf *b, double v) {
  if (v == (double)(long long)v && fabs(v) < 9e15) jint(b, (long long)v);
  else sb_printf(b, "%.17g", v);
}

/* The dtype's name; nodes in a row mostly share one, so the last is kept. */
static void dtype_json(strbuf *b, dtype_t dt) {
  static _Thread_local dtype_t last;
  static _Thread_local char s[32];
  if (!s[0] || memcmp(&last, &dt, sizeof dt)) { dt_str(dt, s, (int)sizeof s); last = dt; }
  jstr(b, s);
}

/* A graph node's first fields, up to its source list: [op, dtype, arg, [
 * (arg cut at argcap bytes; a comma first unless it is the first node). */
static void node_open(strbuf *b, const uop *u, bool first, int argcap) {
  char arg[256] = "";
  if (u->arg.kind != ARG_NONE) uop_arg_str(u, arg, argcap < (int)sizeof arg ? argcap : (int)sizeof arg);
  sb_puts(b, first ? "[" : ",[");
  jstr(b, uop_op_name(u->op));
  sb_puts(b, ",");
  dtype_json(b, u->dtype);
  sb_puts(b, ",");
  jstr(b, arg);
  sb_puts(b, ",[");
}

/* The graph of the roots: {"nodes":[[op, dtype, arg, [srcs], shape|null], ...]}
 * in topological order (sources first), or {"size":N} when too big. */
static void graph_json(strbuf *b, uop *const *roots, int n) {
  ptrmap num = { 0 };
  VEC(uop *) order = { 0 };
  for (int r = 0; r < n && order.n <= MAX_GRAPH_NODES; r++) {
    if (!roots[r]) continue;
    uop_list l = uop_toposort(roots[r]);
    for (int i = 0; i < l.n; i++)
      if (!pm_get(&num, l.v[i])) { VEC_PUSH(order, l.v[i]); pm_put(&num, l.v[i], (void *)(intptr_t)order.n); }
    free(l.v);
  }
  if (order.n > MAX_GRAPH_NODES) {
    sb_printf(b, "{\"size\":%d}", order.n);
  } else {
    sb_puts(b, "{\"nodes\":[");
    for (int i = 0; i < order.n; i++) {
      uop *u = order.v[i];
      node_open(b, u, i == 0, 256);
      for (int s = 0; s < u->nsrc; s++) { if (s) sb_append(b, ",", 1); jint(b, (int)(intptr_t)pm_get(&num, u->src[s]) - 1); }
      sb_puts(b, "],");
      if (u->ndim >= 0) {
        sb_puts(b, "[");
        for (int d = 0; d < u->ndim; d++) { if (d) sb_append(b, ",", 1); jint(b, (long long)u->shape[d]); }
        sb_puts(b, "]");
      } else sb_puts(b, "null");
      sb_puts(b, "]");
    }
    sb_puts(b, "]}");
  }
  pm_free(&num);
  VEC_FREE(order);
}

/* A node as a short s-expression: (ADD.i32 (MUL.i32 r0 4) 1); sources
 * deeper than a few levels, and text past `budget`, become "..". */
static void sexpr(strbuf *b, const uop *u, int depth, size_t limit) {
  if (b->n >= limit) { sb_puts(b, ".."); return; }
  char arg[64], dts[32];
  uop_arg_str(u, arg, (int)sizeof arg);
  dt_str(u->dtype, dts, (int)sizeof dts);
  if (u->op == OP_CONST) { sb_printf(b, "%s", arg); return; }
  if (u->op == OP_RANGE && u->arg.kind == ARG_INTS && u->arg.n > 0) { sb_printf(b, "r%lld", (long long)u->arg.v[0]); return; }
  if (u->op == OP_DEFINE_VAR || u->op == OP_DEFINE_GLOBAL) { sb_printf(b, "%s%s", u->op == OP_DEFINE_GLOBAL ? "g" : "", arg); return; }
  bool paren = u->nsrc > 0;
  sb_printf(b, "%s%s.%s%s%s", paren ? "(" : "", uop_op_name(u->op), dts, arg[0] ? " " : "", arg);
  for (int i = 0; i < u->nsrc; i++) {
    sb_puts(b, " ");
    if (depth <= 0) { sb_puts(b, ".."); break; }
    sexpr(b, u->src[i], depth - 1, limit);
  }
  if (paren) sb_puts(b, ")");
}

static void node_text(strbuf *b, const uop *u) {
  strbuf t = { 0 };
  sexpr(&t, u, 4, SEXPR_CHARS);
  jstr(b, t.s ? t.s : "");
  sb_free(&t);
}

/* A rewrite's neighbourhood as a graph, for the web page: the nodes within
 * STEP_GRAPH_DEPTH sources of `before` and of `after` (breadth first, at
 * most STEP_GRAPH_NODES each), merged. Nodes are uops, so one that is in
 * both is the same pointer: side 1 only before (replaced), 2 only after
 * (new), 3 both (kept). {"b":I,"a":J,"nodes":[[op, dtype, arg, [srcs],
 * side], ...]}; a source left out is -1. */
#define STEP_GRAPH_DEPTH 3
#define STEP_GRAPH_NODES 24
typedef struct { const uop *u; int side; } step_node;

static int step_find(const step_node *v, int n, const uop *u) {
  for (int i = 0; i < n; i++) if (v[i].u == u) return i;
  return -1;
}

/* Adds root's neighbourhood (breadth first, so a node gets its nearest
 * depth) to v[0..n), marking side; the new count. A kept node's sources are
 * kept too (uops do not change), so they are marked on the way. */
static int step_collect(step_node *v, int n, const uop *root, int side) {
  const uop *queue[STEP_GRAPH_NODES];
  int nq = 0, qi = 0;
  queue[nq++] = root;
  for (int depth = 0; qi < nq && depth <= STEP_GRAPH_DEPTH; depth++) {
    for (int level_end = nq; qi < level_end; qi++) {
      const uop *u = queue[qi];
      int k = step_find(v, n, u);
      if (k >= 0) v[k].side |= side;
      else v[n++] = (step_node){ u, side };
      for (int s = 0; s < u->nsrc && depth < STEP_GRAPH_DEPTH && nq < STEP_GRAPH_NODES; s++) {
        bool queued = false;
        for (int q = 0; q < nq && !queued; q++) queued = queue[q] == u->src[s];
        if (!queued) queue[nq++] = u->src[s];
      }
    }
  }
  return n;
}

static void step_graph(strbuf *b, const uop *before, const uop *after) {
  step_node v[2 * STEP_GRAPH_NODES];
  int n = step_collect(v, 0, before, 1);
  n = step_collect(v, n, after, 2);
  sb_puts(b, "{\"b\":");
  jint(b, step_find(v, n, before));
  sb_puts(b, ",\"a\":");
  jint(b, step_find(v, n, after));
  sb_puts(b, ",\"nodes\":[");
  for (int i = 0; i < n; i++) {
    const uop *u = v[i].u;
    node_open(b, u, i == 0, 96);
    for (int s = 0; s < u->nsrc; s++) { if (s) sb_append(b, ",", 1); jint(b, step_find(v, n, u->src[s])); }
    sb_puts(b, "],");
    jint(b, v[i].side);
    sb_puts(b, "]");
  }
  sb_puts(b, "]}");
}

/* ---- starting and ending */

static int mkdirs(const char *dir) {
  char p[4096];
  if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) return tg_seterr("tg_viz_begin: directory name too long");
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = 0;
    if (mkdir(p, 0777) < 0 && errno != EEXIST) return tg_seterr("tg_viz_begin: cannot create %s: %s", p, strerror(errno));
    *s = '/';
  }
  if (mkdir(p, 0777) < 0 && errno != EEXIST) return tg_seterr("tg_viz_begin: cannot create %s: %s", p, strerror(errno));
  return 0;
}

int tg_viz_begin(const char *dir) {
  if (!dir || !*dir) dir = setting_str(SET_TG_VIZ_DIR);
  if (!dir || !*dir) dir = "tg-viz";
  pthread_mutex_lock(&lock);
  if (fd >= 0) {
    pthread_mutex_unlock(&lock);
    return tg_seterr("tg_viz_begin: a trace is already being recorded (to %s); tg_viz_end it first", cur_path);
  }
  if (mkdirs(dir) < 0) { pthread_mutex_unlock(&lock); return -1; }
  char path[4096];
  int len = snprintf(path, sizeof path, "%s/trace-%d-%d.jsonl", dir, (int)getpid(), ++file_seq);
  if (len >= (int)sizeof path) { pthread_mutex_unlock(&lock); return tg_seterr("tg_viz_begin: directory name too long"); }
  int f = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (f < 0) { pthread_mutex_unlock(&lock); return tg_seterr("tg_viz_begin: cannot create %s: %s", path, strerror(errno)); }
  snprintf(cur_path, sizeof cur_path, "%s", path);
  fd = f;
  rec_pid = getpid();
  write_failed = false;
  written = 0;
  dropped = npasses = nrules = 0;
  max_detail = (size_t)setting_int(SET_TG_VIZ_MAX_MB) << 20;
  t_start = tg_now_seconds();
  char when[64] = "";
  time_t tt = time(NULL);
  struct tm tm;
  if (localtime_r(&tt, &tm)) strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S%z", &tm);
  strbuf b = { 0 };
  sb_printf(&b, "{\"tg_viz\":%d,\"format\":\"tg-viz-trace\",\"pid\":%d,\"started\":", VIZ_FORMAT_VERSION, (int)rec_pid);
  jstr(&b, when);
  sb_puts(&b, ",\"time_unit\":\"us\"}\n");
  sb_append(&wbuf, b.s, b.n);
  sb_free(&b);
  flush_locked();
  __atomic_store_n(&viz_on, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&lock);
  return 0;
}

/* Stops; with `discard` the file is removed (the `tg viz` command itself,
 * started under VIZ=-1, leaves no trace of its own). */
static int viz_stop(bool discard) {
  pthread_mutex_lock(&lock);
  if (fd < 0) { pthread_mutex_unlock(&lock); return tg_seterr("tg_viz_end: no trace is being recorded (tg_viz_begin or VIZ=-1 starts one)"); }
  __atomic_store_n(&viz_on, 0, __ATOMIC_RELEASE);
  strbuf b = { 0 };
  ev_open(&b, "end", now_us());
  sb_printf(&b, ",\"passes\":%ld,\"rules\":%ld,\"dropped\":%ld}\n", npasses, nrules, dropped);
  sb_append(&wbuf, b.s, b.n);
  sb_free(&b);
  flush_locked();
  bool failed = write_failed;
  if (close(fd) < 0) failed = true;
  fd = -1;
  sb_free(&wbuf);
  pm_free(&seen);
  if (discard) unlink(cur_path);
  pthread_mutex_unlock(&lock);
  if (failed && !discard) return tg_seterr("tg_viz_end: writing %s failed (disk full?): the trace is incomplete", cur_path);
  return 0;
}

int tg_viz_end(void) { return viz_stop(false); }
void viz_discard(void) { if (fd >= 0) viz_stop(true); }

const char *tg_viz_file(void) { return cur_path[0] ? cur_path : NULL; }

void tg_profile_marker(const char *name) {
  if (!viz_on) return;
  strbuf b = { 0 };
  ev_open(&b, "marker", now_us());
  sb_puts(&b, ",\"name\":");
  jstr_n(&b, name ? name : "", 200);
  emit(&b, false);
}

/* VIZ=1 serves the page at exit until Ctrl-C/SIGTERM, on $TG_VIZ_PORT
 * (8000; 0 any free port) of $TG_VIZ_HOST (127.0.0.1).
 * TG_VIZ_SERVE_SECONDS=N stops it after N seconds (scripts and tests: a
 * test that sets VIZ=1 must set it too, or it never ends). */
static void viz_atexit(void) {
  if (getpid() != rec_pid || fd < 0) return;   /* a forked child, or already ended */
  if (tg_viz_end() < 0) { fprintf(stderr, "tg: VIZ: %s\n", tg_error()); return; }
  fprintf(stderr, "tg: VIZ trace saved to %s\n", cur_path);
  if (env_level <= 0) return;
  fflush(stdout);
  const char *host = setting_str(SET_TG_VIZ_HOST);
  viz_web_options o = { host && *host ? host : NULL, (int)setting_int(SET_TG_VIZ_PORT), false,
                        (double)setting_int(SET_TG_VIZ_SERVE_SECONDS) };
  if (viz_web_serve(cur_path, &o, stderr) < 0) fprintf(stderr, "tg: VIZ=1: %s (the trace is saved: `tg viz --serve %s`)\n", tg_error(), cur_path);
}

/* VIZ=1 or VIZ=-1: record from the start of the process to its exit. */
__attribute__((constructor)) static void viz_from_env(void) {
  env_level = (int)setting_int(SET_VIZ);
  if (!env_level) return;
  if (tg_viz_begin(NULL) < 0) { fprintf(stderr, "tg: VIZ=%d: %s\n", env_level, tg_error()); return; }
  atexit(viz_atexit);
}

/* ---- rewrites */

typedef struct { const char *name; double t0; int nsteps; strbuf steps; } pframe;
static _Thread_local pframe frames[MAX_PASS_DEPTH];
static _Thread_local int pdepth;

static void ctx_json(strbuf *b) {
  sb_puts(b, ",\"ctx\":");
  if (ctx_kernel[0]) { char k[128]; snprintf(k, sizeof k, "kernel %s", ctx_kernel); jstr(b, k); }
  else jstr(b, ctx_sched ? "schedule" : "");
  sb_printf(b, ",\"sched\":%d,\"item\":%d", ctx_sched, ctx_kernel[0] ? ctx_item : -1);
}

bool viz_pass_begin(const char *name) {
  if (pdepth < MAX_PASS_DEPTH) frames[pdepth] = (pframe){ name ? name : "rewrite", tg_now_seconds(), 0, { 0 } };
  pdepth++;
  return true;
}

void viz_pass_step(const char *rule, const uop *before, const uop *after) {
  if (pdepth <= 0 || pdepth > MAX_PASS_DEPTH) return;
  pframe *f = &frames[pdepth - 1];
  if (++f->nsteps > MAX_STEPS) return;
  strbuf *b = &f->steps;
  sb_puts(b, f->nsteps > 1 ? ",{\"rule\":" : "{\"rule\":");
  jstr_n(b, rule, 200);
  sb_puts(b, ",\"before\":");
  node_text(b, before);
  sb_puts(b, ",\"after\":");
  node_text(b, after);
  sb_puts(b, ",\"g\":");
  step_graph(b, before, after);
  sb_puts(b, "}");
}

/* The text as a node: NOOP of the node it was made for, the text its arg,
 * so the step reads as before -> after like any other */
void viz_pass_step_text(const char *rule, const uop *before, const char *after) {
  uop_pool_push();
  uop *src = (uop *)before;
  viz_pass_step(rule, before, uop_new(OP_NOOP, before->dtype, &src, 1, arg_str(after ? after : "")));
  uop_pool_pop();
}

void viz_pass_end(void) {
  if (pdepth <= 0) return;
  pdepth--;
  if (pdepth >= MAX_PASS_DEPTH) return;
  pframe *f = &frames[pdepth];
  if (f->nsteps == 0) return;
  __atomic_add_fetch(&npasses, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&nrules, f->nsteps, __ATOMIC_RELAXED);
  strbuf b = { 0 };
  ev_open(&b, "pass", (f->t0 - t_start) * 1e6);
  sb_puts(&b, ",\"dur\":");
  jus(&b, (tg_now_seconds() - f->t0) * 1e6);
  sb_puts(&b, ",\"name\":");
  jstr(&b, f->name);
  ctx_json(&b);
  sb_printf(&b, ",\"depth\":%d,\"n\":%d,\"steps\":[", pdepth, f->nsteps);
  if (f->steps.s) sb_append(&b, f->steps.s, f->steps.n);
  sb_puts(&b, "]");
  sb_free(&f->steps);
  emit(&b, true);
}

/* ---- schedules and kernels */

int viz_schedule_begin(uop *const *roots, int n) {
  int id = __atomic_add_fetch(&sched_counter, 1, __ATOMIC_RELAXED);
  ctx_sched = id;
  ctx_sched_t0 = tg_now_seconds();
  strbuf b = { 0 };
  ev_open(&b, "tensor_graph", now_us());
  sb_printf(&b, ",\"sched\":%d,\"graph\":", id);
  graph_json(&b, roots, n);
  emit(&b, true);
  return id;
}

void viz_schedule_scheduled(int sched, const void *sp, bool ok) {
  const schedule *s = sp;
  double t0 = (ctx_sched_t0 - t_start) * 1e6;
  strbuf b = { 0 };
  ev_open(&b, "schedule", t0);
  sb_printf(&b, ",\"dur\":%.3f,\"sched\":%d,\"ok\":%s,\"items\":[", now_us() - t0, sched, ok ? "true" : "false");
  for (int i = 0; ok && s && i < s->n && i < MAX_SCHED_ITEMS; i++) {
    const sched_item *it = &s->v[i];
    sb_puts(&b, i ? ",{\"name\":" : "{\"name\":");
    jstr(&b, it->name);
    sb_puts(&b, ",\"device\":");
    jstr(&b, it->dev ? it->dev->name : "?");
    sb_printf(&b, ",\"kind\":\"%s\",\"bufs\":[", it->ast ? "kernel" : "copy");
    for (int j = 0; j < it->nbufs; j++) sb_printf(&b, j ? ",%lld" : "%lld", (long long)it->bufs[j]->id);
    sb_puts(&b, "]}");
  }
  sb_puts(&b, "]");
  if (ok && s && s->n > MAX_SCHED_ITEMS) sb_printf(&b, ",\"more_items\":%d", s->n - MAX_SCHED_ITEMS);
  emit(&b, false);
}

void viz_schedule_end(int sched) {
  if (ctx_sched == sched) ctx_sched = 0;
  ctx_kernel[0] = 0;
}

void viz_kernel_context(const char *name, int item) {
  snprintf(ctx_kernel, sizeof ctx_kernel, "%s", name ? name : "");
  ctx_item = item;
}

void viz_kernel(const char *name, int item, const char *device, uop *ast, const char *opts, const char *src, double render_s) {
  strbuf b = { 0 };
  ev_open(&b, "kernel", now_us());
  sb_printf(&b, ",\"sched\":%d,\"item\":%d,\"name\":", ctx_sched, item);
  jstr(&b, name);
  sb_puts(&b, ",\"device\":");
  jstr(&b, device);
  sb_printf(&b, ",\"render_us\":%.3f,\"opts\":", render_s * 1e6);
  jstr(&b, opts ? opts : "");
  sb_puts(&b, ",\"ast\":");
  graph_json(&b, &ast, 1);
  sb_puts(&b, ",\"linear\":");
  jstr(&b, lowered_text);
  sb_puts(&b, ",\"src\":");
  jstr(&b, src);
  free(lowered_text);
  lowered_text = NULL;
  emit(&b, true);
}

bool viz_first_sight(const void *key) {
  pthread_mutex_lock(&lock);
  bool first = fd >= 0 && !pm_get(&seen, key);
  if (first) pm_put(&seen, key, (void *)1);
  pthread_mutex_unlock(&lock);
  return first;
}

void viz_compiled(const char *name, double seconds) {
  strbuf b = { 0 };
  ev_open(&b, "compile", now_us() - seconds * 1e6);
  sb_printf(&b, ",\"dur\":%.3f,\"sched\":%d,\"name\":", seconds * 1e6, ctx_sched);
  jstr(&b, name);
  emit(&b, false);
}

/* ---- profile */

void viz_span(const char *name, int sched, double t0_s) {
  strbuf b = { 0 };
  ev_open(&b, "span", (t0_s - t_start) * 1e6);
  sb_printf(&b, ",\"dur\":%.3f,\"sched\":%d,\"name\":", (tg_now_seconds() - t0_s) * 1e6, sched);
  jstr(&b, name);
  emit(&b, false);
}

void viz_run(const char *device, const char *name, double dt, double flops, double bytes) {
  strbuf b = { 0 };
  ev_open(&b, "run", now_us() - dt * 1e6);
  sb_puts(&b, ",\"dur\":");
  jus(&b, dt * 1e6);
  sb_puts(&b, ",\"sched\":");
  jint(&b, ctx_sched);
  sb_puts(&b, ",\"name\":");
  jstr(&b, name);
  sb_puts(&b, ",\"device\":");
  jstr(&b, device);
  sb_puts(&b, ",\"flops\":");
  jnum(&b, flops);
  sb_puts(&b, ",\"bytes\":");
  jnum(&b, bytes);
  emit(&b, false);
}

void viz_copy(const char *dst_device, const char *src_device, size_t nbytes, double dt) {
  strbuf b = { 0 };
  ev_open(&b, "copy", now_us() - dt * 1e6);
  sb_printf(&b, ",\"dur\":%.3f,\"sched\":%d,\"device\":", dt * 1e6, ctx_sched);
  jstr(&b, dst_device);
  sb_puts(&b, ",\"from\":");
  jstr(&b, src_device);
  sb_printf(&b, ",\"bytes\":%zu", nbytes);
  emit(&b, false);
}

void viz_mem(const char *device, int64_t buf_id, int64_t nbytes) {
  strbuf b = { 0 };
  ev_open(&b, "mem", now_us());
  sb_puts(&b, ",\"device\":");
  jstr(&b, device);
  sb_puts(&b, ",\"buf\":");
  jint(&b, (long long)buf_id);
  sb_puts(&b, ",\"bytes\":");
  jint(&b, (long long)nbytes);
  emit(&b, false);
}

/* ---- codegen: DEBUG=5/6 and the linearized program */

void viz_final_codegen(int debug) { viz_codegen_hook = debug < 0 ? 0 : debug + 1; }

void viz_codegen_lowered(uop *ast, const char *name) {
  int debug = viz_codegen_hook - 1;
  if (debug >= 6) { fprintf(stderr, "kernel %s lowered (before linearize):\n", name); uop_print(stderr, ast); }
  if (debug < 5 && !viz_on) return;
  char *t = viz_linear_text(ast);
  if (debug >= 5) fprintf(stderr, "kernel %s linearized:\n%s", name, t);
  if (viz_on) { free(lowered_text); lowered_text = t; }
  else free(t);
}
