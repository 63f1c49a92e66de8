/* cli.c: `tg viz`, the terminal view of a VIZ trace (viz.h, docs/viz.md):
 * the schedules and their kernels, the kernels by total time, one kernel or
 * rewrite pass in detail, a window between two markers, JSON for scripts,
 * and the Chrome trace-event export. */
#include <cjson/cJSON.h>
#include <math.h>
#include <unistd.h>
#include "tg.h"
#include "viz/viz.h"
#include "util/settings.h"

typedef struct {
  FILE *out, *err;
  bool color, json, jsonl, partial;
  int limit;
  double t0, t1;          /* the window (µs): everything, or --interval */
  const viz_trace *t;
} cli;

/* ---- colors (off when NO_COLOR is set or out is not a terminal; --color forces) */

static const char *kcolor(const cli *c, const char *name) {
  if (!c->color) return "";
  if (!strncmp(name, "copy", 4)) return "\033[33m";
  if (name[0] == 'r' && name[1] == '_') return "\033[31m";
  if (name[0] == 'E' && name[1] == '_') return "\033[34m";
  return "\033[32m";
}
static const char *bold(const cli *c) { return c->color ? "\033[1m" : ""; }
static const char *dim(const cli *c) { return c->color ? "\033[2m" : ""; }
static const char *reset(const cli *c) { return c->color ? "\033[0m" : ""; }

static bool in_window(const cli *c, double ts) { return ts >= c->t0 && ts <= c->t1; }

static void print_json(const cli *c, cJSON *o, bool pretty) {
  char *s = pretty ? cJSON_Print(o) : cJSON_PrintUnformatted(o);
  if (s) { fputs(s, c->out); fputc('\n', c->out); }
  free(s);
}

/* ---- kernels by name: runs inside the window */

typedef struct { const char *name, *device; int calls; double us, flops, bytes; bool copy; } kstat;
typedef VEC(kstat) kstats;

static kstats kernel_stats(const cli *c, int sched /* 0: all */) {
  kstats v = { 0 };
  for (int i = 0; i < c->t->runs.n; i++) {
    const viz_run_rec *r = &c->t->runs.v[i];
    if (!in_window(c, r->ts) || (sched && r->sched != sched)) continue;
    int k = 0;
    while (k < v.n && !(!strcmp(v.v[k].name, r->name) && !strcmp(v.v[k].device, r->device))) k++;
    if (k == v.n) VEC_PUSH(v, ((kstat){ r->name, r->device, 0, 0, 0, 0, r->copy }));
    v.v[k].calls++;
    v.v[k].us += r->dur;
    v.v[k].flops += r->flops;
    v.v[k].bytes += r->bytes;
  }
  return v;
}

static int by_time(const void *a, const void *b) {
  const kstat *x = a, *y = b;
  return x->us < y->us ? 1 : x->us > y->us ? -1 : strcmp(x->name, y->name);
}

/* ---- list: schedules, their kernels, markers */

static int count_passes(const cli *c, int sched, int item, int *rules) {
  int n = 0;
  *rules = 0;
  for (int i = 0; i < c->t->passes.n; i++) {
    const viz_pass_rec *p = &c->t->passes.v[i];
    if (p->sched == sched && p->item == item) { n++; *rules += p->nsteps; }
  }
  return n;
}

/* NULL when the item did not run or ran outside the window. */
static const viz_run_rec *item_run(const cli *c, int sched, int item) {
  const viz_run_rec *r = viz_item_run(c->t, sched, item);
  return r && in_window(c, r->ts) ? r : NULL;
}

