/* web_api.c: the JSON the VIZ page asks for (web.c serves it): the trace's
 * schedules and kernels, one kernel in full (AST, opts, source, every
 * rewrite step with its graph as nodes and edges), and the profile per
 * device with memory in use over time. Built from the trace reader's
 * records (trace_read.c); the big records are read from the file on
 * demand. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include "tg.h"
#include "viz/viz.h"

static char *print_free(cJSON *o) {
  char *s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return s ? s : tg_xstrdup("{}");
}

static const char *jstr(const cJSON *o, const char *key) {
  const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
  return s ? s : "";
}

/* ---- /api/trace: the schedules with their items, the kernels, the markers */

void *viz_markers_json(const viz_trace *t) {
  cJSON *jm = cJSON_CreateArray();
  for (int i = 0; i < t->markers.n; i++) {
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "name", t->markers.v[i].name);
    cJSON_AddNumberToObject(m, "ts_us", t->markers.v[i].ts);
    cJSON_AddItemToArray(jm, m);
  }
  return jm;
}

/* The kernel record of schedule sched's item, or -1. */
static int kernel_of(const viz_trace *t, int sched, int item) {
  for (int i = 0; i < t->kernels.n; i++) if (t->kernels.v[i].sched == sched && t->kernels.v[i].item == item) return i;
  return -1;
}

char *viz_api_trace(const viz_trace *t) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "trace", t->path);
  cJSON_AddNumberToObject(root, "version", t->version);
  cJSON_AddBoolToObject(root, "complete", t->ended);
  cJSON_AddNumberToObject(root, "dropped", (double)t->dropped);
  cJSON_AddNumberToObject(root, "passes", t->passes.n);
  cJSON *js = cJSON_AddArrayToObject(root, "schedules");
  for (int i = 0; i < t->scheds.n; i++) {
    const viz_sched_rec *s = &t->scheds.v[i];
    cJSON *o = cJSON_CreateObject(), *items = cJSON_AddArrayToObject(o, "items");
    cJSON_AddNumberToObject(o, "id", s->id);
    cJSON_AddNumberToObject(o, "ts_us", s->ts);
    cJSON_AddNumberToObject(o, "schedule_us", s->sched_us);
    cJSON_AddNumberToObject(o, "compile_us", s->compile_us);
    cJSON_AddNumberToObject(o, "run_us", s->run_us);
    cJSON *rec = viz_trace_record(t, s->off), *it;
    int k = 0;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(rec, "items")) {
      cJSON *ji = cJSON_CreateObject();
      cJSON_AddStringToObject(ji, "name", jstr(it, "name"));
      cJSON_AddStringToObject(ji, "device", jstr(it, "device"));
      cJSON_AddStringToObject(ji, "kind", jstr(it, "kind"));
      const viz_run_rec *run = viz_item_run(t, s->id, k);
      cJSON_AddNumberToObject(ji, "run_us", run ? run->dur : -1);
      cJSON_AddNumberToObject(ji, "kernel", kernel_of(t, s->id, k));
      cJSON_AddItemToArray(items, ji);
      k++;
    }
    cJSON_Delete(rec);
    cJSON_AddItemToArray(js, o);
  }
  cJSON *jk = cJSON_AddArrayToObject(root, "kernels");
  for (int i = 0; i < t->kernels.n; i++) {
    const viz_kernel_rec *k = &t->kernels.v[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", i);
    cJSON_AddStringToObject(o, "name", k->name);
    cJSON_AddNumberToObject(o, "sched", k->sched);
    cJSON_AddNumberToObject(o, "item", k->item);
    int np = 0;
    for (int j = 0; j < t->passes.n; j++) np += t->passes.v[j].sched == k->sched && t->passes.v[j].item == k->item;
    cJSON_AddNumberToObject(o, "passes", np);
    cJSON_AddItemToArray(jk, o);
  }
  cJSON_AddItemToObject(root, "markers", viz_markers_json(t));
  return print_free(root);
}

/* ---- /api/kernel?id=N */

/* A node's source index as recorded: an int in [-1, n), else -1 (a damaged
 * trace's index must not point outside the graph). */
static int src_index(const cJSON *v, int n) {
  if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble >= n) return -1;
  return (int)v->valuedouble;
}

/* A recorded graph ({"nodes": [[op, dtype, arg, [srcs], shape|side], ...]})
 * as {"nodes": [{op, dtype, arg, side?}], "edges": [[from, to], ...]}; an
 * edge to a source left out is an edge from a ".." node. `step`: the fifth
 * field is the step's side (1 before, 2 after, 3 both), else a shape. */
