/* test_gguf_writer.c: the writer side of GGUF: quantizers against ggml's
 * bytes (shared/testdata/quants, see its README.md), the GGUF writer against
 * a gguf-py golden (tests/gen/gen_gguf_writer.py), tg_gguf_save, and the
 * quantize / llm-init paths. */
#include <stdint.h>
#include <unistd.h>
#include "test.h"
#include "quant/quantize.h"
#include "io/ggml_types.h"
#include "io/gguf_file.h"
#include "io/gguf_writer.h"
#include "io/gguf_llama_init.h"

#define QUANT_DIR "../../shared/testdata/quants/"

/* Quantizes TYPE.quant_in.f32.bin as one row; compares with
 * TYPE.quant_out.bin block by block. */
static void check_quant_golden(const char *type_name) {
  char p_in[256], p_out[256];
  snprintf(p_in, sizeof p_in, QUANT_DIR "%s.quant_in.f32.bin", type_name);
  snprintf(p_out, sizeof p_out, QUANT_DIR "%s.quant_out.bin", type_name);
  size_t nin, nout;
  float *in = test_read_file(p_in, &nin);
  unsigned char *want = test_read_file(p_out, &nout);
  if (!in || !want) { free(in); free(want); SKIP("%s missing (shared test data)", p_in); }
  int t = ggml_type_by_name(type_name);
  const ggml_type_traits *tt = ggml_type_info((uint32_t)t);
  int64_t n = (int64_t)(nin / 4);
  unsigned char *got = calloc(1, nout + 1);
  int64_t w = quant_rows((uint32_t)t, in, got, 1, n);
  CHECK_MSG(w == (int64_t)nout, "%s: wrote %lld bytes, golden has %zu (%s)", type_name, (long long)w, nout, tg_error());
  int bad = 0;
  for (size_t b = 0; w == (int64_t)nout && b < nout / (size_t)tt->type_size; b++) {
    size_t off = b * (size_t)tt->type_size;
    if (memcmp(got + off, want + off, (size_t)tt->type_size)) {
      if (bad++ < 3) {
        size_t k = off;
        while (got[k] == want[k]) k++;
        test_fail(__FILE__, __LINE__, "%s block %zu differs at byte %zu: %02x vs ggml %02x", type_name, b, k - off, got[k], want[k]);
      }
    }
  }
  CHECK_MSG(!bad, "%s: %d of %zu blocks differ", type_name, bad, nout / (size_t)tt->type_size);
  /* many rows at once (threaded) give the same bytes as one */
  int64_t per = tt->block_size * 4;
  if (n % per == 0) {
    memset(got, 0, nout);
    CHECK(quant_rows((uint32_t)t, in, got, n / per, per) == (int64_t)nout);
    CHECK_MSG(!memcmp(got, want, nout), "%s: rows of %lld differ from one row", type_name, (long long)per);
  }
  free(in); free(want); free(got);
}

TEST(gguf_w_quant_q8_0) { check_quant_golden("Q8_0"); }
TEST(gguf_w_quant_q4_0) { check_quant_golden("Q4_0"); }
TEST(gguf_w_quant_q4_1) { check_quant_golden("Q4_1"); }
TEST(gguf_w_quant_q5_0) { check_quant_golden("Q5_0"); }
TEST(gguf_w_quant_q5_1) { check_quant_golden("Q5_1"); }
TEST(gguf_w_quant_q2_k) { check_quant_golden("Q2_K"); }
TEST(gguf_w_quant_q3_k) { check_quant_golden("Q3_K"); }
TEST(gguf_w_quant_q4_k) { check_quant_golden("Q4_K"); }
TEST(gguf_w_quant_q5_k) { check_quant_golden("Q5_K"); }
TEST(gguf_w_quant_q6_k) { check_quant_golden("Q6_K"); }
TEST(gguf_w_quant_iq4_nl) { check_quant_golden("IQ4_NL"); }
TEST(gguf_w_quant_iq4_xs) { check_quant_golden("IQ4_XS"); }
TEST(gguf_w_quant_tq1_0) { check_quant_golden("TQ1_0"); }
TEST(gguf_w_quant_tq2_0) { check_quant_golden("TQ2_0"); }
TEST(gguf_w_quant_mxfp4) { check_quant_golden("MXFP4"); }
TEST(gguf_w_quant_f16) { check_quant_golden("F16"); }
TEST(gguf_w_quant_bf16) { check_quant_golden("BF16"); }

TEST(gguf_w_quant_errors) {
  float x[48] = { 0 };
  unsigned char y[64];
  CHECK(quant_rows(GGML_TYPE_Q4_0, x, y, 1, 48) < 0);
  CHECK(strstr(tg_error(), "block size"));
  CHECK(quant_rows(GGML_TYPE_IQ2_XXS, x, y, 1, 256) < 0);
  CHECK(!quant_can_write(GGML_TYPE_IQ1_S));
}