static int cmd_list(cli *c) {
  const viz_trace *t = c->t;
  long nrules = 0;
  for (int i = 0; i < t->passes.n; i++) nrules += t->passes.v[i].nsteps;
  int nruns = 0;
  double run_us = 0;
  for (int i = 0; i < t->runs.n; i++) if (!t->runs.v[i].copy && in_window(c, t->runs.v[i].ts)) { nruns++; run_us += t->runs.v[i].dur; }
  cJSON *root = c->json || c->jsonl ? cJSON_CreateObject() : NULL;
  if (root) {
    cJSON_AddStringToObject(root, "trace", t->path);
    cJSON_AddNumberToObject(root, "version", t->version);
    cJSON_AddBoolToObject(root, "complete", t->ended);
    cJSON_AddNumberToObject(root, "passes", t->passes.n);
    cJSON_AddNumberToObject(root, "rules", (double)nrules);
    cJSON_AddNumberToObject(root, "dropped", (double)t->dropped);
  } else {
    fprintf(c->out, "%strace %s%s: %d schedules, %d kernels compiled, %d kernel runs (%.3f ms on devices), %d rewrite passes (%ld rules fired), %d markers%s\n",
            bold(c), t->path, reset(c), t->scheds.n, t->kernels.n, nruns, run_us * 1e-3, t->passes.n, nrules, t->markers.n,
            t->ended ? "" : " (cut off: read with --partial)");
    if (t->dropped) fprintf(c->out, "  %ld detail records left out by the recorder (TG_VIZ_MAX_MB)\n", t->dropped);
  }
  cJSON *jscheds = root ? cJSON_AddArrayToObject(root, "schedules") : NULL;
  int shown = 0;
  for (int i = 0; i < t->scheds.n; i++) {
    const viz_sched_rec *s = &t->scheds.v[i];
    if (!in_window(c, s->ts)) continue;
    if (!root && shown++ == c->limit) { fprintf(c->out, "  ... %d more schedules (--limit N shows more; --json has all)\n", t->scheds.n - i); break; }
    cJSON *rec = viz_trace_record(t, s->off);
    if (!rec) { fprintf(c->err, "%s\n", tg_error()); cJSON_Delete(root); return 1; }
    cJSON *items = cJSON_GetObjectItemCaseSensitive(rec, "items"), *it;
    cJSON *js = NULL, *jitems = NULL;
    if (root) {
      js = cJSON_CreateObject();
      cJSON_AddNumberToObject(js, "id", s->id);
      cJSON_AddNumberToObject(js, "ts_us", s->ts);
      cJSON_AddNumberToObject(js, "schedule_us", s->sched_us);
      cJSON_AddNumberToObject(js, "compile_us", s->compile_us);
      cJSON_AddNumberToObject(js, "run_us", s->run_us);
      jitems = cJSON_AddArrayToObject(js, "items");
    } else {
      fprintf(c->out, "%sschedule %d%s  at %.3f ms: schedule %.3f ms, compile %.3f ms, run %.3f ms; %d kernels, %d copies\n", bold(c), s->id, reset(c),
              s->ts * 1e-3, s->sched_us * 1e-3, s->compile_us * 1e-3, s->run_us * 1e-3, s->nkernels, s->ncopies);
    }
    int k = 0;
    cJSON_ArrayForEach(it, items) {
      const cJSON *nm = cJSON_GetObjectItemCaseSensitive(it, "name"), *dv = cJSON_GetObjectItemCaseSensitive(it, "device");
      const char *name = cJSON_IsString(nm) ? nm->valuestring : "?", *dev = cJSON_IsString(dv) ? dv->valuestring : "?";
      const viz_run_rec *run = item_run(c, s->id, k);
      double us = run ? run->dur : 0;
      int calls = run ? 1 : 0;
      int rules, np = count_passes(c, s->id, k, &rules);
      if (root) {
        cJSON *ji = cJSON_CreateObject();
        cJSON_AddStringToObject(ji, "name", name);
        cJSON_AddStringToObject(ji, "device", dev);
        cJSON_AddNumberToObject(ji, "runs", calls);
        cJSON_AddNumberToObject(ji, "total_us", us);
        cJSON_AddNumberToObject(ji, "passes", np);
        cJSON_AddNumberToObject(ji, "rules", rules);
        if (c->jsonl) {
          cJSON_AddNumberToObject(ji, "schedule", s->id);
          print_json(c, ji, false);
          cJSON_Delete(ji);
        } else cJSON_AddItemToArray(jitems, ji);
      } else if (k < c->limit * 4) {
        fprintf(c->out, "  %s%-28s%s %-6s %10.3f ms%s", kcolor(c, name), name, reset(c), dev, us * 1e-3, calls ? "" : " (did not run)");
        if (np) fprintf(c->out, "  %s%d rewrite pass%s, %d rule%s%s", dim(c), np, np == 1 ? "" : "es", rules, rules == 1 ? "" : "s", reset(c));
        fputc('\n', c->out);
      }
      k++;
    }
    if (!root && k > c->limit * 4) fprintf(c->out, "  ... %d more items\n", k - c->limit * 4);
    cJSON_Delete(rec);
    if (js) { if (c->jsonl) cJSON_Delete(js); else cJSON_AddItemToArray(jscheds, js); }
  }
  if (root) {
    cJSON_AddItemToObject(root, "markers", viz_markers_json(t));
    if (!c->jsonl) print_json(c, root, true);
    cJSON_Delete(root);
  } else if (t->markers.n) {
    fprintf(c->out, "markers:");
    for (int i = 0; i < t->markers.n; i++) fprintf(c->out, "%s %s @ %.3f ms", i ? "," : "", t->markers.v[i].name, t->markers.v[i].ts * 1e-3);
    fputc('\n', c->out);
  }
  return 0;
}

