/* trace_read.c: loads a VIZ trace (viz.h) into small records. Every line
 * is checked: the header's format and version first, then each line must
 * be a whole JSON object with an "ev"; a file that stops before its end
 * record was cut off (the process died, or the copy is partial). Unknown
 * events are skipped, so a later tg may add some within a version. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sys/stat.h>
#include "tg.h"
#include "util/util.h"
#include "viz/viz.h"

static char *dupstr(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return tg_xstrdup(cJSON_IsString(v) && v->valuestring ? v->valuestring : "");
}
static double num(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : 0;
}
/* an integer field, clamped to int or int64: a damaged trace's 1e300 must
 * not reach a cast (undefined past the range) */
static int inum(const cJSON *o, const char *key) {
  double d = num(o, key);
  return d >= INT_MAX ? INT_MAX : d <= INT_MIN ? INT_MIN : (int)d;
}
static int64_t i64num(const cJSON *o, const char *key) {
  int64_t r;
  double d = num(o, key);
  return tg_f64_to_i64(d, &r) ? r : d > 0 ? INT64_MAX : INT64_MIN;
}

/* The newest trace-*.jsonl of a directory (malloc'd), or NULL + tg_error. */
static char *newest_in(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) { tg_seterr("tg viz: cannot open %s: %s", dir, strerror(errno)); return NULL; }
  char *best = NULL;
  struct timespec best_t = { 0, 0 };
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t n = strlen(e->d_name);
    if (strncmp(e->d_name, "trace-", 6) || n < 12 || strcmp(e->d_name + n - 6, ".jsonl")) continue;
    char p[4096];
    if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p) continue;
    struct stat st;
    if (stat(p, &st) < 0 || !S_ISREG(st.st_mode)) continue;
    if (!best || st.st_mtim.tv_sec > best_t.tv_sec || (st.st_mtim.tv_sec == best_t.tv_sec && st.st_mtim.tv_nsec > best_t.tv_nsec) ||
        (st.st_mtim.tv_sec == best_t.tv_sec && st.st_mtim.tv_nsec == best_t.tv_nsec && strcmp(p, best) > 0)) {
      free(best);
      best = tg_xstrdup(p);
      best_t = st.st_mtim;
    }
  }
  closedir(d);
  if (!best) tg_seterr("tg viz: %s holds no trace (trace-*.jsonl); record one with VIZ=-1 or tg_viz_begin", dir);
  return best;
}

