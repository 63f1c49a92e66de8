/* test_viz.c: VIZ: recording a realize to a trace, the `tg viz` CLI over it
 * (list, --top, -s, --interval, --json, colors), the Chrome export, and
 * bad trace files (truncated, another version, not a trace). */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>
#include "test.h"
#include "viz/viz.h"

/* Records one small realize (a matmul, its transpose read through a view,
 * a relu and a sum, between markers "a" and "b") into a fresh directory.
 * Returns the trace path (malloc'd) or NULL. */
static char *record_small(char *dir_out, size_t n) {
  char dir[] = "/tmp/tg_viz_XXXXXX";
  if (!mkdtemp(dir)) return NULL;
  snprintf(dir_out, n, "%s", dir);
  if (tg_viz_begin(dir) < 0) { test_fail(__FILE__, __LINE__, "tg_viz_begin: %s", tg_error()); return NULL; }
  tg_scope_begin();
  tg_profile_marker("a");
  tg_tensor *x = tg_arange(0, 6 * 5, 1, TG_F32);
  tg_tensor *w = tg_rand(TG_SHAPE(5, 3), TG_F32);
  tg_tensor *y = tg_relu(tg_matmul(tg_permute(tg_reshape(x, TG_SHAPE(5, 6)), TG_AXES(1, 0)), w));
  tg_tensor *s = tg_sum(y, TG_AXES(1), false);
  float out[6];
  int rc = tg_data(s, out, sizeof out);
  tg_profile_marker("b");
  tg_scope_end();
  if (rc < 0) test_fail(__FILE__, __LINE__, "tg_data: %s", tg_error());
  if (tg_viz_end() < 0) test_fail(__FILE__, __LINE__, "tg_viz_end: %s", tg_error());
  const char *f = tg_viz_file();
  return f ? strdup(f) : NULL;
}

/* Runs `tg viz ARGS...` in process; its stdout (malloc'd) and exit status. */
static char *run_cli(int *status, char **err_text, int argc, char **argv) {
  char *obuf = NULL, *ebuf = NULL;
  size_t on = 0, en = 0;
  FILE *out = open_memstream(&obuf, &on), *err = open_memstream(&ebuf, &en);
  *status = viz_cli(argc, argv, out, err);
  fclose(out);
  fclose(err);
  if (err_text) *err_text = ebuf;
  else free(ebuf);
  return obuf;
}
#define CLI(status, err, ...) run_cli(status, err, (int)(sizeof((char *[]){ "viz", __VA_ARGS__ }) / sizeof(char *)), (char *[]){ "viz", __VA_ARGS__ })