static cJSON *graph_out(const cJSON *g, bool step) {
  cJSON *o = cJSON_CreateObject();
  const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(g, "nodes"), *nd;
  if (!cJSON_IsArray(nodes)) {
    const cJSON *size = cJSON_GetObjectItemCaseSensitive(g, "size");
    cJSON_AddNumberToObject(o, "too_big", cJSON_IsNumber(size) ? size->valuedouble : 0);
    return o;
  }
  int n = cJSON_GetArraySize(nodes);
  cJSON *jn = cJSON_AddArrayToObject(o, "nodes"), *je = cJSON_AddArrayToObject(o, "edges");
  cJSON *cuts = cJSON_CreateArray();   /* the ".." nodes, after the recorded ones (their indices from n on) */
  int i = 0, extra = n;
  cJSON_ArrayForEach(nd, nodes) {
    cJSON *x = cJSON_CreateObject();
    const char *op = cJSON_GetStringValue(cJSON_GetArrayItem(nd, 0)), *dt = cJSON_GetStringValue(cJSON_GetArrayItem(nd, 1)),
               *arg = cJSON_GetStringValue(cJSON_GetArrayItem(nd, 2));
    cJSON_AddStringToObject(x, "op", op ? op : "?");
    cJSON_AddStringToObject(x, "dtype", dt ? dt : "");
    cJSON_AddStringToObject(x, "arg", arg ? arg : "");
    const cJSON *f5 = cJSON_GetArrayItem(nd, 4), *s;
    if (step) cJSON_AddNumberToObject(x, "side", cJSON_IsNumber(f5) && (f5->valueint & 3) ? f5->valueint & 3 : 3);
    else if (cJSON_IsArray(f5)) cJSON_AddItemToObject(x, "shape", cJSON_Duplicate(f5, true));
    cJSON_AddItemToArray(jn, x);
    int k = 0;
    cJSON_ArrayForEach(s, cJSON_GetArrayItem(nd, 3)) {
      int from = src_index(s, n);
      if (from < 0) {   /* a source past the recorded neighbourhood */
        cJSON *cut = cJSON_CreateObject();
        cJSON_AddStringToObject(cut, "op", "..");
        cJSON_AddStringToObject(cut, "dtype", "");
        cJSON_AddStringToObject(cut, "arg", "");
        if (step) cJSON_AddNumberToObject(cut, "side", cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(x, "side")));
        cJSON_AddItemToArray(cuts, cut);
        from = extra++;
      }
      cJSON *e = cJSON_CreateArray();
      cJSON_AddItemToArray(e, cJSON_CreateNumber(from));
      cJSON_AddItemToArray(e, cJSON_CreateNumber(i));
      cJSON_AddItemToArray(e, cJSON_CreateNumber(k++));
      cJSON_AddItemToArray(je, e);
    }
    i++;
  }
  cJSON *c;
  while ((c = cJSON_DetachItemFromArray(cuts, 0))) cJSON_AddItemToArray(jn, c);
  cJSON_Delete(cuts);
  if (step) {
    cJSON_AddNumberToObject(o, "before", src_index(cJSON_GetObjectItemCaseSensitive(g, "b"), n));
    cJSON_AddNumberToObject(o, "after", src_index(cJSON_GetObjectItemCaseSensitive(g, "a"), n));
  }
  return o;
}

/* One pass record for the page: its steps, each with its graph (a trace
 * recorded before step graphs existed has only the text). */
static cJSON *pass_out(const cJSON *p) {
  cJSON *o = cJSON_CreateObject(), *steps = cJSON_CreateArray(), *st;
  cJSON_AddStringToObject(o, "name", jstr(p, "name"));
  cJSON_AddStringToObject(o, "ctx", jstr(p, "ctx"));
  cJSON_AddNumberToObject(o, "dur_us", cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(p, "dur")));
  const cJSON *n = cJSON_GetObjectItemCaseSensitive(p, "n");
  cJSON_AddNumberToObject(o, "fired", cJSON_IsNumber(n) ? n->valuedouble : 0);
  cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(p, "steps")) {
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "rule", jstr(st, "rule"));
    cJSON_AddStringToObject(s, "before", jstr(st, "before"));
    cJSON_AddStringToObject(s, "after", jstr(st, "after"));
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(st, "g");
    if (cJSON_IsObject(g)) cJSON_AddItemToObject(s, "graph", graph_out(g, true));
    cJSON_AddItemToArray(steps, s);
  }
  cJSON_AddItemToObject(o, "steps", steps);
  return o;
}

/* An id= parameter: a decimal index below n. */
static int parse_id(const char *arg, int n, int *status) {
  if (!arg || !*arg) { *status = 400; tg_seterr("no id= given"); return -1; }
  char *end;
  errno = 0;
  long v = strtol(arg, &end, 10);
  if (*end || errno || v < 0 || v > INT_MAX || arg[0] == '+' || arg[0] == ' ') { *status = 400; tg_seterr("id '%.40s' is not a number", arg); return -1; }
  if (v >= n) { *status = 404; tg_seterr("no kernel %ld (the trace has %d)", v, n); return -1; }
  return (int)v;
}