/* ---------------------------------------------------------------- writer */

static char tmpdir[64];
static void rm_tmpdir(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd)) {}
}
static const char *tmp_path(const char *name) {
  static char buf[4][256];
  static int k;
  if (!tmpdir[0]) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tg_test_gguf_w.XXXXXX");
    if (!mkdtemp(tmpdir)) { tmpdir[0] = 0; return "/nonexistent/tg_test_gguf_w"; }
    atexit(rm_tmpdir);
  }
  char *b = buf[k++ % 4];
  snprintf(b, 256, "%s/%s", tmpdir, name);
  return b;
}

/* Whether files a and b hold the same bytes; reports the first difference
 * when `report`. */
static bool same_file_r(const char *a, const char *b, bool report) {
  size_t na, nb;
  unsigned char *pa = test_read_file(a, &na), *pb = test_read_file(b, &nb);
  bool ok = pa && pb && na == nb && !memcmp(pa, pb, na);
  if (pa && pb && !ok && report) {
    size_t i = 0;
    while (i < na && i < nb && pa[i] == pb[i]) i++;
    printf("  %s (%zu bytes) and %s (%zu bytes) differ at byte %zu\n", a, na, b, nb, i);
  }
  free(pa); free(pb);
  return ok;
}
static bool same_file(const char *a, const char *b) { return same_file_r(a, b, true); }

#define GOLDEN_ALL "goldens/gguf_writer_all.gguf"
#define GOLDEN_STATE "goldens/gguf_writer_state.gguf"

/* The content of gguf_writer_all.gguf (tests/gen/gen_gguf_writer.py). */
static void build_all(gguf_writer *w, float *f32, uint16_t *f16, int32_t *i32, uint16_t *bf16, uint8_t *q8) {
  gguf_w_set_str(w, "general.architecture", "tgtest");
  CHECK(gguf_w_set_u32(w, "general.alignment", 64) == 0);
  uint8_t u8 = 200; int8_t i8 = -100; uint16_t u16 = 60000; int16_t i16 = -30000;
  uint64_t u64 = (1ull << 63) + 5; int64_t i64 = -(1ll << 62) - 3; double f64 = -0.1;
  gguf_w_set(w, "v.u8", GGUF_U8, &u8);
  gguf_w_set(w, "v.i8", GGUF_I8, &i8);
  gguf_w_set(w, "v.u16", GGUF_U16, &u16);
  gguf_w_set(w, "v.i16", GGUF_I16, &i16);
  gguf_w_set_u32(w, "v.u32", 4000000000u);
  gguf_w_set_i32(w, "v.i32", -2000000000);
  gguf_w_set_f32(w, "v.f32", 1.5f);
  gguf_w_set_bool(w, "v.bool", true);
  gguf_w_set_str(w, "v.str", "hello, GGUF");
  gguf_w_set(w, "v.u64", GGUF_U64, &u64);
  gguf_w_set(w, "v.i64", GGUF_I64, &i64);
  gguf_w_set(w, "v.f64", GGUF_F64, &f64);
  const uint8_t au8[] = { 1, 2, 255 };
  const int32_t ai32[] = { -1, 0, 7, 1 << 30 };
  const float af32[] = { 0.5f, -2.0f, 3.25f };
  const uint8_t abool[] = { 1, 0, 1 };
  const char *astr[] = { "<s>", "", "\xc3\xa9\xe2\x82\xac", "word" };
  gguf_w_set_arr(w, "a.u8", GGUF_U8, au8, 3);
  gguf_w_set_arr(w, "a.i32", GGUF_I32, ai32, 4);
  gguf_w_set_arr(w, "a.f32", GGUF_F32, af32, 3);
  gguf_w_set_arr(w, "a.bool", GGUF_BOOL, abool, 3);
  gguf_w_set_str_arr(w, "a.str", astr, 4);
  /* [[1, 2], [3, 4, 5]]: ARRAY, 2, then (I32, 2, 1 2) and (I32, 3, 3 4 5) */
  unsigned char nested[12 + 2 * 12 + 5 * 4], *p = nested;
  uint32_t u; uint64_t n;
#define PUT(x) (memcpy(p, &(x), sizeof(x)), p += sizeof(x))
  u = GGUF_ARRAY; PUT(u); n = 2; PUT(n);
  u = GGUF_I32; PUT(u); n = 2; PUT(n);
  for (int32_t v = 1; v <= 2; v++) PUT(v);
  u = GGUF_I32; PUT(u); n = 3; PUT(n);
  for (int32_t v = 3; v <= 5; v++) PUT(v);
#undef PUT
  CHECK(gguf_w_set_raw(w, "a.nested", GGUF_ARRAY, nested, sizeof nested) == 0);

  for (int i = 0; i < 15; i++) f32[i] = i * 0.25f - 3;
  for (int i = 0; i < 7; i++) f16[i] = quant_f32_to_f16((i - 3) / 4.0f);
  for (int i = 0; i < 6; i++) i32[i] = 7 * i - 11;
  for (int i = 0; i < 8; i++) bf16[i] = (uint16_t)(0x3F80 + 3 * i);
  for (int i = 0; i < 68; i++) q8[i] = (uint8_t)((37 * i + 11) % 256);
  CHECK(gguf_w_add_tensor(w, "t.f32", GGML_TYPE_F32, 2, (int64_t[]){ 5, 3 }, f32) == 0);
  CHECK(gguf_w_add_tensor(w, "t.f16", GGML_TYPE_F16, 1, (int64_t[]){ 7 }, f16) == 1);
  CHECK(gguf_w_add_tensor(w, "t.i32", GGML_TYPE_I32, 3, (int64_t[]){ 3, 1, 2 }, i32) == 2);
  CHECK(gguf_w_add_tensor(w, "t.bf16", GGML_TYPE_BF16, 2, (int64_t[]){ 4, 2 }, bf16) == 3);
  CHECK(gguf_w_add_tensor(w, "t.q8_0", GGML_TYPE_Q8_0, 2, (int64_t[]){ 32, 2 }, q8) == 4);
}

