/* test_viz_web.c: the VIZ web page. A training step of a tiny MLP is
 * recorded (tg_viz_begin/end), `$TG_BIN viz --serve` serves it on a free
 * port, and its JSON is checked against the trace file itself (read here
 * with cJSON); bad ids and paths get 400/404/405; broken traces (cut off,
 * another version) an error from the server and in the page; headless
 * Chromium, driven by viz_browser.py, clicks a kernel and a step and checks
 * the graph, the source and a screenshot; VIZ=1 serves at exit and stops
 * on SIGTERM. Every server here is started with --exit-after (or
 * TG_VIZ_SERVE_SECONDS), so none can outlive the suite. */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "test.h"
#include "tg_layers.h"
#include "util/util.h"
#include "viz/viz.h"

/* One SGD step of a 8-16-4 MLP (forward, backward, update), recorded into
 * a fresh directory: the trace's path (malloc'd), or NULL. */
static char *record_training_step(char *dir, size_t n) {
  char tmpl[] = "/tmp/tg_vizweb_XXXXXX";
  if (!mkdtemp(tmpl)) return NULL;
  snprintf(dir, n, "%s", tmpl);
  tg_manual_seed(7);
  tg_linear_layer *l1 = tg_linear_new(8, 16, true), *l2 = tg_linear_new(16, 4, true);
  tg_tensor *ps[] = { l1->weight, l1->bias, l2->weight, l2->bias };
  tg_optim *o = tg_sgd_new(ps, 4, 0.1, 0, 0, false);
  char *path = NULL;
  if (tg_viz_begin(dir) == 0) {
    tg_scope_begin();
    tg_profile_marker("step");
    tg_tensor *x = tg_randn(TG_SHAPE(4, 8), TG_F32), *y = tg_randn(TG_SHAPE(4, 4), TG_F32);
    tg_tensor *d = tg_sub(tg_linear_forward(l2, tg_relu(tg_linear_forward(l1, x))), y);
    tg_tensor *loss = tg_mean(tg_mul(d, d), TG_ALL, false);
    tg_optim_zero_grad(o);
    bool ok = tg_backward(loss) == 0 && tg_realize(loss) == 0 && tg_optim_step(o) == 0;
    CHECK_MSG(ok, "the training step: %s", tg_error());
    tg_scope_end();
    CHECK_OK(tg_viz_end() == 0);
    path = tg_viz_file() ? strdup(tg_viz_file()) : NULL;
  } else CHECK_MSG(false, "tg_viz_begin: %s", tg_error());
  tg_optim_free(o);
  tg_linear_free(l1);
  tg_linear_free(l2);
  return path;
}

static void rm_dir(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/* ---- a server in a child process */

typedef struct { pid_t pid; int port; char said[2048]; } server;

/* Runs argv (NULL-terminated; env "K=V" pairs put first) with stderr on a
 * pipe, until it says "http://127.0.0.1:PORT/". said: what it printed up to
 * there. port 0 when it never did. */
static server spawn(char *const *env, char *const *argv) {
  server s = { 0 };
  int fds[2];
  if (pipe(fds) < 0) return s;
  fflush(NULL);
  s.pid = fork();
  if (s.pid == 0) {
    dup2(fds[1], 2);
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, 1);
    close(fds[0]);
    for (int i = 0; env && env[i]; i++) putenv(env[i]);
    execv(argv[0], argv);
    _exit(127);
  }
  close(fds[1]);
  FILE *f = fdopen(fds[0], "r");
  char line[1024];
  size_t k = 0;
  while (f && fgets(line, sizeof line, f)) {
    k += (size_t)snprintf(s.said + k, sizeof s.said - k, "%s", line);
    if (k >= sizeof s.said) k = sizeof s.said - 1;
    const char *at = strstr(line, "http://127.0.0.1:");
    if (at) { s.port = atoi(at + strlen("http://127.0.0.1:")); break; }
  }
  if (f) fclose(f);   /* the child's later lines go nowhere (it does not print more) */
  return s;
}

static server serve_for(const char *path, const char *seconds) {
  const char *bin = getenv("TG_BIN");
  char *argv[] = { (char *)bin, "viz", (char *)path, "--serve", "--port", "0", "--exit-after", (char *)seconds, NULL };
  return spawn(NULL, argv);
}
static server serve_trace(const char *path) { return serve_for(path, "60"); }