/* ---- --top N */

static int cmd_top(cli *c, int n) {
  kstats ks = kernel_stats(c, 0);
  kstats kern = { 0 };
  double total = 0, copy_us = 0;
  int ncopies = 0;
  for (int i = 0; i < ks.n; i++) {
    if (ks.v[i].copy) { copy_us += ks.v[i].us; ncopies += ks.v[i].calls; continue; }
    VEC_PUSH(kern, ks.v[i]);
    total += ks.v[i].us;
  }
  qsort(kern.v, (size_t)kern.n, sizeof *kern.v, by_time);
  if (n > kern.n) n = kern.n;
  cJSON *root = c->json ? cJSON_CreateObject() : NULL, *rows = root ? cJSON_AddArrayToObject(root, "top") : NULL;
  if (root) {
    cJSON_AddStringToObject(root, "trace", c->t->path);
    cJSON_AddNumberToObject(root, "total_us", total);
    cJSON_AddNumberToObject(root, "kernels", kern.n);
    cJSON_AddNumberToObject(root, "copy_us", copy_us);
  } else if (!c->jsonl) {
    fprintf(c->out, "%s%4s  %-28s %-6s %7s %12s %7s %11s %9s %8s%s\n", bold(c), "#", "kernel", "device", "calls", "total ms", "share", "avg us", "GFLOPS", "GB/s", reset(c));
  }
  double shown = 0;
  for (int i = 0; i < n; i++) {
    const kstat *k = &kern.v[i];
    double share = total > 0 ? k->us / total * 100 : 0;
    shown += share;
    double gflops = k->us > 0 ? k->flops / k->us * 1e-3 : 0, gbs = k->us > 0 ? k->bytes / k->us * 1e-3 : 0;
    if (root || c->jsonl) {
      cJSON *r = cJSON_CreateObject();
      cJSON_AddNumberToObject(r, "rank", i + 1);
      cJSON_AddStringToObject(r, "name", k->name);
      cJSON_AddStringToObject(r, "device", k->device);
      cJSON_AddNumberToObject(r, "calls", k->calls);
      cJSON_AddNumberToObject(r, "total_us", k->us);
      cJSON_AddNumberToObject(r, "share", share);
      cJSON_AddNumberToObject(r, "avg_us", k->calls ? k->us / k->calls : 0);
      cJSON_AddNumberToObject(r, "gflops", gflops);
      cJSON_AddNumberToObject(r, "gbs", gbs);
      if (c->jsonl) { print_json(c, r, false); cJSON_Delete(r); }
      else cJSON_AddItemToArray(rows, r);
    } else {
      fprintf(c->out, "%4d  %s%-28s%s %-6s %7d %12.3f %6.1f%% %11.2f %9.2f %8.2f\n", i + 1, kcolor(c, k->name), k->name, reset(c), k->device,
              k->calls, k->us * 1e-3, share, k->calls ? k->us / k->calls : 0, gflops, gbs);
    }
  }
  if (root) { print_json(c, root, true); cJSON_Delete(root); }
  else if (!c->jsonl) {
    if (n < kern.n) fprintf(c->out, "      %d more kernels: %.1f%%\n", kern.n - n, 100 - shown);
    fprintf(c->out, "%s      %-28s %-6s %7s %12.3f %6.1f%%%s\n", bold(c), "total (kernels)", "", "", total * 1e-3, total > 0 ? 100.0 : 0.0, reset(c));
    if (ncopies) fprintf(c->out, "      %d copies: %.3f ms (not in the shares)\n", ncopies, copy_us * 1e-3);
  }
  VEC_FREE(ks);
  VEC_FREE(kern);
  return 0;
}