static int load_file(FILE *f, bool partial, viz_trace *t) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  long lineno = 0, off = 0;
  int rc = 0;
  while ((len = getline(&line, &cap, f)) >= 0) {
    lineno++;
    long here = off;
    off += (long)len;
    bool whole = len > 0 && line[len - 1] == '\n';
    if (!whole) {
      if (partial && lineno > 1) break;
      rc = tg_seterr("tg viz: %s is cut off: line %ld (byte %ld) ends without a newline (truncated trace; --partial reads what is complete)", t->path, lineno, here);
      break;
    }
    cJSON *o = cJSON_ParseWithLength(line, (size_t)len);
    if (!cJSON_IsObject(o)) {
      cJSON_Delete(o);
      if (lineno == 1) { rc = tg_seterr("tg viz: %s is not a tg viz trace (its first line is not a JSON header)", t->path); break; }
      if (partial) break;
      rc = tg_seterr("tg viz: %s: line %ld (byte %ld) is not a JSON record (a damaged or truncated trace)", t->path, lineno, here);
      break;
    }
    if (lineno == 1) {
      const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "tg_viz"), *fmt = cJSON_GetObjectItemCaseSensitive(o, "format");
      if (!cJSON_IsNumber(v) || !cJSON_IsString(fmt) || strcmp(fmt->valuestring, "tg-viz-trace")) {
        cJSON_Delete(o);
        rc = tg_seterr("tg viz: %s is not a tg viz trace (no tg-viz header on its first line)", t->path);
        break;
      }
      t->version = v->valueint;
      cJSON_Delete(o);
      if (t->version != VIZ_FORMAT_VERSION) {
        rc = tg_seterr("tg viz: %s was written in trace format version %d; this tg reads version %d (record it again, or use the tg that wrote it)",
                       t->path, t->version, VIZ_FORMAT_VERSION);
        break;
      }
      continue;
    }
    const cJSON *evj = cJSON_GetObjectItemCaseSensitive(o, "ev");
    const char *ev = cJSON_IsString(evj) ? evj->valuestring : NULL;
    if (!ev) {
      cJSON_Delete(o);
      rc = tg_seterr("tg viz: %s: line %ld has no \"ev\" (not a trace record)", t->path, lineno);
      break;
    }
    double ts = num(o, "ts");
    int sched = inum(o, "sched");
    const cJSON *itj = cJSON_GetObjectItemCaseSensitive(o, "item");
    int item = cJSON_IsNumber(itj) ? itj->valueint : -1;
    if (!strcmp(ev, "run") || !strcmp(ev, "copy")) {
      bool copy = ev[0] == 'c';
      char *name = copy ? NULL : dupstr(o, "name");
      if (copy) {
        const cJSON *fr = cJSON_GetObjectItemCaseSensitive(o, "from"), *to = cJSON_GetObjectItemCaseSensitive(o, "device");
        char nm[160];
        snprintf(nm, sizeof nm, "copy %s->%s", cJSON_IsString(fr) ? fr->valuestring : "?", cJSON_IsString(to) ? to->valuestring : "?");
        name = tg_xstrdup(nm);
      }
      VEC_PUSH(t->runs, ((viz_run_rec){ name, dupstr(o, "device"), sched, ts, num(o, "dur"), num(o, "flops"), num(o, "bytes"), copy }));
    } else if (!strcmp(ev, "schedule")) {
      viz_sched_rec s = { sched, ts, num(o, "dur"), 0, 0, 0, 0, here };
      const cJSON *items = cJSON_GetObjectItemCaseSensitive(o, "items"), *it;
      cJSON_ArrayForEach(it, items) {
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(it, "kind");
        if (cJSON_IsString(k) && !strcmp(k->valuestring, "copy")) s.ncopies++;
        else s.nkernels++;
      }
      VEC_PUSH(t->scheds, s);
    } else if (!strcmp(ev, "kernel")) {
      VEC_PUSH(t->kernels, ((viz_kernel_rec){ dupstr(o, "name"), sched, item, here }));
    } else if (!strcmp(ev, "pass")) {
      VEC_PUSH(t->passes, ((viz_pass_rec){ dupstr(o, "name"), dupstr(o, "ctx"), sched, item, inum(o, "depth"), inum(o, "n"), ts, num(o, "dur"), here }));
    } else if (!strcmp(ev, "marker")) {
      VEC_PUSH(t->markers, ((viz_marker_rec){ dupstr(o, "name"), ts }));
    } else if (!strcmp(ev, "mem")) {
      VEC_PUSH(t->mems, ((viz_mem_rec){ dupstr(o, "device"), ts, i64num(o, "bytes") }));
    } else if (!strcmp(ev, "span") || !strcmp(ev, "compile")) {
      char *name = dupstr(o, "name");
      if (ev[0] == 'c') {   /* one kernel's compile: "compile NAME" */
        char nm[160];
        snprintf(nm, sizeof nm, "compile %s", name);
        free(name);
        name = tg_xstrdup(nm);
      }
      VEC_PUSH(t->spans, ((viz_span_rec){ name, sched, ts, num(o, "dur") }));
      for (int i = t->scheds.n - 1; ev[0] == 's' && i >= 0; i--)
        if (t->scheds.v[i].id == sched) {
          if (!strcmp(name, "compile")) t->scheds.v[i].compile_us += num(o, "dur");
          else if (!strcmp(name, "run")) t->scheds.v[i].run_us += num(o, "dur");
          break;
        }
    } else if (!strcmp(ev, "end")) {
      t->ended = true;
      t->end_ts = ts;
      t->dropped = (long)num(o, "dropped");
    }
    cJSON_Delete(o);
    if (t->ended) break;
  }
  free(line);
  if (rc == 0 && lineno == 0) rc = tg_seterr("tg viz: %s is empty (not a trace, or cut off before its header)", t->path);
  if (rc == 0 && !t->ended && !partial)
    rc = tg_seterr("tg viz: %s is cut off: it has no end record (the recording did not finish: the process died or is still running; --partial reads what is there)", t->path);
  return rc;
}