/* SIGTERM, then its exit status (-1: it did not stop within 5 s). */
static int stop(server *s) {
  if (s->pid <= 0) return -1;
  kill(s->pid, SIGTERM);
  int status = 0;
  for (int i = 0; i < 500; i++) {
    if (waitpid(s->pid, &status, WNOHANG) == s->pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    usleep(10000);
  }
  kill(s->pid, SIGKILL);
  waitpid(s->pid, &status, 0);
  return -1;
}

/* GET (or another method) over a plain socket: the body (malloc'd) and
 * *status (0: no answer). */
static char *http(int port, const char *method, const char *path, int *status) {
  *status = 0;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  strbuf b = { 0 };
  sb_puts(&b, "");
  if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
    char req[512];
    int n = snprintf(req, sizeof req, "%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", method, path);
    if (write(fd, req, (size_t)n) == n) {
      char buf[8192];
      ssize_t r;
      while ((r = read(fd, buf, sizeof buf)) > 0) sb_append(&b, buf, (size_t)r);
    }
  }
  if (fd >= 0) close(fd);
  if (!strncmp(b.s, "HTTP/1.", 7)) *status = atoi(b.s + 9);
  char *body = strstr(b.s, "\r\n\r\n");
  char *out = strdup(body ? body + 4 : "");
  sb_free(&b);
  return out;
}

static cJSON *get_json(int port, const char *path, int *status) {
  char *s = http(port, "GET", path, status);
  cJSON *j = cJSON_Parse(s);
  free(s);
  return j;
}

#define NEED_TG_BIN() do { const char *b_ = getenv("TG_BIN"); \
  if (!b_ || access(b_, X_OK) != 0) SKIP("TG_BIN does not name the tg binary (make test sets it)"); } while (0)

/* ---- the JSON against the trace file */

static double num(const cJSON *o, const char *k) { return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, k)); }
static const char *str(const cJSON *o, const char *k) { return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k)); }

/* A step's graph is well formed: edges between its nodes, the replaced
 * node recorded before and the result after, every node on a side. */
static void check_step_graph(const cJSON *g, const char *kernel) {
  const cJSON *nodes = cJSON_GetObjectItem(g, "nodes"), *edges = cJSON_GetObjectItem(g, "edges"), *e, *nd;
  int n = cJSON_GetArraySize(nodes);
  CHECK_MSG(n >= 1, "kernel %s: a step graph without nodes", kernel);
  cJSON_ArrayForEach(nd, nodes) CHECK(num(nd, "side") >= 1 && num(nd, "side") <= 3);
  cJSON_ArrayForEach(e, edges) {
    int from = (int)cJSON_GetNumberValue(cJSON_GetArrayItem(e, 0)), to = (int)cJSON_GetNumberValue(cJSON_GetArrayItem(e, 1));
    CHECK(from >= 0 && from < n && to >= 0 && to < n && from != to);
  }
  int b = (int)num(g, "before"), a = (int)num(g, "after");
  CHECK_MSG(b >= 0 && b < n && a >= 0 && a < n && b != a, "kernel %s: roots %d %d of %d nodes", kernel, b, a, n);
  if (b >= 0 && b < n) CHECK((int)num(cJSON_GetArrayItem(nodes, b), "side") & 1);
  if (a >= 0 && a < n) CHECK((int)num(cJSON_GetArrayItem(nodes, a), "side") & 2);
}