/* ---- -s NAME */

/* a record's integer field: cJSON clamps valueint to int (a damaged trace's
 * 1e300 must not reach a cast); 0 when absent */
static int jint(const cJSON *v) { return cJSON_IsNumber(v) ? v->valueint : 0; }

/* A recorded graph as lines like DEBUG=3's: number, op, dtype, shape, sources, arg. */
static void print_graph(const cli *c, const cJSON *g) {
  const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(g, "nodes"), *nd;
  if (!cJSON_IsArray(nodes)) {
    fprintf(c->out, "  (a graph of %d nodes: too big to record)\n", jint(cJSON_GetObjectItemCaseSensitive(g, "size")));
    return;
  }
  int i = 0;
  cJSON_ArrayForEach(nd, nodes) {
    const cJSON *op = cJSON_GetArrayItem(nd, 0), *dt = cJSON_GetArrayItem(nd, 1), *arg = cJSON_GetArrayItem(nd, 2), *src = cJSON_GetArrayItem(nd, 3), *s;
    char srcs[256] = "";
    int k = 0;
    cJSON_ArrayForEach(s, src) if (k < 200) k += snprintf(srcs + k, sizeof srcs - (size_t)k, k ? ",%d" : "%d", jint(s));
    fprintf(c->out, "%4d %-13s %-12s [%s] %s\n", i++, cJSON_IsString(op) ? op->valuestring : "?", cJSON_IsString(dt) ? dt->valuestring : "?", srcs,
            cJSON_IsString(arg) ? arg->valuestring : "");
  }
}

static void print_pass(const cli *c, const cJSON *p) {
  const cJSON *steps = cJSON_GetObjectItemCaseSensitive(p, "steps"), *st;
  int n = jint(cJSON_GetObjectItemCaseSensitive(p, "n"));
  const char *ctx = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "ctx"));
  fprintf(c->out, "%spass %s%s  %d rule%s in %.3f ms%s%s at %.3f ms\n", bold(c), cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "name")), reset(c),
          n, n == 1 ? "" : "s", cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(p, "dur")) * 1e-3, ctx && *ctx ? ", " : "", ctx ? ctx : "",
          cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(p, "ts")) * 1e-3);
  int i = 0;
  cJSON_ArrayForEach(st, steps) {
    fprintf(c->out, "  %3d [%s]\n      %s\n   -> %s\n", ++i, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "rule")),
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "before")), cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "after")));
  }
  if (n > i) fprintf(c->out, "  ... %d more rules fired (the recorder keeps the first %d of a pass)\n", n - i, i);
}

