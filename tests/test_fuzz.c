/* test_fuzz.c: regression tests for what the fuzzers of fuzz/ found (see
 * docs/security.md), one per bug, each with the smallest input that showed
 * it. */
#include "test.h"
#include "tg_chat.h"

/* fuzz_gguf_load: quantized tensors of a GGUF file loaded onto a device
 * other than the default one failed ("tg_rshift: tensors are on different
 * devices (NULL and CPU)"): tg_dequantize built its shift amounts, masks and
 * tables on the default device. They now go to raw's device. */
TEST(fuzz_dequantize_on_other_device) {
  const char *other = strcmp(tg_default_device(), "NULL") ? "NULL" : "CPU";
  tg_scope_begin();
  tg_tensor_list l = { 0 };
  CHECK_MSG(tg_gguf_load_tensors("goldens/quant_small.gguf", other, &l) == 0, "%s", tg_error());
  CHECK(l.n > 0);
  for (int i = 0; i < l.n; i++) {
    CHECK_MSG(!strcmp(tg_device_of(l.t[i]), other), "%s on %s", l.names[i], tg_device_of(l.t[i]));
    CHECK_MSG(tg_realize(l.t[i]) == 0, "%s: %s", l.names[i], tg_error());
  }
  tg_tensor_list_free(&l);
  /* every type, directly: the raw bytes on the other device */
  static const int types[] = { TG_GGML_Q4_0, TG_GGML_Q5_1, TG_GGML_Q2_K, TG_GGML_Q6_K, TG_GGML_IQ2_XXS, TG_GGML_IQ1_M,
                               TG_GGML_IQ4_NL, TG_GGML_TQ1_0, TG_GGML_MXFP4, TG_GGML_BF16 };
  for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
    int64_t nb = tg_ggml_nbytes(types[i], 256);
    tg_tensor *raw = tg_to(tg_zeros(TG_SHAPE(nb), TG_U8), other);
    tg_tensor *v = tg_dequantize(raw, types[i], TG_SHAPE(256));
    CHECK_MSG(v && !strcmp(tg_device_of(v), other) && tg_realize(v) == 0, "%s: %s", tg_ggml_type_name(types[i]), tg_error());
  }
  tg_scope_end();
}

/* fuzz_jinja: select / reject with no test name and no other argument
 * (pos NULL, npos 0) computed NULL + 0, undefined behaviour UBSan reports.
 * Results as Python's jinja2 gives them. */
TEST(fuzz_jinja_select_without_arguments) {
  static const struct { const char *tmpl, *want; } cases[] = {
    { "{{ [',', 'b', 'c', 'a'] | select() | list }}", "[',', 'b', 'c', 'a']" },
    { "{{ [0, 1, '', 'x'] | select | list }}", "[1, 'x']" },
    { "{{ [0, 1, '', 'x'] | reject() | list }}", "[0, '']" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *out = tg_jinja_render(cases[i].tmpl, NULL, (tg_jinja_options){ 0 });
    CHECK_MSG(out && !strcmp(out, cases[i].want), "case %zu: %s (want %s)", i, out ? out : tg_error(), cases[i].want);
    free(out);
  }
}