TEST(gguf_w_golden_bytes) {
  if (access(GOLDEN_ALL, R_OK)) SKIP("%s missing (python3 tests/gen/gen_gguf_writer.py)", GOLDEN_ALL);
  float f32[15]; uint16_t f16[7], bf16[8]; int32_t i32[6]; uint8_t q8[68];
  gguf_writer *w = gguf_writer_new();
  build_all(w, f32, f16, i32, bf16, q8);
  const char *p = tmp_path("all.gguf");
  CHECK_MSG(gguf_writer_write(w, p, NULL, NULL) == 0, "%s", tg_error());
  gguf_writer_free(w);
  CHECK(same_file(p, GOLDEN_ALL));
}

TEST(gguf_w_golden_reads_back) {
  gguf_file *f = gguf_open(GOLDEN_ALL);
  if (!f) SKIP("%s: %s", GOLDEN_ALL, tg_error());
  CHECK_EQ_INT(f->alignment, 64);
  CHECK_EQ_INT(f->n_kv, 20);
  CHECK_EQ_INT(f->n_tensors, 5);
  int64_t v;
  double d;
  CHECK(gguf_get_int(f, "v.u64", &v) && (uint64_t)v == (1ull << 63) + 5);
  CHECK(gguf_get_int(f, "v.i8", &v) && v == -100);
  CHECK(gguf_get_f64(f, "v.f64", &d) && d == -0.1);
  const gguf_kv *a = gguf_get_arr(f, "a.str", GGUF_STRING);
  CHECK(a && a->arr_n == 4 && a->str_lens[1] == 0 && a->str_lens[2] == 5 && !memcmp(a->strs[3], "word", 4));
  const gguf_tensor_info *t = gguf_find_tensor(f, "t.q8_0");
  CHECK(t && t->type == GGML_TYPE_Q8_0 && t->ne[0] == 32 && t->ne[1] == 2 && t->nbytes == 68 && t->file_offset % 64 == 0);
  /* copying every entry and tensor into a new writer gives the same file */
  gguf_writer *w = gguf_writer_new();
  for (int i = 0; i < f->n_kv; i++) CHECK(gguf_w_copy_kv(w, &f->kv[i]) == 0);
  for (int i = 0; i < f->n_tensors; i++) {
    const gguf_tensor_info *ti = &f->tensors[i];
    CHECK(gguf_w_add_tensor(w, ti->name, ti->type, ti->n_dims, ti->ne, (const char *)ti->map->base + ti->file_offset) == i);
  }
  const char *p = tmp_path("copy.gguf");
  CHECK_MSG(gguf_writer_write(w, p, NULL, NULL) == 0, "%s", tg_error());
  gguf_writer_free(w);
  gguf_close(f);
  CHECK(same_file(p, GOLDEN_ALL));
}

TEST(gguf_w_save_state) {
  if (access(GOLDEN_STATE, R_OK)) SKIP("%s missing (python3 tests/gen/gen_gguf_writer.py)", GOLDEN_STATE);
  float wv[6] = { -2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f };
  int32_t nv[4] = { -1, 999, 1999, 2999 };
  tg_tensor *t[3] = {
    tg_from_data(wv, TG_SHAPE(2, 3), TG_F32),
    tg_cast(tg_div(tg_arange(0, 3, 1, TG_F32), tg_full(TG_SHAPE(3), 8, TG_F32)), TG_F16),
    tg_from_data(nv, TG_SHAPE(4), TG_I32),
  };
  const char *names[3] = { "w", "b", "n" };
  const char *meta[] = { "general.architecture", "tgtest", "general.name", "state", NULL };
  const char *p = tmp_path("state.gguf");
  CHECK_MSG(tg_gguf_save(p, names, t, 3, meta) == 0, "%s", tg_error());
  CHECK(same_file(p, GOLDEN_STATE));
  /* loads back */
  tg_tensor_list l = { 0 };
  CHECK_MSG(tg_gguf_load_tensors(GOLDEN_STATE, NULL, &l) == 0 || strstr(tg_error(), "I32"), "%s", tg_error());
  tg_tensor_list_free(&l);
}