static void rm_dir(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

TEST(viz_records_a_realize) {
  char dir[64];
  char *path = record_small(dir, sizeof dir);
  CHECK(path != NULL);
  if (!path) return;
  CHECK(!strncmp(path, dir, strlen(dir)));   /* in the directory asked for */
  viz_trace t;
  CHECK_MSG(viz_trace_load(dir, false, &t) == 0, "load: %s", tg_error());
  CHECK(t.ended && t.version == VIZ_FORMAT_VERSION);
  CHECK(t.scheds.n >= 1);
  CHECK(t.kernels.n >= 1);
  CHECK(t.passes.n >= 1);   /* the transpose's index math is simplified */
  CHECK_EQ_INT(t.markers.n, 2);
  CHECK(t.mems.n >= 1);
  int kernel_runs = 0;
  for (int i = 0; i < t.runs.n; i++)
    if (!t.runs.v[i].copy) {
      kernel_runs++;
      CHECK(t.runs.v[i].dur > 0);
      CHECK(t.runs.v[i].ts >= t.markers.v[0].ts && t.runs.v[i].ts <= t.markers.v[1].ts);
    }
  CHECK(kernel_runs >= 1);
  /* each kernel record: its source defines a function of its name, its AST
   * ends in the SINK of its STOREs, and it ran in its schedule */
  for (int i = 0; i < t.kernels.n; i++) {
    cJSON *k = viz_trace_record(&t, t.kernels.v[i].off);
    CHECK(k != NULL);
    if (!k) continue;
    const char *src = cJSON_GetStringValue(cJSON_GetObjectItem(k, "src"));
    char fn[128];
    snprintf(fn, sizeof fn, "%s(", t.kernels.v[i].name);
    CHECK_MSG(src && strstr(src, fn), "kernel %s: its source does not define it", t.kernels.v[i].name);
    cJSON *nodes = cJSON_GetObjectItem(cJSON_GetObjectItem(k, "ast"), "nodes");
    int nn = cJSON_GetArraySize(nodes);
    CHECK(nn > 2);
    CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetArrayItem(nodes, nn - 1), 0)), "SINK"));
    const char *lin = cJSON_GetStringValue(cJSON_GetObjectItem(k, "linear"));
    CHECK(lin && strstr(lin, "STORE"));
    bool ran = false;
    for (int j = 0; j < t.runs.n; j++) ran |= t.runs.v[j].sched == t.kernels.v[i].sched && !strcmp(t.runs.v[j].name, t.kernels.v[i].name);
    CHECK(ran);
    cJSON_Delete(k);
  }
  /* every pass record names its steps' rules */
  cJSON *p = viz_trace_record(&t, t.passes.v[0].off);
  CHECK(p && cJSON_GetArraySize(cJSON_GetObjectItem(p, "steps")) == t.passes.v[0].nsteps);
  cJSON *st = cJSON_GetArrayItem(cJSON_GetObjectItem(p, "steps"), 0);
  CHECK(st && cJSON_GetStringValue(cJSON_GetObjectItem(st, "rule")) && cJSON_GetStringValue(cJSON_GetObjectItem(st, "before")));
  cJSON_Delete(p);
  viz_trace_free(&t);
  free(path);
  rm_dir(dir);
}

/* The passes written as rule tables are named in the trace: the scheduler's
 * lowering, float16 math in float32 on the CPU, the vectorizer's clean-ups
 * (a mask cast to float in float lanes). */
TEST(viz_names_the_rule_passes) {
  char dir[] = "/tmp/tg_viz_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  if (tg_viz_begin(dir) < 0) { test_fail(__FILE__, __LINE__, "tg_viz_begin: %s", tg_error()); return; }
  tg_scope_begin();
  tg_tensor *a = tg_arange(0, 64, 1, TG_F32), *b = tg_arange(64, 0, -1, TG_F32);
  tg_tensor *h = tg_cast(a, TG_F16);
  CHECK_OK(tg_realize(tg_add(h, h)) == 0);
  CHECK(tg_set_kernel_opts("UPCAST:0:8") == 0);   /* float lanes */
  CHECK_OK(tg_realize(tg_cast(tg_lt(a, b), TG_F32)) == 0);
  tg_set_kernel_opts(NULL);
  tg_tensor *w = tg_requires_grad(tg_arange(1, 9, 1, TG_F32), true), *gw = NULL;   /* the gradient rules */
  CHECK_OK(tg_gradient(tg_sum(tg_mul(w, w), TG_ALL, false), &w, 1, &gw) == 0 && tg_realize(gw) == 0);
  tg_scope_end();
  CHECK_OK(tg_viz_end() == 0);
  viz_trace t;
  CHECK_MSG(viz_trace_load(dir, false, &t) == 0, "load: %s", tg_error());
  const char *want[] = { "lower", "small floats", "vectorize", "gradient", "render c" };
  for (int w = 0; w < 5; w++) {
    bool seen = false;
    for (int i = 0; i < t.passes.n; i++) seen |= !strcmp(t.passes.v[i].name, want[w]);
    CHECK_MSG(seen, "no pass named '%s' in the trace", want[w]);
  }
  viz_trace_free(&t);
  rm_dir(dir);
}

