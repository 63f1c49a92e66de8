/* test_export.c: tg_jit_export and tg_llm_export write a JIT'd step as one
 * C file; it is compiled here with the system compiler alone (no libtg)
 * and run, and its outputs are compared with tg's: a small Fashion-MNIST
 * style CNN's inference step, and stories260K's decode step driven through
 * a greedy continuation (whose text test_llm checks against llama.cpp). */
#include <unistd.h>
#include "test.h"

static const char *cc(void) { const char *c = getenv("CC"); return c && *c ? c : "cc"; }

static bool write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return false;
  fputs(text, f);
  return fclose(f) == 0;
}

/* Compiles dir/NAME.c with `cc -O2 -c` alone, then links it with the driver. */
static bool build(const char *dir, const char *name, const char *driver) {
  char cmd[2048], path[512];
  snprintf(path, sizeof path, "%s/driver.c", dir);
  if (!write_text(path, driver)) return false;
  snprintf(cmd, sizeof cmd, "cd %s && %s -O2 -c %s.c -o %s.o 2>cc.log && %s -O2 -std=c11 driver.c %s.o -o driver -lm 2>>cc.log",
           dir, cc(), name, name, cc(), name);
  if (system(cmd) != 0) {
    snprintf(path, sizeof path, "%s/cc.log", dir);
    size_t n = 0;
    char *log = test_read_file(path, &n);
    test_fail(__FILE__, __LINE__, "compiling the export failed: %.2000s", log ? log : "(no log)");
    free(log);
    return false;
  }
  return true;
}

/* ---- a CNN's inference step: conv 3x3 (1->4) relu maxpool2, linear -> 10, log_softmax (12x12 -> 10x10 -> 5x5) */
enum { N = 2, HW = 12, C1 = 4, K = 10 };
static float w1[C1 * 9], b1[C1], w2[K * C1 * 5 * 5], b2[K];

static int cnn_step(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  tg_tensor **p = ctx;
  tg_conv_opts co = { 0 };
  tg_pool_opts po = { .kernel = { 2, 2 } };
  tg_tensor *h = tg_max_pool2d(tg_relu(tg_conv2d(in[0], p[0], p[1], &co)), &po, NULL);
  out[0] = tg_log_softmax(tg_linear(tg_flatten(h, 1, -1), p[2], p[3]), 1);
  return out[0] ? 0 : -1;
}

static const char cnn_driver[] =
  "#include <stdio.h>\n"
  "extern const long long cnn_input_bytes[], cnn_output_bytes[];\n"
  "int cnn_init(const char *); void cnn_run(void *const *, void *const *, const long long *); void cnn_free(void);\n"
  "int main(void) {\n"
  "  static float x[2 * 12 * 12], y[2 * 10];\n"
  "  FILE *f = fopen(\"x.bin\", \"rb\");\n"
  "  if (!f || fread(x, 1, sizeof x, f) != sizeof x) return 3;\n"
  "  fclose(f);\n"
  "  if (cnn_input_bytes[0] != sizeof x || cnn_output_bytes[0] != sizeof y) return 4;\n"
  "  if (cnn_init(\"cnn.bin\") != 0) return 5;\n"
  "  void *in[1] = { x }, *out[1] = { y };\n"
  "  cnn_run(in, out, 0);\n"
  "  cnn_free();\n"
  "  f = fopen(\"y.bin\", \"wb\");\n"
  "  if (!f || fwrite(y, 1, sizeof y, f) != sizeof y) return 6;\n"
  "  return fclose(f) != 0;\n"
  "}\n";