/* first_run: where each schedule's run records begin (viz_item_run). */
static void index_runs(viz_trace *t) {
  int maxid = 0;
  for (int i = 0; i < t->scheds.n; i++) if (t->scheds.v[i].id > maxid) maxid = t->scheds.v[i].id;
  for (int i = 0; i < t->runs.n; i++) if (t->runs.v[i].sched > maxid) maxid = t->runs.v[i].sched;
  t->nsched_ids = maxid + 1;
  t->first_run = tg_xmalloc(sizeof(int) * (size_t)t->nsched_ids);
  for (int i = 0; i < t->nsched_ids; i++) t->first_run[i] = -1;
  for (int i = t->runs.n - 1; i >= 0; i--) if (t->runs.v[i].sched > 0) t->first_run[t->runs.v[i].sched] = i;
}

const viz_run_rec *viz_item_run(const viz_trace *t, int sched, int item) {
  if (sched <= 0 || sched >= t->nsched_ids || t->first_run[sched] < 0 || item < 0) return NULL;
  long i = (long)t->first_run[sched] + item;
  if (i >= t->runs.n || t->runs.v[i].sched != sched) return NULL;
  return &t->runs.v[i];
}

int viz_trace_load(const char *path, bool partial, viz_trace *t) {
  memset(t, 0, sizeof *t);
  struct stat st;
  if (stat(path, &st) < 0) return tg_seterr("tg viz: %s: %s", path, strerror(errno));
  t->path = S_ISDIR(st.st_mode) ? newest_in(path) : tg_xstrdup(path);
  if (!t->path) return -1;
  FILE *f = fopen(t->path, "rb");
  if (!f) { int rc = tg_seterr("tg viz: cannot open %s: %s", t->path, strerror(errno)); viz_trace_free(t); return rc; }
  int rc = load_file(f, partial, t);
  fclose(f);
  if (rc == 0) index_runs(t);
  if (rc < 0) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", tg_error());
    viz_trace_free(t);
    tg_seterr("%s", msg);
  }
  return rc;
}

void viz_trace_free(viz_trace *t) {
  for (int i = 0; i < t->runs.n; i++) { free(t->runs.v[i].name); free(t->runs.v[i].device); }
  for (int i = 0; i < t->kernels.n; i++) free(t->kernels.v[i].name);
  for (int i = 0; i < t->passes.n; i++) { free(t->passes.v[i].name); free(t->passes.v[i].ctx); }
  for (int i = 0; i < t->markers.n; i++) free(t->markers.v[i].name);
  for (int i = 0; i < t->mems.n; i++) free(t->mems.v[i].device);
  for (int i = 0; i < t->spans.n; i++) free(t->spans.v[i].name);
  VEC_FREE(t->runs); VEC_FREE(t->kernels); VEC_FREE(t->passes); VEC_FREE(t->markers);
  VEC_FREE(t->mems); VEC_FREE(t->spans); VEC_FREE(t->scheds);
  free(t->first_run);
  free(t->path);
  memset(t, 0, sizeof *t);
}

void *viz_trace_record(const viz_trace *t, long off) {
  FILE *f = fopen(t->path, "rb");
  if (!f) { tg_seterr("tg viz: cannot open %s: %s", t->path, strerror(errno)); return NULL; }
  char *line = NULL;
  size_t cap = 0;
  cJSON *o = NULL;
  if (fseek(f, off, SEEK_SET) == 0 && getline(&line, &cap, f) > 0) o = cJSON_Parse(line);
  free(line);
  fclose(f);
  if (!cJSON_IsObject(o)) { cJSON_Delete(o); tg_seterr("tg viz: %s changed since it was read (no record at byte %ld)", t->path, off); return NULL; }
  return o;
}