TEST(viz_off_and_misuse) {
  char dir[] = "/tmp/tg_viz_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  /* not recording: a realize leaves nothing, markers are no-ops */
  CHECK(!viz_on);
  tg_profile_marker("nobody hears this");
  tg_scope_begin();
  float v[4];
  CHECK(tg_data(tg_mul(tg_arange(0, 4, 1, TG_F32), tg_full(TG_SHAPE(4), 3, TG_F32)), v, sizeof v) == 0);
  tg_scope_end();
  CHECK(tg_viz_end() < 0 && strstr(tg_error(), "no trace"));
  CHECK(tg_viz_begin(dir) == 0);
  CHECK(tg_viz_begin(dir) < 0 && strstr(tg_error(), "already"));
  CHECK(tg_viz_end() == 0);
  CHECK(tg_viz_begin("/proc/no/such/dir") < 0 && strstr(tg_error(), "cannot create"));
  rm_dir(dir);
}

TEST(viz_cli_list_top_show) {
  char dir[64];
  char *path = record_small(dir, sizeof dir);
  if (!path) return;
  viz_trace t;
  CHECK(viz_trace_load(path, false, &t) == 0);
  /* kernels compiled by earlier tests are recorded all the same */
  CHECK(t.kernels.n >= 1 && t.passes.n >= 1);
  if (t.kernels.n < 1 || t.passes.n < 1) { viz_trace_free(&t); free(path); return; }
  int st;
  char *err;
  /* the list names every kernel that was compiled */
  char *out = CLI(&st, NULL, path);
  CHECK_EQ_INT(st, 0);
  for (int i = 0; i < t.kernels.n; i++) CHECK_MSG(out && strstr(out, t.kernels.v[i].name), "list lacks kernel %s", t.kernels.v[i].name);
  CHECK(out && !strchr(out, '\033'));   /* not a terminal: no colors */
  free(out);
  /* --top: shares add up to 100%, the total is the sum of the kernel runs */
  out = CLI(&st, NULL, path, "--top", "1000", "--json");
  CHECK_EQ_INT(st, 0);
  cJSON *j = cJSON_Parse(out);
  CHECK(j != NULL);
  double share = 0, total = 0, runs_us = 0;
  int calls = 0, nruns = 0;
  cJSON *row;
  cJSON_ArrayForEach(row, cJSON_GetObjectItem(j, "top")) {
    share += cJSON_GetNumberValue(cJSON_GetObjectItem(row, "share"));
    total += cJSON_GetNumberValue(cJSON_GetObjectItem(row, "total_us"));
    calls += (int)cJSON_GetNumberValue(cJSON_GetObjectItem(row, "calls"));
  }
  for (int i = 0; i < t.runs.n; i++) if (!t.runs.v[i].copy) { runs_us += t.runs.v[i].dur; nruns++; }
  CHECK_NEAR(share, 100, 1e-6);
  CHECK_NEAR(total, runs_us, 1e-9);
  CHECK_NEAR(cJSON_GetNumberValue(cJSON_GetObjectItem(j, "total_us")), runs_us, 1e-9);
  CHECK_EQ_INT(calls, nruns);
  cJSON_Delete(j);
  free(out);
  /* --top 1 --jsonl: one line, the kernel with the most time */
  out = CLI(&st, NULL, path, "--top", "1", "--jsonl");
  CHECK(out && strchr(out, '\n') == out + strlen(out) - 1);
  j = cJSON_Parse(out);
  double best = 0;
  for (int i = 0; i < t.runs.n; i++) if (!t.runs.v[i].copy && t.runs.v[i].dur > best) best = t.runs.v[i].dur;
  CHECK(j && cJSON_GetNumberValue(cJSON_GetObjectItem(j, "total_us")) >= best);
  cJSON_Delete(j);
  free(out);
  /* --json list: one document with every schedule and its items */
  out = CLI(&st, NULL, path, "--json");
  j = cJSON_Parse(out);
  CHECK(j && cJSON_GetArraySize(cJSON_GetObjectItem(j, "schedules")) == t.scheds.n);
  int items = 0;
  cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "schedules")) items += cJSON_GetArraySize(cJSON_GetObjectItem(s, "items"));
  CHECK_EQ_INT(items, t.runs.n);   /* each item ran once */
  cJSON_Delete(j);
  free(out);
  /* -s KERNEL: opts, AST, source */
  out = CLI(&st, NULL, path, "-s", t.kernels.v[0].name);
  CHECK_EQ_INT(st, 0);
  CHECK(out && strstr(out, "opts:") && strstr(out, "AST:") && strstr(out, "source:") && strstr(out, "SINK"));
  free(out);
  /* -s PASS: its rules step by step */
  out = CLI(&st, NULL, path, "-s", t.passes.v[0].name);
  CHECK_EQ_INT(st, 0);
  CHECK(out && strstr(out, "pass ") && strstr(out, "-> "));
  free(out);
  /* -s of something absent: an error naming what is there */
  out = CLI(&st, &err, path, "-s", "no_such_kernel");
  CHECK_EQ_INT(st, 1);
  CHECK(err && strstr(err, "no_such_kernel") && strstr(err, t.kernels.v[0].name));
  free(out); free(err);
  /* --interval between the markers: everything; between a and a: nothing */
  out = CLI(&st, NULL, path, "--interval", "a", "b", "--top", "100", "--json");
  j = cJSON_Parse(out);
  CHECK(j && cJSON_GetArraySize(cJSON_GetObjectItem(j, "top")) >= 1);
  cJSON_Delete(j);
  free(out);
  out = CLI(&st, &err, path, "--interval", "a", "zz");
  CHECK_EQ_INT(st, 1);
  CHECK(err && strstr(err, "zz") && strstr(err, "markers: a b"));
  free(out); free(err);
  /* usage errors */
  out = CLI(&st, NULL, path, "--top", "x");
  CHECK_EQ_INT(st, 2);
  free(out);
  viz_trace_free(&t);
  free(path);
  rm_dir(dir);
}