TEST(export_cnn_step_compiles_alone_and_matches_tg) {
  for (int i = 0; i < C1 * 9; i++) w1[i] = (float)((i * 7) % 11 - 5) / 6.0f;
  for (int i = 0; i < C1; i++) b1[i] = (float)(i - 2) / 10.0f;
  for (int i = 0; i < K * C1 * 25; i++) w2[i] = (float)((i * 13) % 17 - 8) / 40.0f;
  for (int i = 0; i < K; i++) b2[i] = (float)(i % 3) / 5.0f;
  char dir[] = "/tmp/tg_export_XXXXXX";
  if (!mkdtemp(dir)) SKIP("no temporary directory");
  tg_scope_begin();
  tg_tensor *p[4] = { tg_from_data(w1, TG_SHAPE(C1, 1, 3, 3), TG_F32), tg_from_data(b1, TG_SHAPE(C1), TG_F32),
                      tg_from_data(w2, TG_SHAPE(K, C1 * 25), TG_F32), tg_from_data(b2, TG_SHAPE(K), TG_F32) };
  tg_jit *j = tg_jit_new(cnn_step, p);
  static float x[N * HW * HW], want[N * K], got[N * K];
  char path[512];
  snprintf(path, sizeof path, "%s/cnn.c", dir);
  CHECK(tg_jit_export(j, path) != 0);   /* nothing captured yet */
  CHECK_MSG(strstr(tg_error(), "call it twice"), "got: %s", tg_error());
  for (int call = 0; call < 3; call++) {
    for (int i = 0; i < N * HW * HW; i++) x[i] = (float)((i * (call + 3)) % 23 - 11) / 7.0f;
    tg_tensor *in = tg_from_data(x, TG_SHAPE(N, 1, HW, HW), TG_F32), *out = NULL;
    CHECK_MSG(tg_jit_call(j, &in, 1, &out, 1) == 0, "call %d: %s", call, tg_error());
    CHECK_MSG(tg_data(out, want, sizeof want) == 0, "data: %s", tg_error());
  }
  CHECK_MSG(tg_jit_export(j, path) == 0, "export: %s", tg_error());
  snprintf(path, sizeof path, "%s/x.bin", dir);
  FILE *f = fopen(path, "wb");
  CHECK(f && fwrite(x, 1, sizeof x, f) == sizeof x);
  if (f) fclose(f);
  if (build(dir, "cnn", cnn_driver)) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "cd %s && ./driver", dir);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(path, sizeof path, "%s/y.bin", dir);
    size_t n = 0;
    float *y = test_read_file(path, &n);
    CHECK_EQ_INT(n, sizeof got);
    if (y && n == sizeof got) { memcpy(got, y, sizeof got); test_close_f32(got, want, N * K, 1e-5, 1e-6, "exported CNN step"); }
    free(y);
  }
  tg_jit_free(j);
  tg_scope_end();
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK_EQ_INT(system(cmd), 0);
}

/* ---- stories260K's decode step: prompt, then 32 greedy tokens */
static const char story_driver[] =
  "#include <stdio.h>\n#include <string.h>\n"
  "extern const long long story_output_bytes[];\nextern const int story_num_vars;\nextern const char *const story_var_names[];\n"
  "int story_init(const char *); void story_run(void *const *, void *const *, const long long *); void story_free(void);\n"
  "static float logits[1 << 16];\n"
  "int main(void) {\n"
  "  int prompt[5] = { 1, 403, 407, 261, 378 }, tok = 0, n = (int)(story_output_bytes[0] / 4);\n"
  "  if (n > (1 << 16) || story_init(\"story.bin\") != 0) return 3;\n"
  "  FILE *f = fopen(\"out.txt\", \"w\");\n"
  "  for (int pos = 0; pos < 4 + 32; pos++) {\n"
  "    tok = pos < 5 ? prompt[pos] : tok;\n"
  "    long long vars[8];\n"
  "    for (int v = 0; v < story_num_vars; v++) vars[v] = strncmp(story_var_names[v], \"llm_kv\", 6) ? pos : pos + 1;\n"
  "    void *in[1] = { &tok }, *out[1] = { logits };\n"
  "    story_run(in, out, vars);\n"
  "    if (pos == 4) for (int i = 0; i < n; i++) fprintf(f, \"%.9g\\n\", logits[i]);\n"
  "    if (pos >= 4) { int best = 0; for (int i = 1; i < n; i++) if (logits[i] > logits[best]) best = i; tok = best; fprintf(f, \"t %d\\n\", tok); }\n"
  "  }\n"
  "  story_free();\n"
  "  return fclose(f) != 0;\n"
  "}\n";