static int fill_short(void *ctx, int i, gguf_w_sink *s) {
  (void)ctx; (void)i;
  return gguf_w_sink_write(s, "abc", 3);
}

TEST(gguf_w_errors) {
  gguf_writer *w = gguf_writer_new();
  CHECK(gguf_w_set_u32(w, "general.alignment", 48) < 0);
  CHECK(gguf_w_set_i32(w, "general.alignment", 64) < 0);
  CHECK(gguf_w_add_tensor(w, "q", GGML_TYPE_Q4_K, 2, (int64_t[]){ 100, 2 }, NULL) < 0);
  CHECK(strstr(tg_error(), "multiple of 256"));
  CHECK(gguf_w_add_tensor(w, "x", GGML_TYPE_F32, 5, (int64_t[]){ 1, 1, 1, 1, 1 }, NULL) < 0);
  CHECK(gguf_w_add_tensor(w, "x", GGML_TYPE_F32, 1, (int64_t[]){ 4 }, NULL) == 0);
  CHECK(gguf_w_add_tensor(w, "x", GGML_TYPE_F32, 1, (int64_t[]){ 4 }, NULL) < 0);
  CHECK(strstr(tg_error(), "twice"));
  /* a failed write leaves an existing file alone */
  const char *p = tmp_path("keep.gguf");
  FILE *fp = fopen(p, "wb");
  fputs("old", fp);
  fclose(fp);
  CHECK(gguf_writer_write(w, p, fill_short, NULL) < 0);
  CHECK_MSG(strstr(tg_error(), "were not written"), "%s", tg_error());
  size_t n;
  char *old = test_read_file(p, &n);
  CHECK(old && n == 3 && !memcmp(old, "old", 3));
  free(old);
  /* replacing a key keeps its place */
  gguf_w_set_str(w, "a", "1");
  gguf_w_set_str(w, "b", "2");
  gguf_w_set_u32(w, "a", 3);
  CHECK_EQ_INT(gguf_w_n_kv(w), 2);
  gguf_writer_free(w);

  /* a 0-d tensor is stored as ne [1] */
  tg_tensor *s0 = tg_full(TG_SHAPE(), 2.5, TG_F32);
  const char *n0 = "s";
  CHECK_MSG(tg_gguf_save(tmp_path("scalar.gguf"), &n0, &s0, 1, NULL) == 0, "%s", tg_error());
  gguf_file *f = gguf_open(tmp_path("scalar.gguf"));
  CHECK(f && f->n_tensors == 1 && f->tensors[0].n_dims == 1 && f->tensors[0].ne[0] == 1 && f->n_kv == 0);
  if (f) {
    float v;
    memcpy(&v, f->tensors[0].map->base + f->tensors[0].file_offset, 4);
    CHECK(v == 2.5f);
  }
  gguf_close(f);
  const char *bad_meta[] = { "k", NULL };
  CHECK(tg_gguf_save(tmp_path("meta.gguf"), &n0, &s0, 1, bad_meta) < 0);

  tg_tensor *b = tg_from_data((uint8_t[]){ 1, 0 }, TG_SHAPE(2), TG_BOOL);
  const char *nm = "m";
  CHECK(tg_gguf_save(tmp_path("bool.gguf"), &nm, &b, 1, NULL) < 0);
  CHECK(strstr(tg_error(), "bool"));
}

/* ---------------------------------------------------------------- quantize / llm-init */

/* The type quant_plan_type gives one tensor under a fresh plan. */
static uint32_t type_for(const char *ftype, const char *name, uint32_t type, int n_dims, const int64_t *ne, bool has_output,
                         bool pure) {
  quant_plan p = { .ft = quant_ftype_by_name(ftype), .pure = pure, .has_output = has_output, .n_gqa = 1, .n_layer = 8,
                   .n_attention_wv = 8 };
  return quant_plan_type(&p, name, type, n_dims, ne);
}