TEST(viz_web_endpoints) {
  NEED_TG_BIN();
  char dir[64];
  char *path = record_training_step(dir, sizeof dir);
  if (!path) return;
  viz_trace t;
  CHECK_OK(viz_trace_load(path, false, &t) == 0);
  server s = serve_trace(path);
  CHECK_MSG(s.port > 0, "tg viz --serve did not say its address: %s", s.said);
  if (s.port <= 0) { viz_trace_free(&t); stop(&s); free(path); rm_dir(dir); return; }
  int st;
  /* the list: every kernel of the trace, in order; the schedules' items */
  cJSON *tr = get_json(s.port, "/api/trace", &st);
  CHECK_EQ_INT(st, 200);
  const cJSON *ks = cJSON_GetObjectItem(tr, "kernels");
  CHECK_EQ_INT(cJSON_GetArraySize(ks), t.kernels.n);
  CHECK(t.kernels.n >= 3 && t.passes.n >= 1);
  for (int i = 0; i < t.kernels.n && i < cJSON_GetArraySize(ks); i++) CHECK(!strcmp(str(cJSON_GetArrayItem(ks, i), "name"), t.kernels.v[i].name));
  CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(tr, "schedules")), t.scheds.n);
  cJSON_Delete(tr);
  /* each kernel: its source and AST as recorded, its passes with their steps */
  int graphs = 0;
  for (int i = 0; i < t.kernels.n; i++) {
    char url[64];
    snprintf(url, sizeof url, "/api/kernel?id=%d", i);
    cJSON *k = get_json(s.port, url, &st);
    CHECK_EQ_INT(st, 200);
    cJSON *rec = viz_trace_record(&t, t.kernels.v[i].off);
    CHECK(k && rec && str(k, "src") && !strcmp(str(k, "src"), str(rec, "src")));
    int nast = cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(rec, "ast"), "nodes"));
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(k, "ast"), "nodes")), nast);
    int np = 0;
    for (int j = 0; j < t.passes.n; j++) np += t.passes.v[j].sched == t.kernels.v[i].sched && t.passes.v[j].item == t.kernels.v[i].item;
    const cJSON *passes = cJSON_GetObjectItem(k, "passes"), *p, *stp;
    CHECK_EQ_INT(cJSON_GetArraySize(passes), np);
    cJSON_ArrayForEach(p, passes) cJSON_ArrayForEach(stp, cJSON_GetObjectItem(p, "steps")) {
      CHECK(str(stp, "rule") && *str(stp, "rule"));
      check_step_graph(cJSON_GetObjectItem(stp, "graph"), t.kernels.v[i].name);
      graphs++;
    }
    cJSON_Delete(rec);
    cJSON_Delete(k);
  }
  CHECK(graphs >= 1);
  /* the profile: per device the kernel time of the trace's runs, and the
   * memory line ends at the sum of allocations minus frees */
  cJSON *pr = get_json(s.port, "/api/profile", &st);
  CHECK_EQ_INT(st, 200);
  double us = 0, runs_us = 0, mem = 0;
  const cJSON *d, *e;
  cJSON_ArrayForEach(d, cJSON_GetObjectItem(pr, "devices")) {
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(d, "kernels")) us += num(e, "dur");
    const cJSON *m = cJSON_GetObjectItem(d, "mem");
    if (cJSON_GetArraySize(m)) mem += cJSON_GetNumberValue(cJSON_GetArrayItem(cJSON_GetArrayItem(m, cJSON_GetArraySize(m) - 1), 1));
    cJSON_ArrayForEach(e, m) CHECK(cJSON_GetNumberValue(cJSON_GetArrayItem(e, 1)) <= num(d, "peak"));
  }
  double mem_sum = 0;
  for (int i = 0; i < t.runs.n; i++) if (!t.runs.v[i].copy) runs_us += t.runs.v[i].dur;
  for (int i = 0; i < t.mems.n; i++) mem_sum += (double)t.mems.v[i].delta;
  CHECK_NEAR(us, runs_us, 1e-6 * runs_us + 1e-9);
  CHECK_NEAR(mem, mem_sum, 0.5);
  CHECK(us > 0);
  cJSON_Delete(pr);
  /* the page and its files; bad ids, paths and methods */
  char *page = http(s.port, "GET", "/", &st);
  CHECK(st == 200 && strstr(page, "viz.js"));
  free(page);
  static const struct { const char *method, *path; int status; } bad[] = {
    { "GET", "/api/kernel?id=abc", 400 }, { "GET", "/api/kernel", 400 }, { "GET", "/api/kernel?id=-1", 400 },
    { "GET", "/api/kernel?id=99999999999", 400 }, { "GET", "/api/kernel?id=1000000", 404 }, { "GET", "/nope", 404 },
    { "GET", "/../src/viz/web.c", 404 }, { "GET", "/api/trace/x", 404 }, { "POST", "/api/trace", 405 }, { "DELETE", "/", 405 },
    { "HEAD", "/viz.css", 200 },
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    free(http(s.port, bad[i].method, bad[i].path, &st));
    CHECK_MSG(st == bad[i].status, "%s %s: %d, not %d", bad[i].method, bad[i].path, st, bad[i].status);
  }
  CHECK_EQ_INT(stop(&s), 0);   /* SIGTERM stops it cleanly */
  /* --exit-after N: it stops by itself, with status 0 */
  s = serve_for(path, "1");
  CHECK(s.port > 0);
  int status = -1;
  double t0 = tg_now_seconds();
  while (s.pid > 0 && waitpid(s.pid, &status, WNOHANG) == 0 && tg_now_seconds() - t0 < 10) usleep(20000);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "tg viz --serve --exit-after 1: status %d after %.1f s", status, tg_now_seconds() - t0);
  if (!WIFEXITED(status)) stop(&s);
  viz_trace_free(&t);
  free(path);
  rm_dir(dir);
}