TEST(viz_chrome_export) {
  char dir[64];
  char *path = record_small(dir, sizeof dir);
  if (!path) return;
  char json[128];
  snprintf(json, sizeof json, "%s/chrome.json", dir);
  int st;
  char *out = CLI(&st, NULL, path, "--chrome", json);
  CHECK_EQ_INT(st, 0);
  free(out);
  size_t n;
  char *text = test_read_file(json, &n);
  CHECK(text != NULL);
  text = realloc(text, n + 1);
  text[n] = 0;
  cJSON *j = cJSON_Parse(text);
  CHECK(j != NULL);
  cJSON *evs = cJSON_GetObjectItem(j, "traceEvents"), *e;
  CHECK(cJSON_IsArray(evs));
  viz_trace t;
  CHECK(viz_trace_load(path, false, &t) == 0);
  int nx_kernels = 0, markers = 0;
  cJSON_ArrayForEach(e, evs) {
    const char *ph = cJSON_GetStringValue(cJSON_GetObjectItem(e, "ph"));
    CHECK(ph && cJSON_IsNumber(cJSON_GetObjectItem(e, "pid")) && cJSON_IsNumber(cJSON_GetObjectItem(e, "ts")));
    if (ph && !strcmp(ph, "X")) CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(e, "dur")) >= 0);
    const char *cat = cJSON_GetStringValue(cJSON_GetObjectItem(e, "cat"));
    if (cat && !strcmp(cat, "kernel")) nx_kernels++;
    if (ph && !strcmp(ph, "i")) markers++;
  }
  int kruns = 0;
  for (int i = 0; i < t.runs.n; i++) kruns += !t.runs.v[i].copy;
  CHECK_EQ_INT(nx_kernels, kruns);
  CHECK_EQ_INT(markers, 2);
  cJSON_Delete(j);
  free(text);
  /* and Python's json reads it too */
  if (system("python3 -c 'pass' >/dev/null 2>&1") == 0) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "python3 -c \"import json,sys; d=json.load(open('%s')); sys.exit(0 if d['traceEvents'] else 1)\"", json);
    CHECK(system(cmd) == 0);
  }
  viz_trace_free(&t);
  free(path);
  rm_dir(dir);
}