TEST(gguf_w_tensor_type_rules) {
  const int64_t sq[2] = { 512, 512 }, odd[2] = { 96, 8 }, tiny[2] = { 48, 8 }, row[1] = { 512 };
  CHECK(quant_ftype_by_name("q4_k")->ftype == 15 && quant_ftype_by_name("Q4_K_S")->ftype == 14);
  CHECK(quant_ftype_by_name("Q8_0")->ftype == 7 && quant_ftype_by_name("bf16")->ftype == 32);
  CHECK(!quant_ftype_by_name("IQ2_XXS") && !quant_ftype_by_name("Q4_K_X"));
  CHECK_EQ_INT(type_for("Q4_K_S", "blk.0.attn_q.weight", GGML_TYPE_F16, 2, sq, true, false), GGML_TYPE_Q4_K);
  CHECK_EQ_INT(type_for("Q4_K_S", "blk.0.attn_norm.weight", GGML_TYPE_F32, 2, sq, true, false), GGML_TYPE_F32);
  CHECK_EQ_INT(type_for("Q4_K_S", "blk.0.attn_q.bias", GGML_TYPE_F32, 2, sq, true, false), GGML_TYPE_F32);
  CHECK_EQ_INT(type_for("Q4_0", "blk.0.x.weight", GGML_TYPE_F32, 1, row, true, false), GGML_TYPE_F32);
  CHECK_EQ_INT(type_for("Q4_0", "blk.0.x.weight", GGML_TYPE_Q8_0, 2, sq, true, false), GGML_TYPE_Q8_0);
  CHECK_EQ_INT(type_for("Q4_0", "blk.0.ffn_gate_inp.weight", GGML_TYPE_F32, 2, sq, true, false), GGML_TYPE_F32);
  CHECK_EQ_INT(type_for("F16", "blk.0.x.weight", GGML_TYPE_F32, 2, tiny, true, false), GGML_TYPE_F16);
  /* output.weight (or tied token_embd) gets Q6_K, Q8_0 when rows are not
   * a multiple of 256, and stays Q8_0 for Q8_0 */
  CHECK_EQ_INT(type_for("Q4_0", "output.weight", GGML_TYPE_F16, 2, sq, true, false), GGML_TYPE_Q6_K);
  CHECK_EQ_INT(type_for("Q4_0", "output.weight", GGML_TYPE_F16, 2, sq, true, true), GGML_TYPE_Q4_0);
  CHECK_EQ_INT(type_for("Q8_0", "output.weight", GGML_TYPE_F16, 2, sq, true, false), GGML_TYPE_Q8_0);
  CHECK_EQ_INT(type_for("Q4_0", "output.weight", GGML_TYPE_F16, 2, odd, true, false), GGML_TYPE_Q8_0);
  CHECK_EQ_INT(type_for("Q4_0", "token_embd.weight", GGML_TYPE_F16, 2, sq, true, false), GGML_TYPE_Q4_0);
  CHECK_EQ_INT(type_for("Q4_0", "token_embd.weight", GGML_TYPE_F16, 2, sq, false, false), GGML_TYPE_Q6_K);
  CHECK_EQ_INT(type_for("TQ1_0", "token_embd.weight", GGML_TYPE_F16, 2, sq, true, false), GGML_TYPE_Q4_K);
  /* fallbacks for rows the type cannot hold */
  CHECK_EQ_INT(type_for("Q4_K_S", "a.weight", GGML_TYPE_F32, 2, odd, true, false), GGML_TYPE_Q5_0);
  CHECK_EQ_INT(type_for("Q6_K", "a.weight", GGML_TYPE_F32, 2, odd, true, false), GGML_TYPE_Q8_0);
  CHECK_EQ_INT(type_for("IQ4_XS", "a.weight", GGML_TYPE_F32, 2, odd, true, false), GGML_TYPE_IQ4_NL);
  CHECK_EQ_INT(type_for("Q4_0", "a.weight", GGML_TYPE_F32, 2, tiny, true, false), GGML_TYPE_F16);

  /* mixtures over 8 layers (use_more_bits: layers 0, 3, 6, 7) */
  quant_plan p = { .ft = quant_ftype_by_name("Q4_K_M"), .has_output = true, .n_gqa = 1, .n_layer = 8, .n_attention_wv = 8 };
  char name[64];
  uint32_t v[8], d[8];
  for (int l = 0; l < 8; l++) {
    snprintf(name, sizeof name, "blk.%d.attn_v.weight", l);
    v[l] = quant_plan_type(&p, name, GGML_TYPE_F16, 2, sq);
    snprintf(name, sizeof name, "blk.%d.ffn_down.weight", l);
    d[l] = quant_plan_type(&p, name, GGML_TYPE_F16, 2, sq);
  }
  for (int l = 0; l < 8; l++) {
    uint32_t want = l == 0 || l == 3 || l == 6 || l == 7 ? GGML_TYPE_Q6_K : GGML_TYPE_Q4_K;
    CHECK_MSG(v[l] == want && d[l] == want, "Q4_K_M layer %d: attn_v %u, ffn_down %u, want %u", l, v[l], d[l], want);
  }
  quant_plan q = { .ft = quant_ftype_by_name("Q3_K_M"), .has_output = true, .n_gqa = 4, .n_layer = 8, .n_attention_wv = 8 };
  CHECK_EQ_INT(quant_plan_type(&q, "blk.0.attn_v.weight", GGML_TYPE_F16, 2, sq), GGML_TYPE_Q5_K);
  CHECK_EQ_INT(quant_plan_type(&q, "blk.1.attn_v.weight", GGML_TYPE_F16, 2, sq), GGML_TYPE_Q5_K);
  CHECK_EQ_INT(quant_plan_type(&q, "blk.2.attn_v.weight", GGML_TYPE_F16, 2, sq), GGML_TYPE_Q4_K);
  CHECK_EQ_INT(quant_plan_type(&q, "blk.2.attn_output.weight", GGML_TYPE_F16, 2, sq), GGML_TYPE_Q4_K);
  CHECK_EQ_INT(quant_plan_type(&q, "blk.2.ffn_up.weight", GGML_TYPE_F16, 2, sq), GGML_TYPE_Q3_K);
  quant_plan r = { .ft = quant_ftype_by_name("Q2_K"), .has_output = true, .n_gqa = 4, .n_layer = 8, .n_attention_wv = 8 };
  CHECK_EQ_INT(quant_plan_type(&r, "blk.0.attn_v.weight", GGML_TYPE_F16, 2, sq), GGML_TYPE_Q4_K);
  CHECK_EQ_INT(quant_plan_type(&r, "blk.0.ffn_down.weight", GGML_TYPE_F16, 2, sq), GGML_TYPE_Q3_K);
  CHECK_EQ_INT(quant_plan_type(&r, "blk.0.attn_q.weight", GGML_TYPE_F16, 2, sq), GGML_TYPE_Q2_K);
  /* llama.cpp's tensor order */
  CHECK(quant_tensor_cmp("output.weight", "blk.0.attn_q.weight") < 0);
  CHECK(quant_tensor_cmp("blk.2.ffn_up.weight", "blk.10.attn_q.weight") < 0);
  CHECK(quant_tensor_cmp("blk.1.attn_v.weight", "blk.1.attn_k.weight") > 0);
}

