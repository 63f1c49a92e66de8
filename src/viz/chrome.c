/* chrome.c: a trace's profile as Chrome trace-event JSON (the "JSON Object
 * Format": {"traceEvents": [...]}), which Perfetto (ui.perfetto.dev) and
 * chrome://tracing open. Process 0 is the host (schedule, compile and run
 * spans, markers); each device is a process with a kernels track, a copies
 * track and a memory counter. Times are microseconds, as the format wants. */
#include <cjson/cJSON.h>
#include <errno.h>
#include "tg.h"
#include "viz/viz.h"

typedef struct { const char *v[64]; int n; } devlist;

static int dev_pid(devlist *d, const char *name) {
  for (int i = 0; i < d->n; i++) if (!strcmp(d->v[i], name)) return i + 1;
  if (d->n == 64) return 64;
  d->v[d->n++] = name;
  return d->n;
}

static cJSON *event(cJSON *arr, const char *ph, const char *name, const char *cat, int pid, int tid, double ts) {
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "ph", ph);
  cJSON_AddStringToObject(e, "name", name);
  if (cat) cJSON_AddStringToObject(e, "cat", cat);
  cJSON_AddNumberToObject(e, "pid", pid);
  cJSON_AddNumberToObject(e, "tid", tid);
  cJSON_AddNumberToObject(e, "ts", ts);
  cJSON_AddItemToArray(arr, e);
  return e;
}

static void meta(cJSON *arr, const char *what, int pid, int tid, const char *name) {
  cJSON *e = event(arr, "M", what, NULL, pid, tid, 0);
  cJSON *a = cJSON_AddObjectToObject(e, "args");
  cJSON_AddStringToObject(a, "name", name);
}

static bool inside(double ts, double t0, double t1) { return ts >= t0 && ts <= t1; }

int viz_chrome_write(const viz_trace *t, double t0, double t1, const char *path) {
  cJSON *root = cJSON_CreateObject();
  cJSON *evs = cJSON_AddArrayToObject(root, "traceEvents");
  cJSON_AddStringToObject(root, "displayTimeUnit", "ms");
  cJSON *other = cJSON_AddObjectToObject(root, "otherData");
  cJSON_AddStringToObject(other, "producer", "tg viz");
  cJSON_AddStringToObject(other, "trace", t->path);
  devlist devs = { { 0 }, 0 };
  meta(evs, "process_name", 0, 0, "tg host");
  meta(evs, "thread_name", 0, 0, "engine");
  meta(evs, "thread_name", 0, 1, "compile");
  int n = 0;
  for (int i = 0; i < t->scheds.n; i++) {
    const viz_sched_rec *s = &t->scheds.v[i];
    if (!inside(s->ts, t0, t1)) continue;
    char nm[64];
    snprintf(nm, sizeof nm, "schedule %d", s->id);
    cJSON *e = event(evs, "X", nm, "schedule", 0, 0, s->ts);
    cJSON_AddNumberToObject(e, "dur", s->sched_us);
    cJSON *a = cJSON_AddObjectToObject(e, "args");
    cJSON_AddNumberToObject(a, "kernels", s->nkernels);
    cJSON_AddNumberToObject(a, "copies", s->ncopies);
    n++;
  }
  for (int i = 0; i < t->spans.n; i++) {
    const viz_span_rec *s = &t->spans.v[i];
    if (!inside(s->ts, t0, t1)) continue;
    bool per_kernel = !strncmp(s->name, "compile ", 8);   /* one kernel's compile: its own track */
    cJSON *e = event(evs, "X", s->name, "span", 0, per_kernel ? 1 : 0, s->ts);
    cJSON_AddNumberToObject(e, "dur", s->dur);
    cJSON *a = cJSON_AddObjectToObject(e, "args");
    cJSON_AddNumberToObject(a, "schedule", s->sched);
    n++;
  }
  for (int i = 0; i < t->runs.n; i++) {
    const viz_run_rec *r = &t->runs.v[i];
    if (!inside(r->ts, t0, t1)) continue;
    int pid = dev_pid(&devs, r->device);
    cJSON *e = event(evs, "X", r->name, r->copy ? "copy" : "kernel", pid, r->copy ? 1 : 0, r->ts);
    cJSON_AddNumberToObject(e, "dur", r->dur);
    cJSON *a = cJSON_AddObjectToObject(e, "args");
    cJSON_AddNumberToObject(a, "schedule", r->sched);
    if (!r->copy) {
      cJSON_AddNumberToObject(a, "GFLOPS", r->dur > 0 ? r->flops / r->dur * 1e-3 : 0);
      cJSON_AddNumberToObject(a, "GB/s", r->dur > 0 ? r->bytes / r->dur * 1e-3 : 0);
    }
    cJSON_AddNumberToObject(a, "bytes", r->bytes);
    n++;
  }
  /* memory in use per device: a counter track */
  double used[64] = { 0 };   /* deltas of a damaged trace may add up past int64 */
  for (int i = 0; i < t->mems.n; i++) {
    const viz_mem_rec *m = &t->mems.v[i];
    int pid = dev_pid(&devs, m->device);
    used[pid - 1] += (double)m->delta;
    if (!inside(m->ts, t0, t1)) continue;
    cJSON *e = event(evs, "C", "memory", "memory", pid, 0, m->ts);
    cJSON *a = cJSON_AddObjectToObject(e, "args");
    cJSON_AddNumberToObject(a, "bytes", used[pid - 1]);
    n++;
  }
  for (int i = 0; i < t->markers.n; i++) {
    const viz_marker_rec *m = &t->markers.v[i];
    if (!inside(m->ts, t0, t1)) continue;
    cJSON *e = event(evs, "i", m->name, "marker", 0, 0, m->ts);
    cJSON_AddStringToObject(e, "s", "g");
    n++;
  }
  for (int i = 0; i < devs.n; i++) {
    meta(evs, "process_name", i + 1, 0, devs.v[i]);
    meta(evs, "thread_name", i + 1, 0, "kernels");
    meta(evs, "thread_name", i + 1, 1, "copies");
  }
  char *text = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  if (!text) return tg_seterr("tg viz --chrome: out of memory");
  FILE *f = fopen(path, "wb");
  if (!f) { free(text); return tg_seterr("tg viz --chrome: cannot create %s: %s", path, strerror(errno)); }
  size_t len = strlen(text);
  bool ok = fwrite(text, 1, len, f) == len;
  ok = fputc('\n', f) != EOF && ok;
  ok = fclose(f) == 0 && ok;
  free(text);
  if (!ok) return tg_seterr("tg viz --chrome: writing %s failed", path);
  return n;
}