static void write_file(const char *path, const char *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return;
  if (n) fwrite(data, 1, n, f);
  fclose(f);
}

TEST(viz_bad_traces) {
  char dir[64];
  char *path = record_small(dir, sizeof dir);
  if (!path) return;
  size_t n;
  char *full = test_read_file(path, &n);
  CHECK(full && n > 100);
  if (!full) return;
  full = realloc(full, n + 1);
  full[n] = 0;
  char bad[128];
  snprintf(bad, sizeof bad, "%s/bad.jsonl", dir);
  int st;
  char *err;
  /* cut in the middle of a line */
  char *mid = memchr(full + n / 2, '\n', n - n / 2);
  size_t cut = mid ? (size_t)(mid - full) - 3 : n / 2;
  write_file(bad, full, cut);
  free(CLI(&st, &err, bad));
  CHECK_EQ_INT(st, 1);
  CHECK_MSG(err && strstr(err, "cut off") && strstr(err, bad), "%s", err ? err : "");
  free(err);
  /* ... which --partial reads up to there */
  free(CLI(&st, NULL, bad, "--partial"));
  CHECK_EQ_INT(st, 0);
  /* whole lines, but no end record */
  write_file(bad, full, cut + 4);
  free(CLI(&st, &err, bad));
  CHECK(st == 1 && err && strstr(err, "no end record"));
  free(err);
  /* another format version */
  char *v2 = strdup(full);
  char *at = strstr(v2, "\"tg_viz\":1");
  CHECK(at != NULL);
  if (at) at[9] = '7';
  write_file(bad, v2, n);
  free(CLI(&st, &err, bad));
  CHECK(st == 1 && err && strstr(err, "version 7") && strstr(err, "reads version 1"));
  free(err);
  free(v2);
  /* not a trace at all, and an empty file */
  write_file(bad, "{\"hello\": 1}\n", 13);
  free(CLI(&st, &err, bad));
  CHECK(st == 1 && err && strstr(err, "not a tg viz trace"));
  free(err);
  write_file(bad, "", 0);
  free(CLI(&st, &err, bad));
  CHECK(st == 1 && err && strstr(err, "empty"));
  free(err);
  /* a damaged line inside */
  char *dmg = strdup(full);
  char *second = strchr(dmg, '\n');
  if (second && second[1]) second[2] = '#';
  write_file(bad, dmg, n);
  free(CLI(&st, &err, bad));
  CHECK(st == 1 && err && strstr(err, "line 2"));
  free(err);
  free(dmg);
  /* every cut of the file: an error or a result, never a crash */
  for (size_t c = 0; c < n; c += n / 61 + 1) {
    write_file(bad, full, c);
    free(CLI(&st, NULL, bad, "--top", "5"));
    CHECK(st == 1);
    free(CLI(&st, NULL, bad, "--partial", "--chrome", "/dev/null"));
    CHECK(st == 0 || st == 1);
  }
  /* a directory without traces */
  char empty_dir[128];
  snprintf(empty_dir, sizeof empty_dir, "%s/none", dir);
  mkdir(empty_dir, 0777);
  free(CLI(&st, &err, empty_dir));
  CHECK(st == 1 && err && strstr(err, "holds no trace"));
  free(err);
  free(full);
  free(path);
  rm_dir(dir);
}

