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