static llama_init_params small_llama(const char *ftype, uint64_t seed) {
  llama_init_params p = llama_init_defaults();
  p.dim = 256; p.layers = 2; p.heads = 4; p.kv_heads = 2; p.ffn = 512; p.vocab = 300; p.ctx = 128;
  p.ft = quant_ftype_by_name(ftype); p.seed = seed;
  return p;
}

TEST(gguf_w_llm_init) {
  const char *p1 = tmp_path("init1.gguf"), *p2 = tmp_path("init2.gguf"), *p3 = tmp_path("init3.gguf");
  llama_init_params p = small_llama("Q8_0", 7);
  int64_t n = llama_init_write(p1, &p, NULL);
  CHECK_MSG(n == 300 * 256 * 2 + 2 * (2 * 256 + 2 * 256 * 256 + 2 * 256 * 128 + 3 * 256 * 512) + 256, "%lld: %s", (long long)n, tg_error());
  CHECK(llama_init_write(p2, &p, NULL) == n);
  CHECK_MSG(same_file(p1, p2), "the same seed gives the same file");
  p.seed = 8;
  CHECK(llama_init_write(p3, &p, NULL) == n);
  CHECK(!same_file_r(p1, p3, false));
  gguf_file *f = gguf_open(p1);
  CHECK_MSG(f, "%s", tg_error());
  if (!f) return;
  CHECK_EQ_INT(f->n_tensors, 1 + 2 * 9 + 2);
  int64_t v;
  char *arch = gguf_get_str(f, "general.architecture");
  CHECK(arch && !strcmp(arch, "llama"));
  free(arch);
  CHECK(gguf_get_int(f, "llama.attention.head_count_kv", &v) && v == 2);
  CHECK(gguf_get_int(f, "llama.rope.dimension_count", &v) && v == 64);
  CHECK(gguf_get_int(f, "general.file_type", &v) && v == 7);
  const gguf_kv *tok = gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_STRING);
  CHECK(tok && tok->arr_n == 300 && tok->str_lens[1] == 3 && !memcmp(tok->strs[1], "<s>", 3) && !memcmp(tok->strs[3 + 0x41], "<0x41>", 6));
  const gguf_kv *tt = gguf_get_arr(f, "tokenizer.ggml.token_type", GGUF_I32);
  CHECK(tt && tt->arr_n == 300 && gguf_arr_int(tt, 0) == 2 && gguf_arr_int(tt, 2) == 3 && gguf_arr_int(tt, 10) == 6 && gguf_arr_int(tt, 299) == 1);
  const gguf_tensor_info *k = gguf_find_tensor(f, "blk.1.attn_k.weight");
  CHECK(k && k->type == GGML_TYPE_Q8_0 && k->ne[0] == 256 && k->ne[1] == 128);
  const gguf_tensor_info *nrm = gguf_find_tensor(f, "blk.1.ffn_norm.weight");
  CHECK(nrm && nrm->type == GGML_TYPE_F32 && nrm->n_dims == 1);
  if (nrm) {
    float one;
    memcpy(&one, nrm->map->base + nrm->file_offset, 4);
    CHECK(one == 1.0f);
  }
  const gguf_tensor_info *o = gguf_find_tensor(f, "output.weight");
  CHECK(o && o->type == GGML_TYPE_Q8_0);
  gguf_close(f);

  p.vocab = 100;
  CHECK(llama_init_write(p3, &p, NULL) < 0 && strstr(tg_error(), "259"));
}