char *viz_api_kernel(const viz_trace *t, const char *arg, int *status) {
  int id = parse_id(arg, t->kernels.n, status);
  if (id < 0) return NULL;
  const viz_kernel_rec *k = &t->kernels.v[id];
  cJSON *rec = viz_trace_record(t, k->off);
  if (!rec) { *status = 500; return NULL; }
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "id", id);
  cJSON_AddStringToObject(o, "name", k->name);
  cJSON_AddNumberToObject(o, "sched", k->sched);
  cJSON_AddStringToObject(o, "device", jstr(rec, "device"));
  cJSON_AddStringToObject(o, "opts", jstr(rec, "opts"));
  cJSON_AddStringToObject(o, "src", jstr(rec, "src"));
  cJSON_AddStringToObject(o, "linear", jstr(rec, "linear"));
  cJSON_AddNumberToObject(o, "render_us", cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(rec, "render_us")));
  const viz_run_rec *run = viz_item_run(t, k->sched, k->item);
  cJSON_AddNumberToObject(o, "run_us", run ? run->dur : -1);
  cJSON_AddItemToObject(o, "ast", graph_out(cJSON_GetObjectItemCaseSensitive(rec, "ast"), false));
  cJSON_Delete(rec);
  cJSON *passes = cJSON_AddArrayToObject(o, "passes");
  for (int j = 0; j < t->passes.n; j++) {
    if (t->passes.v[j].sched != k->sched || t->passes.v[j].item != k->item) continue;
    cJSON *p = viz_trace_record(t, t->passes.v[j].off);
    if (!p) { cJSON_Delete(o); *status = 500; return NULL; }
    cJSON_AddItemToArray(passes, pass_out(p));
    cJSON_Delete(p);
  }
  return print_free(o);
}

/* ---- /api/profile: per device its kernel runs, copies and memory in use */

static cJSON *device_entry(cJSON *devs, const char *name) {
  cJSON *d;
  cJSON_ArrayForEach(d, devs) if (!strcmp(jstr(d, "name"), name)) return d;
  d = cJSON_CreateObject();
  cJSON_AddStringToObject(d, "name", name);
  cJSON_AddArrayToObject(d, "kernels");
  cJSON_AddArrayToObject(d, "copies");
  cJSON_AddArrayToObject(d, "mem");
  cJSON_AddNumberToObject(d, "peak", 0);
  cJSON_AddItemToArray(devs, d);
  return d;
}

static void add_nums(cJSON *arr, int n, const double *v) {
  cJSON *row = cJSON_CreateArray();
  for (int i = 0; i < n; i++) cJSON_AddItemToArray(row, cJSON_CreateNumber(v[i]));
  cJSON_AddItemToArray(arr, row);
}

char *viz_api_profile(const viz_trace *t) {
  cJSON *root = cJSON_CreateObject(), *devs = cJSON_AddArrayToObject(root, "devices");
  double end = t->end_ts;
  for (int i = 0; i < t->runs.n; i++) {
    const viz_run_rec *r = &t->runs.v[i];
    cJSON *d = device_entry(devs, r->device), *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", r->name);
    cJSON_AddNumberToObject(e, "ts", r->ts);
    cJSON_AddNumberToObject(e, "dur", r->dur);
    cJSON_AddNumberToObject(e, "sched", r->sched);
    if (!r->copy) cJSON_AddNumberToObject(e, "flops", r->flops);
    cJSON_AddNumberToObject(e, "bytes", r->bytes);
    cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(d, r->copy ? "copies" : "kernels"), e);
    if (r->ts + r->dur > end) end = r->ts + r->dur;
  }
  for (int i = 0; i < t->mems.n; i++) {   /* memory in use: the running sum of allocations and frees */
    const viz_mem_rec *m = &t->mems.v[i];
    cJSON *d = device_entry(devs, m->device), *mem = cJSON_GetObjectItemCaseSensitive(d, "mem");
    cJSON *last = cJSON_GetArrayItem(mem, cJSON_GetArraySize(mem) - 1);
    double used = (last ? cJSON_GetNumberValue(cJSON_GetArrayItem(last, 1)) : 0) + (double)m->delta;
    add_nums(mem, 2, (double[]){ m->ts, used });
    cJSON *peak = cJSON_GetObjectItemCaseSensitive(d, "peak");
    if (used > peak->valuedouble) cJSON_SetNumberValue(peak, used);
    if (m->ts > end) end = m->ts;
  }
  cJSON *spans = cJSON_AddArrayToObject(root, "spans");
  for (int i = 0; i < t->scheds.n; i++) {   /* scheduling, as the host's first span of each schedule */
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", "schedule");
    cJSON_AddNumberToObject(e, "ts", t->scheds.v[i].ts);
    cJSON_AddNumberToObject(e, "dur", t->scheds.v[i].sched_us);
    cJSON_AddNumberToObject(e, "sched", t->scheds.v[i].id);
    cJSON_AddItemToArray(spans, e);
  }
  for (int i = 0; i < t->spans.n; i++) {
    const viz_span_rec *s = &t->spans.v[i];
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", s->name);
    cJSON_AddNumberToObject(e, "ts", s->ts);
    cJSON_AddNumberToObject(e, "dur", s->dur);
    cJSON_AddNumberToObject(e, "sched", s->sched);
    cJSON_AddItemToArray(spans, e);
    if (s->ts + s->dur > end) end = s->ts + s->dur;
  }
  cJSON_AddItemToObject(root, "markers", viz_markers_json(t));
  cJSON_AddNumberToObject(root, "end_us", end);
  return print_free(root);
}