static int show_kernel(cli *c, const char *name) {
  const viz_trace *t = c->t;
  cJSON *root = c->json ? cJSON_CreateArray() : NULL;
  int shown = 0;
  for (int i = 0; i < t->kernels.n; i++) {
    const viz_kernel_rec *k = &t->kernels.v[i];
    if (strcmp(k->name, name)) continue;
    if (shown++ == c->limit) { if (!c->json) fprintf(c->out, "... more kernels named %s (--limit N)\n", name); break; }
    cJSON *rec = viz_trace_record(t, k->off);
    if (!rec) { fprintf(c->err, "%s\n", tg_error()); cJSON_Delete(root); return 1; }
    const viz_run_rec *run = item_run(c, k->sched, k->item);
    int calls = run ? 1 : 0;
    double us = run ? run->dur : 0;
    cJSON *passes = cJSON_CreateArray();
    for (int j = 0; j < t->passes.n; j++)
      if (t->passes.v[j].sched == k->sched && t->passes.v[j].item == k->item) {
        cJSON *p = viz_trace_record(t, t->passes.v[j].off);
        if (p) cJSON_AddItemToArray(passes, p);
      }
    if (c->json || c->jsonl) {
      cJSON_AddNumberToObject(rec, "runs", calls);
      cJSON_AddNumberToObject(rec, "total_us", us);
      cJSON_AddItemToObject(rec, "passes", passes);
      if (c->jsonl) { print_json(c, rec, false); cJSON_Delete(rec); }
      else cJSON_AddItemToArray(root, rec);
      continue;
    }
    const char *dev = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rec, "device"));
    const char *opts = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rec, "opts"));
    const char *lin = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rec, "linear"));
    const char *src = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rec, "src"));
    fprintf(c->out, "%skernel %s%s%s%s on %s, schedule %d: %d run%s, %.3f ms; rendered in %.3f ms\n", bold(c), kcolor(c, name), name, reset(c), bold(c),
            dev ? dev : "?", k->sched, calls, calls == 1 ? "" : "s", us * 1e-3,
            cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(rec, "render_us")) * 1e-3);
    fprintf(c->out, "%s", reset(c));
    fprintf(c->out, "%sopts:%s %s\n", bold(c), reset(c), opts && *opts ? opts : "(none)");
    fprintf(c->out, "%sAST:%s\n", bold(c), reset(c));
    print_graph(c, cJSON_GetObjectItemCaseSensitive(rec, "ast"));
    int np = cJSON_GetArraySize(passes);
    fprintf(c->out, "%srewrites while generating it: %d pass%s%s\n", bold(c), np, np == 1 ? "" : "es", reset(c));
    const cJSON *p;
    int pi = 0;
    cJSON_ArrayForEach(p, passes) {
      if (pi++ == c->limit) { fprintf(c->out, "  ... %d more passes (--limit N)\n", np - c->limit); break; }
      print_pass(c, p);
    }
    if (lin) fprintf(c->out, "%slinearized:%s\n%s", bold(c), reset(c), lin);
    if (src) fprintf(c->out, "%ssource:%s\n%s\n", bold(c), reset(c), src);
    cJSON_Delete(passes);
    cJSON_Delete(rec);
  }
  if (root) { print_json(c, root, true); cJSON_Delete(root); }
  return shown ? 0 : -1;
}

static int show_pass(cli *c, const char *name) {
  const viz_trace *t = c->t;
  int found = 0, shown = 0;
  for (int i = 0; i < t->passes.n; i++) found += !strcmp(t->passes.v[i].name, name);
  if (!found) return -1;
  if (!c->json && !c->jsonl) fprintf(c->out, "%d passes named %s%s\n", found, name, found > c->limit ? " (the first ones; --limit N shows more)" : "");
  cJSON *root = c->json ? cJSON_CreateArray() : NULL;
  for (int i = 0; i < t->passes.n && shown < c->limit; i++) {
    if (strcmp(t->passes.v[i].name, name)) continue;
    shown++;
    cJSON *p = viz_trace_record(t, t->passes.v[i].off);
    if (!p) { fprintf(c->err, "%s\n", tg_error()); cJSON_Delete(root); return 1; }
    if (root) cJSON_AddItemToArray(root, p);
    else { if (c->jsonl) print_json(c, p, false); else print_pass(c, p); cJSON_Delete(p); }
  }
  if (root) { print_json(c, root, true); cJSON_Delete(root); }
  return 0;
}