/* Runs dir's driver and compares its out.txt with nl logits (lines of
 * numbers, within tol of want_logits relative to 1 + |want|) and nt tokens
 * (lines "t ID"), in the order the driver writes them. */
static void check_driver_output(const char *dir, const float *want_logits, int nl, const int32_t *want_toks, int nt, double tol) {
  char cmd[600], path[512];
  snprintf(cmd, sizeof cmd, "cd %s && ./driver", dir);
  CHECK_EQ_INT(system(cmd), 0);
  snprintf(path, sizeof path, "%s/out.txt", dir);
  FILE *f = fopen(path, "r");
  CHECK(f != NULL);
  int got_t = 0, got_l = 0, bad = 0;
  char line[64];
  while (f && fgets(line, sizeof line, f)) {
    if (line[0] == 't') { if (got_t < nt && atoi(line + 2) != want_toks[got_t]) bad++; got_t++; }
    else if (got_l < nl) { double v = atof(line); if (fabs(v - want_logits[got_l]) > tol * (1 + fabs(want_logits[got_l]))) bad++; got_l++; }
  }
  if (f) fclose(f);
  CHECK_EQ_INT(got_l, nl);
  CHECK_EQ_INT(got_t, nt);
  CHECK_EQ_INT(bad, 0);
}

TEST(export_stories260k_decode_step_matches_tg) {
  const char *model = "../../shared/testdata/models/stories260K.gguf";
  if (access(model, R_OK) != 0) SKIP("%s is absent", model);
  char dir[] = "/tmp/tg_export_XXXXXX";
  if (!mkdtemp(dir)) SKIP("no temporary directory");
  tg_llm_opts o = { .n_ctx = 64 };
  tg_llm *m = tg_llm_load(model, &o);
  CHECK_MSG(m != NULL, "load: %s", tg_error());
  if (!m) return;
  char path[512];
  snprintf(path, sizeof path, "%s/story.c", dir);
  CHECK_MSG(tg_llm_export(m, path) == 0, "export: %s", tg_error());
  CHECK_EQ_INT(tg_llm_n_past(m), 0);   /* the capture left no trace */
  /* tg's own: the prompt, then greedy tokens */
  int V = tg_llm_config_of(m)->n_vocab;
  float *logits = malloc(sizeof(float) * (size_t)V);
  int32_t prompt[5] = { 1, 403, 407, 261, 378 }, want[32];
  CHECK(tg_llm_eval(m, prompt, 5, logits) == 0);
  float *first = malloc(sizeof(float) * (size_t)V);
  memcpy(first, logits, sizeof(float) * (size_t)V);
  for (int i = 0; i < 32; i++) {
    int best = 0;
    for (int k = 1; k < V; k++) if (logits[k] > logits[best]) best = k;
    want[i] = best;
    CHECK(tg_llm_eval(m, &want[i], 1, logits) == 0);
  }
  if (build(dir, "story", story_driver)) check_driver_output(dir, first, V, want, 32, 1e-3);
  free(logits); free(first);
  tg_llm_free(m);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK_EQ_INT(system(cmd), 0);
}

/* ---- Qwen3.5's decode step: the delta-net layers' conv and recurrent
 * states travel in the side file beside the KV cache and are carried from
 * step to step; the exported step decodes the tiny qwen35 file's 7-token
 * prompt and 20 greedy tokens as numpy does (gen_llm.py's
 * llm_qwen35_greedy), from the zero states of position 0 */