TEST(gguf_w_quantize_model) {
  const char *src = tmp_path("f32.gguf"), *dst = tmp_path("q4k.gguf");
  llama_init_params p = small_llama("F32", 1);
  CHECK_MSG(llama_init_write(src, &p, NULL) > 0, "%s", tg_error());
  CHECK_MSG(quant_model(src, dst, quant_ftype_by_name("Q4_K_M"), NULL) == 0, "%s", tg_error());
  gguf_file *a = gguf_open(src), *b = gguf_open(dst);
  CHECK(a && b);
  if (!a || !b) { gguf_close(a); gguf_close(b); return; }
  /* metadata: the same entries, general.quantization_version and
   * general.file_type moved to the end (as llama-quantize does) */
  CHECK_EQ_INT(b->n_kv, a->n_kv);
  for (int i = 0, j = 0; i < a->n_kv && j < b->n_kv - 2; i++) {
    if (!strcmp(a->kv[i].key, "general.quantization_version") || !strcmp(a->kv[i].key, "general.file_type")) continue;
    CHECK_MSG(!strcmp(a->kv[i].key, b->kv[j].key), "key %d: %s vs %s", j, a->kv[i].key, b->kv[j].key);
    j++;
  }
  CHECK(!strcmp(b->kv[b->n_kv - 2].key, "general.quantization_version") && !strcmp(b->kv[b->n_kv - 1].key, "general.file_type"));
  int64_t v;
  CHECK(gguf_get_int(b, "general.file_type", &v) && v == 15);
  CHECK(gguf_get_int(b, "general.quantization_version", &v) && v == 2);
  CHECK(gguf_get_arr(b, "tokenizer.ggml.tokens", GGUF_STRING)->arr_n == 300);
  CHECK_EQ_INT(b->n_tensors, a->n_tensors);
  for (int i = 0; i < b->n_tensors; i++) {
    const gguf_tensor_info *y = &b->tensors[i], *x = gguf_find_tensor(a, y->name);
    CHECK(x != NULL);
    if (!x) continue;
    if (i) CHECK_MSG(quant_tensor_cmp(b->tensors[i - 1].name, y->name) < 0, "tensor order at %s", y->name);
    /* Q4_K_M over 2 layers: layer 1's attn_v and ffn_down get Q6_K */
    uint32_t want = x->n_dims == 1 ? GGML_TYPE_F32
                  : !strcmp(x->name, "output.weight") || !strcmp(x->name, "blk.1.attn_v.weight") ||
                    !strcmp(x->name, "blk.1.ffn_down.weight") ? GGML_TYPE_Q6_K : GGML_TYPE_Q4_K;
    CHECK_MSG(y->type == want, "%s: type %u, want %u", y->name, y->type, want);
    /* the bytes are quant_rows of the source (or the source itself) */
    int64_t rows = x->n_dims == 2 ? x->ne[1] : 1;
    unsigned char *q = malloc(y->nbytes);
    CHECK(quant_rows(y->type, (const float *)(x->map->base + x->file_offset), q, rows, x->ne[0]) == (int64_t)y->nbytes);
    CHECK_MSG(!memcmp(q, y->map->base + y->file_offset, y->nbytes), "%s: data", y->name);
    free(q);
  }
  gguf_close(a);
  gguf_close(b);
  CHECK(quant_model(tmp_path("missing.gguf"), dst, quant_ftype_by_name("Q4_0"), NULL) < 0);
}

/* [2.9] float metadata that is NaN, infinite or huge: its integer view is
 * defined (truncated, saturated, NaN 0: it was a cast past int64's range),
 * it prints, and the LLM loader rejects such a hyperparameter by name. */