static int cmd_show(cli *c, const char *name) {
  int rc = show_kernel(c, name);
  if (rc >= 0) return rc;
  rc = show_pass(c, name);
  if (rc >= 0) return rc;
  for (int i = 0; i < c->t->runs.n; i++)
    if (!strcmp(c->t->runs.v[i].name, name)) {
      fprintf(c->err, "tg viz: kernel %s ran, but its AST and source are not in %s: it was compiled before the recording began (a program cached in memory)\n",
              name, c->t->path);
      return 1;
    }
  fprintf(c->err, "tg viz: no kernel or rewrite pass named '%s' in %s", name, c->t->path);
  const char *sep = "; kernels: ";
  for (int i = 0; i < c->t->kernels.n && i < 12; i++) { fprintf(c->err, "%s%s", sep, c->t->kernels.v[i].name); sep = ", "; }
  sep = "; passes: ";
  for (int i = 0, k = 0; i < c->t->passes.n && k < 8; i++) {
    bool seen = false;
    for (int j = 0; j < i && !seen; j++) seen = !strcmp(c->t->passes.v[j].name, c->t->passes.v[i].name);
    if (!seen) { fprintf(c->err, "%s%s", sep, c->t->passes.v[i].name); sep = ", "; k++; }
  }
  fputc('\n', c->err);
  return 1;
}

/* ---- arguments */

static int usage(FILE *err) {
  fprintf(err,
          "usage: tg viz [DIR|FILE] [--top N] [-s NAME] [--interval START END] [--json|--jsonl] [--chrome OUT.json]\n"
          "              [--limit N] [--partial] [--color]\n"
          "       tg viz [DIR|FILE] --serve [--port 8000] [--host 127.0.0.1] [--exit-after SECONDS]\n"
          "  reads a trace recorded with VIZ=-1 (or tg_viz_begin): DIR's newest trace-*.jsonl (default $TG_VIZ_DIR or ./tg-viz)\n"
          "  (nothing)            the schedules and their kernels, with run times and rewrite counts\n"
          "  --top N              the N kernels with the most device time, with their share of it\n"
          "  -s NAME              one kernel (AST, opts, rewrites step by step, linearized program, source) or rewrite pass\n"
          "  --interval A B       only what ran between markers A and B (tg_profile_marker)\n"
          "  --json, --jsonl      JSON for scripts (one document, or one object a line)\n"
          "  --chrome OUT.json    the profile as Chrome trace events (ui.perfetto.dev, chrome://tracing)\n"
          "  --limit N            show at most N schedules/passes/kernels (default 20)\n"
          "  --partial            read a cut-off trace (no end record) as far as it is whole\n"
          "  --color              colors even when not on a terminal (NO_COLOR turns the default off)\n"
          "  --serve              the web page: schedules, kernels, each rewrite step's graph, source, profile timeline\n"
          "                       (--port 0: any free port; --exit-after N: stop after N seconds, for scripts)\n");
  return 2;
}

static bool parse_int(const char *s, int *v) {
  char *end;
  long x = strtol(s, &end, 10);
  if (!*s || *end || x < 0 || x > 1000000000) return false;
  *v = (int)x;
  return true;
}