static const char q35_driver[] =
  "#include <stdio.h>\n#include <string.h>\n"
  "extern const long long q35_output_bytes[];\nextern const int q35_num_vars;\nextern const char *const q35_var_names[];\n"
  "int q35_init(const char *); void q35_run(void *const *, void *const *, const long long *); void q35_free(void);\n"
  "static float logits[1 << 12];\n"
  "int main(void) {\n"
  "  int prompt[7] = { 1, 5, 9, 13, 17, 21, 25 }, tok = 0, n = (int)(q35_output_bytes[0] / 4);\n"
  "  if (n > (1 << 12) || q35_init(\"q35.bin\") != 0) return 3;\n"
  "  FILE *f = fopen(\"out.txt\", \"w\");\n"
  "  for (int pos = 0; pos < 6 + 20; pos++) {\n"
  "    tok = pos < 7 ? prompt[pos] : tok;\n"
  "    long long vars[8];\n"
  "    for (int v = 0; v < q35_num_vars; v++) vars[v] = strncmp(q35_var_names[v], \"llm_kv\", 6) ? pos : pos + 1;\n"
  "    void *in[1] = { &tok }, *out[1] = { logits };\n"
  "    q35_run(in, out, vars);\n"
  "    if (pos >= 6) { int best = 0; for (int i = 1; i < n; i++) if (logits[i] > logits[best]) best = i; tok = best;\n"
  "      for (int i = 0; i < n; i++) fprintf(f, \"%.9g\\n\", logits[i]); fprintf(f, \"t %d\\n\", tok); }\n"
  "  }\n"
  "  q35_free();\n"
  "  return fclose(f) != 0;\n"
  "}\n";

TEST(export_qwen35_decode_step_carries_states) {
  char dir[] = "/tmp/tg_export_XXXXXX";
  if (!mkdtemp(dir)) SKIP("no temporary directory");
  tg_llm *m = tg_llm_load("goldens/llm_qwen35.gguf", &(tg_llm_opts){ .n_ctx = 64, .cache_type = "f32" });
  CHECK_MSG(m != NULL, "load: %s", tg_error());
  if (!m) return;
  char path[512];
  snprintf(path, sizeof path, "%s/q35.c", dir);
  CHECK_MSG(tg_llm_export(m, path) == 0, "export: %s", tg_error());
  CHECK_EQ_INT(tg_llm_n_past(m), 0);
  int V = tg_llm_config_of(m)->n_vocab;
  tg_llm_free(m);
  size_t nl = 0, ng = 0;
  float *want = test_read_file("goldens/llm_qwen35_greedy.logits.bin", &nl);
  int32_t *toks = test_read_file("goldens/llm_qwen35_greedy.greedy.bin", &ng);
  CHECK(want && toks && ng == 20 * sizeof(int32_t) && nl == 20 * sizeof(float) * (size_t)V);
  if (want && toks && build(dir, "q35", q35_driver)) check_driver_output(dir, want, 20 * V, toks, 20, 1e-4);
  free(want); free(toks);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK_EQ_INT(system(cmd), 0);
}

static int add_one(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)ctx; (void)nin; (void)nout;
  out[0] = tg_adds(in[0], 1);
  return out[0] ? 0 : -1;
}

TEST(export_errors) {
  CHECK(tg_jit_export(NULL, "/tmp/x.c") != 0);
  tg_jit *j = tg_jit_new(add_one, NULL);
  CHECK(tg_jit_export(j, NULL) != 0);
  tg_scope_begin();
  for (int i = 0; i < 2; i++) {
    tg_tensor *in = tg_from_data((float[4]){ 1, 2, 3, 4 }, TG_SHAPE(4), TG_F32), *out = NULL;
    CHECK(tg_jit_call(j, &in, 1, &out, 1) == 0);
  }
  CHECK(tg_jit_export(j, "/nonexistent-dir/x.c") != 0);
  CHECK_MSG(strstr(tg_error(), "cannot write"), "got: %s", tg_error());
  tg_scope_end();
  tg_jit_free(j);
  /* a step on another device says which kernel runs where */
  if (tg_set_default_device("CL") == 0) {
    j = tg_jit_new(add_one, NULL);
    tg_scope_begin();
    for (int i = 0; i < 2; i++) {
      tg_tensor *in = tg_from_data((float[4]){ 1, 2, 3, 4 }, TG_SHAPE(4), TG_F32), *out = NULL;
      CHECK(tg_jit_call(j, &in, 1, &out, 1) == 0);
    }
    CHECK(tg_jit_export(j, "/tmp/tg_export_cl.c") != 0);
    CHECK_MSG(strstr(tg_error(), "runs on CL"), "got: %s", tg_error());
    tg_scope_end();
    tg_jit_free(j);
    tg_set_default_device("CPU");
  }
}