/* Colors on a terminal unless NO_COLOR is set: the CLI writes to a pty. */
TEST(viz_no_color) {
  char dir[64];
  char *path = record_small(dir, sizeof dir);
  if (!path) return;
  int m = posix_openpt(O_RDWR | O_NOCTTY);
  if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0) { free(path); rm_dir(dir); SKIP("no pseudo-terminal"); }
  int sfd = open(ptsname(m), O_RDWR | O_NOCTTY);
  FILE *tty = sfd >= 0 ? fdopen(sfd, "w") : NULL;
  CHECK(tty != NULL);
  if (!tty) { close(m); free(path); rm_dir(dir); return; }
  fcntl(m, F_SETFL, O_NONBLOCK);
  char *argv[] = { "viz", path, "--top", "3" };
  for (int pass = 0; pass < 2; pass++) {
    if (pass) setenv("NO_COLOR", "1", 1); else unsetenv("NO_COLOR");
    FILE *err = fopen("/dev/null", "w");
    int st = viz_cli(4, argv, tty, err);
    fclose(err);
    fflush(tty);
    CHECK_EQ_INT(st, 0);
    char buf[16384];
    ssize_t got = 0, r;
    usleep(20000);
    while ((r = read(m, buf + got, sizeof buf - 1 - (size_t)got)) > 0) got += r;
    buf[got > 0 ? got : 0] = 0;
    CHECK_MSG(got > 0 && strstr(buf, "kernel"), "nothing read from the terminal");
    CHECK_MSG((strchr(buf, '\033') != NULL) == (pass == 0), "NO_COLOR=%d: colors %s", pass, strchr(buf, '\033') ? "present" : "absent");
  }
  unsetenv("NO_COLOR");
  fclose(tty);
  close(m);
  free(path);
  rm_dir(dir);
}

/* DEBUG=5 prints the linearized program, DEBUG=7 the disassembly (CPU). */
TEST(viz_debug_levels) {
  char log[] = "/tmp/tg_viz_debug_XXXXXX";
  int fd = mkstemp(log);
  CHECK(fd >= 0);
  if (fd < 0) return;
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  setenv("DEBUG", "7", 1);
  tg_scope_begin();
  float v[7 * 3];
  /* shapes no other test uses: a kernel not yet compiled in this process */
  int rc = tg_data(tg_add(tg_mul(tg_arange(0, 21, 1, TG_F32), tg_full(TG_SHAPE(21), 1.75, TG_F32)), tg_full(TG_SHAPE(21), 0.5, TG_F32)), v, sizeof v);
  tg_scope_end();
  unsetenv("DEBUG");
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  CHECK(rc == 0);
  size_t n;
  char *text = test_read_file(log, &n);
  unlink(log);
  CHECK(text != NULL);
  if (!text) return;
  text = realloc(text, n + 1);
  text[n] = 0;
  CHECK_MSG(strstr(text, "linearized:") && strstr(text, "LOOP") && strstr(text, "STORE"), "DEBUG=5 output:\n%.2000s", text);
  CHECK(strstr(text, "lowered (before linearize)"));   /* DEBUG=6 */
  bool cpu = strstr(text, "*** CPU") != NULL;
  if (cpu && system("objdump --version >/dev/null 2>&1") == 0)
    CHECK_MSG(strstr(text, "disassembly") && strstr(text, ">:"), "DEBUG=7 output:\n%.3000s", text);
  free(text);
}

/* A trace file is input: numbers past int or int64 (a damaged or forged
 * trace) load clamped, never through an undefined cast, and memory deltas
 * that add up past int64 export as doubles. */