int viz_cli(int argc, char **argv, FILE *out, FILE *err) {
  cli c = { out, err, false, false, false, false, 20, -INFINITY, INFINITY, NULL };
  const char *path = NULL, *show = NULL, *chrome = NULL, *ia = NULL, *ib = NULL;
  int top = -1, port = 8000, exit_after = 0;
  bool force_color = false, serve = false;
  const char *host = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(out); return 0; }
    else if (!strcmp(a, "--json")) c.json = true;
    else if (!strcmp(a, "--jsonl")) c.jsonl = true;
    else if (!strcmp(a, "--partial")) c.partial = true;
    else if (!strcmp(a, "--color")) force_color = true;
    else if (!strcmp(a, "--list")) { /* the default */ }
    else if (!strcmp(a, "--serve")) serve = true;
    else if (!strcmp(a, "--host") && i + 1 < argc) host = argv[++i];
    else if ((!strcmp(a, "--top") || !strcmp(a, "--limit") || !strcmp(a, "--port") || !strcmp(a, "--exit-after")) && i + 1 < argc) {
      int v;
      if (!parse_int(argv[++i], &v)) { fprintf(err, "tg viz: %s wants a count, not '%s'\n", a, argv[i]); return 2; }
      if (!strcmp(a, "--top")) top = v;
      else if (!strcmp(a, "--limit")) c.limit = v;
      else if (!strcmp(a, "--port")) port = v;
      else exit_after = v;
    } else if ((!strcmp(a, "-s") || !strcmp(a, "--show")) && i + 1 < argc) show = argv[++i];
    else if (!strcmp(a, "--chrome") && i + 1 < argc) chrome = argv[++i];
    else if (!strcmp(a, "--interval") && i + 2 < argc) { ia = argv[++i]; ib = argv[++i]; }
    else if (a[0] == '-') { fprintf(err, "tg viz: unknown or incomplete option '%s'\n", a); return usage(err); }
    else if (!path) path = a;
    else { fprintf(err, "tg viz: one trace at a time ('%s' and '%s')\n", path, a); return usage(err); }
  }
  if (c.json && c.jsonl) { fprintf(err, "tg viz: --json or --jsonl, not both\n"); return 2; }
  const char *nc = setting_str(SET_NO_COLOR);
  c.color = force_color || (isatty(fileno(out)) && !(nc && *nc));
  if (c.json || c.jsonl) c.color = false;
  if (!path) path = setting_str(SET_TG_VIZ_DIR);
  if (!path || !*path) path = "tg-viz";
  if (serve) {
    if (port > 65535) { fprintf(err, "tg viz: --port %d is out of range (0-65535; 0 picks a free one)\n", port); return 2; }
    viz_web_options wo = { host, port, c.partial, exit_after };
    if (viz_web_serve(path, &wo, err) < 0) { fprintf(err, "%s\n", tg_error()); return 1; }
    return 0;
  }
  viz_trace t;
  if (viz_trace_load(path, c.partial, &t) < 0) { fprintf(err, "%s\n", tg_error()); return 1; }
  c.t = &t;
  int rc = 0;
  if (ia) {
    int a = -1, b = -1;
    for (int i = 0; i < t.markers.n && a < 0; i++) if (!strcmp(t.markers.v[i].name, ia)) a = i;
    for (int i = a < 0 ? 0 : a; i < t.markers.n && b < 0; i++) if (!strcmp(t.markers.v[i].name, ib) && (i != a || !strcmp(ia, ib))) b = i;
    if (a < 0 || b < 0) {
      fprintf(err, "tg viz: --interval %s %s: no marker '%s'%s in %s; markers:", ia, ib, a < 0 ? ia : ib, a < 0 ? "" : " after the first one", t.path);
      for (int i = 0; i < t.markers.n; i++) fprintf(err, " %s", t.markers.v[i].name);
      fprintf(err, "%s\n", t.markers.n ? "" : " (none: tg_profile_marker adds them)");
      viz_trace_free(&t);
      return 1;
    }
    c.t0 = t.markers.v[a].ts;
    c.t1 = t.markers.v[b].ts;
  }
  if (chrome) {
    int n = viz_chrome_write(&t, c.t0, c.t1, chrome);
    if (n < 0) { fprintf(err, "%s\n", tg_error()); rc = 1; }
    else if (!show && top < 0) fprintf(c.json || c.jsonl ? err : out, "wrote %d trace events to %s (open it in ui.perfetto.dev or chrome://tracing)\n", n, chrome);
    if (rc || (!show && top < 0)) { viz_trace_free(&t); return rc; }
  }
  if (show) rc = cmd_show(&c, show);
  else if (top >= 0) rc = cmd_top(&c, top);
  else rc = cmd_list(&c);
  viz_trace_free(&t);
  return rc;
}