/* A cut-off copy and one claiming format version 2, next to the trace. */
static void write_bad_traces(const char *path, const char *dir, char *cut, char *v2, size_t n) {
  snprintf(cut, n, "%s/cut.jsonl", dir);
  snprintf(v2, n, "%s/v2.jsonl", dir);
  FILE *f = fopen(path, "rb"), *fc = fopen(cut, "wb"), *f2 = fopen(v2, "wb");
  char line[1 << 16];
  for (int i = 0; f && fc && f2 && fgets(line, sizeof line, f); i++) {
    if (i < 6) fputs(line, fc);
    else if (i == 6) fwrite(line, 1, strlen(line) / 2, fc);   /* half a line */
    char *ver = i == 0 ? strstr(line, "\"tg_viz\":1") : NULL;
    if (ver) ver[9] = '2';
    fputs(line, f2);
  }
  if (f) fclose(f);
  if (fc) fclose(fc);
  if (f2) fclose(f2);
}

TEST(viz_web_bad_traces) {
  NEED_TG_BIN();
  char dir[64], cut[128], v2[128];
  char *path = record_training_step(dir, sizeof dir);
  if (!path) return;
  write_bad_traces(path, dir, cut, v2, sizeof cut);
  const char *want[] = { "is cut off", "trace format version 2" };
  const char *files[] = { cut, v2 };
  for (int i = 0; i < 2; i++) {
    server s = serve_trace(files[i]);
    CHECK_MSG(s.port > 0 && strstr(s.said, want[i]), "tg viz --serve %s: %s", files[i], s.said);   /* said in the terminal */
    int st;
    cJSON *j = get_json(s.port, "/api/trace", &st);
    CHECK_EQ_INT(st, 500);
    CHECK_MSG(str(j, "error") && strstr(str(j, "error"), want[i]), "the error for %s", files[i]);
    cJSON_Delete(j);
    free(http(s.port, "GET", "/api/kernel?id=0", &st));
    CHECK_EQ_INT(st, 500);
    char *page = http(s.port, "GET", "/", &st);   /* the page is there to show the error */
    CHECK_EQ_INT(st, 200);
    free(page);
    CHECK_EQ_INT(stop(&s), 0);
  }
  free(path);
  rm_dir(dir);
}

/* The page in a real browser (tests/viz_browser.py, headless Chromium). */
TEST(viz_web_browser) {
  NEED_TG_BIN();
  if (system("command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1") != 0)
    SKIP("chromium is not installed (apt-get install chromium): the page is not tested in a browser");
  if (system("python3 -c 'import json, zlib' >/dev/null 2>&1") != 0) SKIP("python3 is not installed");
  char dir[64], cut[128], v2[128];
  char *path = record_training_step(dir, sizeof dir);
  if (!path) return;
  write_bad_traces(path, dir, cut, v2, sizeof cut);
  server good = serve_trace(path), sc = serve_trace(cut), s2 = serve_trace(v2);
  CHECK(good.port > 0 && sc.port > 0 && s2.port > 0);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "python3 viz_browser.py http://127.0.0.1:%d --bad http://127.0.0.1:%d 'is cut off' --bad http://127.0.0.1:%d 'format version 2'",
           good.port, sc.port, s2.port);
  static char out[1 << 16];
  int rc = test_run_capture(cmd, out, sizeof out);
  if (WIFEXITED(rc) && WEXITSTATUS(rc) == 77) printf("  skip: %s", out), test_skipped = true;
  else CHECK_MSG(rc == 0 && strstr(out, "viz browser: all ok"), "viz_browser.py (%d):\n%s", rc, out);
  stop(&good);
  stop(&sc);
  stop(&s2);
  free(path);
  rm_dir(dir);
}

/* VIZ=1: the trace is saved at exit, then the page is served until SIGTERM
 * (TG_VIZ_SERVE_SECONDS bounds it, should the test not get that far). */
TEST(viz_one_serves_at_exit) {
  NEED_TG_BIN();
  char dir[] = "/tmp/tg_vizweb_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char envdir[96];
  snprintf(envdir, sizeof envdir, "TG_VIZ_DIR=%s", dir);
  char *env[] = { "VIZ=1", "TG_VIZ_PORT=0", "TG_VIZ_SERVE_SECONDS=30", envdir, NULL };
  char *argv[] = { (char *)getenv("TG_BIN"), "devices", NULL };
  server s = spawn(env, argv);
  CHECK_MSG(s.port > 0 && strstr(s.said, "trace saved to") && strstr(s.said, dir), "VIZ=1 tg devices said: %s", s.said);
  int st;
  cJSON *j = get_json(s.port, "/api/trace", &st);
  CHECK_EQ_INT(st, 200);
  CHECK(str(j, "trace") && strstr(str(j, "trace"), dir) && cJSON_IsTrue(cJSON_GetObjectItem(j, "complete")));
  cJSON_Delete(j);
  CHECK_EQ_INT(stop(&s), 0);
  rm_dir(dir);
}