TEST(viz_trace_huge_numbers) {
  char path[] = "/tmp/tg-viz-huge-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd < 0) return;
  FILE *f = fdopen(fd, "w");
  fprintf(f, "{\"tg_viz\":1,\"format\":\"tg-viz-trace\"}\n"
             "{\"ev\":\"pass\",\"name\":\"p\",\"ctx\":\"c\",\"sched\":1e300,\"depth\":-1e300,\"n\":1e19,\"ts\":1,\"dur\":1}\n"
             "{\"ev\":\"mem\",\"device\":\"NULL\",\"ts\":2,\"bytes\":1e300}\n"
             "{\"ev\":\"mem\",\"device\":\"NULL\",\"ts\":3,\"bytes\":9.2e18}\n"
             "{\"ev\":\"mem\",\"device\":\"NULL\",\"ts\":4,\"bytes\":-1e300}\n"
             "{\"ev\":\"kernel\",\"name\":\"k\",\"sched\":0,\"item\":0,\"ast\":{\"size\":1e300}}\n"
             "{\"ev\":\"kernel\",\"name\":\"k2\",\"sched\":0,\"item\":1,\"ast\":{\"nodes\":[[\"ADD\",\"f32\",\"\",[1e300,-1e300]]]}}\n");
  fclose(f);
  viz_trace t;
  CHECK_MSG(viz_trace_load(path, true, &t) == 0, "load: %s", tg_error());
  CHECK(t.passes.n == 1 && t.passes.v[0].sched == INT_MAX && t.passes.v[0].depth == INT_MIN);
  CHECK(t.mems.n == 3 && t.mems.v[0].delta == INT64_MAX && t.mems.v[2].delta == INT64_MIN);
  char out[64];
  snprintf(out, sizeof out, "%s.json", path);
  CHECK_MSG(viz_chrome_write(&t, 0, 10, out) >= 0, "chrome: %s", tg_error());
  viz_trace_free(&t);
  /* the CLI prints such records (a pass's rule count, a graph's size and sources) */
  int st;
  const char *shows[] = { "p", "k", "k2" };
  for (int i = 0; i < 3; i++) {
    char *o = CLI(&st, NULL, path, "--partial", "-s", (char *)shows[i]);
    CHECK_MSG(st == 0, "-s %s: status %d", shows[i], st);
    free(o);
  }
  unlink(out);
  unlink(path);
}

/* A JIT's replays are in the profile: every captured kernel, timed one at a
 * time (batches are off while recording), between the markers around the
 * replays, with the same names as the captured run's kernels. */
static int viz_jit_step(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)ctx; (void)nin; (void)nout;
  tg_tensor *y = tg_add(tg_mul(in[0], tg_scalar(2, TG_F32)), tg_scalar(1, TG_F32));
  out[0] = tg_sum(tg_relu(y), TG_AXES(0), false);
  return out[0] ? 0 : -1;
}

TEST(viz_records_jit_replays) {
  char dir[] = "/tmp/tg_viz_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  if (tg_viz_begin(dir) < 0) { test_fail(__FILE__, __LINE__, "tg_viz_begin: %s", tg_error()); return; }
  tg_jit *j = tg_jit_new(viz_jit_step, NULL);
  float x[64], want = 0, got = 0;
  for (int i = 0; i < 64; i++) x[i] = (float)(i - 20);
  tg_scope_begin();
  for (int call = 0; call < 5; call++) {
    if (call == 2) tg_profile_marker("replays");
    tg_tensor *in = tg_from_data(x, TG_SHAPE(64), TG_F32), *out = NULL;
    CHECK_OK(tg_jit_call(j, &in, 1, &out, 1) == 0);
    CHECK_OK(out && tg_data(out, &got, sizeof got) == 0);
  }
  tg_profile_marker("end");
  tg_scope_end();
  for (int i = 0; i < 64; i++) want += 2 * x[i] + 1 > 0 ? 2 * x[i] + 1 : 0;   /* the step in C */
  CHECK_MSG(got == want, "step: %g, C gives %g", got, want);
  tg_jit_free(j);
  CHECK_OK(tg_viz_end() == 0);
  viz_trace t;
  CHECK_MSG(viz_trace_load(dir, false, &t) == 0, "load: %s", tg_error());
  CHECK_EQ_INT(t.markers.n, 2);
  int replayed = 0;
  for (int i = 0; i < t.runs.n; i++)
    if (!t.runs.v[i].copy && t.runs.v[i].ts >= t.markers.v[0].ts && t.runs.v[i].ts <= t.markers.v[1].ts) {
      replayed++;
      CHECK(t.runs.v[i].dur > 0 && t.runs.v[i].name && t.runs.v[i].name[0]);
    }
  CHECK_MSG(replayed >= 3, "%d kernel runs recorded over 3 replays", replayed);   /* at least one kernel a replay */
  viz_trace_free(&t);
  rm_dir(dir);
}