TEST(gguf_float_metadata_edges) {
  gguf_writer *w = gguf_writer_new();
  const float f32s[] = { NAN, INFINITY, -INFINITY, 3e38f, -2.75f };
  const double f64s[] = { NAN, 1e300, -1e300, 42.9, -9223372036854775808.0, 9223372036854775808.0 };
  const int64_t want32[] = { 0, INT64_MAX, INT64_MIN, INT64_MAX, -2 };
  const int64_t want64[] = { 0, INT64_MAX, INT64_MIN, 42, INT64_MIN, INT64_MAX };
  char key[32];
  for (int i = 0; i < 5; i++) { snprintf(key, sizeof key, "f32.%d", i); CHECK(gguf_w_set_f32(w, key, f32s[i]) == 0); }
  for (int i = 0; i < 6; i++) { snprintf(key, sizeof key, "f64.%d", i); CHECK(gguf_w_set(w, key, GGUF_F64, &f64s[i]) == 0); }
  CHECK(gguf_w_set_arr(w, "a.f64", GGUF_F64, f64s, 6) == 0);
  CHECK(gguf_w_set_arr(w, "a.f32", GGUF_F32, f32s, 5) == 0);
  const char *p = tmp_path("floats.gguf");
  CHECK_MSG(gguf_writer_write(w, p, NULL, NULL) == 0, "%s", tg_error());
  gguf_writer_free(w);
  gguf_file *f = gguf_open(p);
  CHECK_OK(f);
  if (!f) return;
  char buf[512];
  for (int i = 0; i < 5; i++) {
    snprintf(key, sizeof key, "f32.%d", i);
    const gguf_kv *kv = gguf_find(f, key);
    CHECK(kv && kv->i == want32[i] && (isnan(f32s[i]) ? isnan(kv->f) : kv->f == (double)f32s[i]));
    if (kv) gguf_kv_format(kv, buf, sizeof buf);
  }
  for (int i = 0; i < 6; i++) {
    snprintf(key, sizeof key, "f64.%d", i);
    const gguf_kv *kv = gguf_find(f, key);
    CHECK_MSG(kv && kv->i == want64[i], "%s: i %lld", key, kv ? (long long)kv->i : 0);
    if (kv) gguf_kv_format(kv, buf, sizeof buf);
  }
  const gguf_kv *a = gguf_get_arr(f, "a.f64", GGUF_F64), *b = gguf_get_arr(f, "a.f32", GGUF_F32);
  CHECK(a && b);
  if (a) for (int i = 0; i < 6; i++) CHECK_EQ_INT(gguf_arr_int(a, (uint64_t)i), want64[i]);
  if (b) for (int i = 0; i < 5; i++) CHECK_EQ_INT(gguf_arr_int(b, (uint64_t)i), want32[i]);
  if (a) { gguf_kv_format(a, buf, sizeof buf); CHECK_MSG(strstr(buf, "nan") && strstr(buf, "1e+300"), "%s", buf); }
  int64_t v;
  CHECK(!gguf_get_int(f, "f64.1", &v));   /* a float is no integer key */
  gguf_close(f);
  CHECK(!gguf_open(NULL) && strstr(tg_error(), "NULL path"));

  /* the tiny llama golden with one hyperparameter replaced */
  static const struct { const char *key; uint32_t type; float v; const char *err; } bad[] = {
    { "llama.attention.layer_norm_rms_epsilon", GGUF_F32, NAN, "layer_norm_rms_epsilon" },
    { "llama.rope.freq_base", GGUF_F32, INFINITY, "rope.freq_base" },
    { "llama.feed_forward_length", GGUF_ARRAY, INFINITY, "feed_forward_length" },
    { "llama.feed_forward_length", GGUF_ARRAY, 1e30f, "out of range" },
    { "llama.feed_forward_length", GGUF_ARRAY, NAN, "feed_forward_length" },
  };
  gguf_file *g = gguf_open("goldens/llm_llama.gguf");
  if (!g) SKIP("goldens/llm_llama.gguf: %s", tg_error());
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    w = gguf_writer_new();
    for (int i = 0; i < g->n_kv; i++) CHECK(gguf_w_copy_kv(w, &g->kv[i]) == 0);
    if (bad[k].type == GGUF_ARRAY) CHECK(gguf_w_set_arr(w, bad[k].key, GGUF_F32, &bad[k].v, 1) == 0);
    else CHECK(gguf_w_set_f32(w, bad[k].key, bad[k].v) == 0);
    for (int i = 0; i < g->n_tensors; i++) {
      const gguf_tensor_info *ti = &g->tensors[i];
      CHECK(gguf_w_add_tensor(w, ti->name, ti->type, ti->n_dims, ti->ne, (const char *)ti->map->base + ti->file_offset) == i);
    }
    p = tmp_path("bad_llm.gguf");
    CHECK_MSG(gguf_writer_write(w, p, NULL, NULL) == 0, "%s", tg_error());
    gguf_writer_free(w);
    tg_llm *m = tg_llm_load(p, NULL);
    CHECK_MSG(!m && strstr(tg_error(), bad[k].err), "%s = %g: %s", bad[k].key, bad[k].v, m ? "loaded" : tg_error());
    tg_llm_free(m);
  }
  gguf_close(g);
}