/* Damaged records inside a well-formed trace: the JSON answers stay well
 * formed (no index outside its graph) and never crash. */
TEST(viz_web_damaged_records) {
  char path[] = "/tmp/tg_vizweb_damaged_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fputs("{\"tg_viz\":1,\"format\":\"tg-viz-trace\",\"pid\":1,\"started\":\"\",\"time_unit\":\"us\"}\n"
        "{\"ev\":\"schedule\",\"ts\":1,\"sched\":1,\"dur\":2,\"ok\":true,\"items\":[{\"name\":\"k\",\"device\":\"CPU\",\"kind\":\"kernel\"},7,null]}\n"
        "{\"ev\":\"kernel\",\"ts\":2,\"sched\":1,\"item\":0,\"name\":\"k\",\"src\":5,\"ast\":{\"nodes\":[[\"CONST\"],7,[\"ADD\",\"int\",\"\",[0,99,-3,1e300,\"x\"],null]]}}\n"
        "{\"ev\":\"pass\",\"ts\":3,\"sched\":1,\"item\":0,\"name\":\"p\",\"n\":1e300,\"steps\":[{\"rule\":\"r\",\"g\":{\"b\":1e300,\"a\":-1,\"nodes\":[[\"X\",\"\",\"\",[5,0],77],3]}},"
        "{\"rule\":null,\"g\":[1,2]},4]}\n"
        "{\"ev\":\"pass\",\"ts\":3,\"sched\":1,\"item\":0,\"name\":\"q\",\"steps\":{\"rule\":\"x\"}}\n"
        "{\"ev\":\"run\",\"ts\":4,\"sched\":1,\"name\":\"k\",\"device\":\"CPU\",\"dur\":1e308}\n"
        "{\"ev\":\"mem\",\"ts\":5,\"device\":\"CPU\",\"buf\":1,\"bytes\":-1e300}\n"
        "{\"ev\":\"end\",\"ts\":6,\"passes\":1,\"rules\":1,\"dropped\":0}\n", f);
  fclose(f);
  viz_trace t;
  CHECK_OK(viz_trace_load(path, false, &t) == 0);
  char *s = viz_api_trace(&t);
  cJSON *tj = s ? cJSON_Parse(s) : NULL;
  CHECK(tj != NULL);
  cJSON_Delete(tj);
  free(s);
  int st = 0;
  s = viz_api_kernel(&t, "0", &st);
  cJSON *k = s ? cJSON_Parse(s) : NULL;
  CHECK_MSG(k != NULL, "kernel 0: %s", s ? s : tg_error());
  const cJSON *ast = cJSON_GetObjectItem(k, "ast"), *e, *p, *stp;
  int n = cJSON_GetArraySize(cJSON_GetObjectItem(ast, "nodes"));
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(ast, "edges")) {
    double a = cJSON_GetNumberValue(cJSON_GetArrayItem(e, 0)), b = cJSON_GetNumberValue(cJSON_GetArrayItem(e, 1));
    CHECK(a >= 0 && a < n && b >= 0 && b < n);
  }
  cJSON_ArrayForEach(p, cJSON_GetObjectItem(k, "passes")) cJSON_ArrayForEach(stp, cJSON_GetObjectItem(p, "steps")) {
    const cJSON *g = cJSON_GetObjectItem(stp, "graph");
    if (!g) continue;
    int gn = cJSON_GetArraySize(cJSON_GetObjectItem(g, "nodes"));
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(g, "edges")) {
      double a = cJSON_GetNumberValue(cJSON_GetArrayItem(e, 0)), b = cJSON_GetNumberValue(cJSON_GetArrayItem(e, 1));
      CHECK(a >= 0 && a < gn && b >= 0 && b < gn);
    }
    double b = cJSON_GetNumberValue(cJSON_GetObjectItem(g, "before")), a = cJSON_GetNumberValue(cJSON_GetObjectItem(g, "after"));
    CHECK(b >= -1 && b < gn && a >= -1 && a < gn);
  }
  cJSON_Delete(k);
  free(s);
  s = viz_api_profile(&t);
  CHECK(s && strstr(s, "\"devices\""));
  free(s);
  viz_trace_free(&t);
  unlink(path);
}
