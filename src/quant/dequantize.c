/* dequantize.c: tg_dequantize, the entry point (tg_quant.h): checks the
 * packed bytes against the type's block geometry and hands the (nblocks,
 * bytes_per_block) view to the type's dequantizer. */
#include "io/ggml_types.h"
#include "quant/quant.h"
#include "tensor/tensor.h"
#include "util/util.h"

/* Plain float types as bytes: little-endian words bitcast to the float. */
static tg_tensor *dq_f32(tg_tensor *blk) {
  tg_tensor *w = qt_or(qt_u16(blk, 0, 1), tg_lshifts(qt_u16(blk, 2, 1), 16));
  return tg_bitcast(w, TG_F32);
}
static tg_tensor *dq_f16(tg_tensor *blk) { return qt_f16(blk, 0); }
/* bf16 is the top half of a float32 */
static tg_tensor *dq_bf16(tg_tensor *blk) { return tg_bitcast(tg_lshifts(qt_u16(blk, 0, 1), 16), TG_F32); }

static qt_dequant_fn dequantizer(int t) {
  switch (t) {
  case GGML_TYPE_F32: return dq_f32;
  case GGML_TYPE_F16: return dq_f16;
  case GGML_TYPE_BF16: return dq_bf16;
  case GGML_TYPE_Q4_0: return dq_q4_0;
  case GGML_TYPE_Q4_1: return dq_q4_1;
  case GGML_TYPE_Q5_0: return dq_q5_0;
  case GGML_TYPE_Q5_1: return dq_q5_1;
  case GGML_TYPE_Q8_0: return dq_q8_0;
  case GGML_TYPE_Q2_K: return dq_q2_k;
  case GGML_TYPE_Q3_K: return dq_q3_k;
  case GGML_TYPE_Q4_K: return dq_q4_k;
  case GGML_TYPE_Q5_K: return dq_q5_k;
  case GGML_TYPE_Q6_K: return dq_q6_k;
  case GGML_TYPE_IQ4_NL: return dq_iq4_nl;
  case GGML_TYPE_IQ4_XS: return dq_iq4_xs;
  case GGML_TYPE_TQ1_0: return dq_tq1_0;
  case GGML_TYPE_TQ2_0: return dq_tq2_0;
  case GGML_TYPE_MXFP4: return dq_mxfp4;
  case GGML_TYPE_IQ2_XXS: return dq_iq2_xxs;
  case GGML_TYPE_IQ2_XS: return dq_iq2_xs;
  case GGML_TYPE_IQ2_S: return dq_iq2_s;
  case GGML_TYPE_IQ3_XXS: return dq_iq3_xxs;
  case GGML_TYPE_IQ3_S: return dq_iq3_s;
  case GGML_TYPE_IQ1_S: return dq_iq1_s;
  case GGML_TYPE_IQ1_M: return dq_iq1_m;
  default: return NULL;
  }
}

int tg_ggml_type_from_name(const char *name) {
  if (!name) return tg_seterr("tg_ggml_type_from_name: name is NULL");
  return ggml_type_by_name(name);
}
const char *tg_ggml_type_name(int t) {
  const ggml_type_traits *tr = t >= 0 ? ggml_type_info((uint32_t)t) : NULL;
  return tr ? tr->name : NULL;
}
bool tg_ggml_type_dequantizable(int t) { return dequantizer(t) != NULL; }

int64_t tg_ggml_nbytes(int t, int64_t numel) {
  const ggml_type_traits *tr = t >= 0 ? ggml_type_info((uint32_t)t) : NULL;
  if (!tr) return tg_seterr("tg_ggml_nbytes: unknown ggml type %d", t);
  if (numel < 0 || numel % tr->block_size)
    return tg_seterr("tg_ggml_nbytes: %lld values are not a whole number of %s blocks of %d", (long long)numel, tr->name, (int)tr->block_size);
  int64_t n;
  if (tg_mul_overflow_i64(numel / tr->block_size, tr->type_size, &n)) return tg_seterr("tg_ggml_nbytes: %lld %s values pass int64 bytes", (long long)numel, tr->name);
  return n;
}

tg_tensor *tg_dequantize(tg_tensor *raw, int t, tg_shape shape) {
  if (!raw) return tg_seterr("tg_dequantize: raw is NULL"), NULL;
  qt_dequant_fn fn = dequantizer(t);
  const char *name = tg_ggml_type_name(t);
  if (!fn) return tg_seterr("tg_dequantize: ggml type %d (%s) is not supported", t, name ? name : "unknown"), NULL;
  if (tg_dtype_of(raw) != TG_U8) return tg_seterr("tg_dequantize: raw must be uint8, not %s", tg_dtype_name(tg_dtype_of(raw))), NULL;
  const ggml_type_traits *tr = ggml_type_info((uint32_t)t);
  if (shape.ndim > TG_MAX_DIMS) return tg_seterr("tg_dequantize: bad number of dimensions %d", shape.ndim), NULL;
  int64_t numel = tg_checked_numel(shape.d, shape.ndim < 0 ? 0 : shape.ndim);
  if (numel < 0) {
    char s[200];
    int k = snprintf(s, sizeof s, "(");
    for (int i = 0; i < shape.ndim && k < (int)sizeof s - 24; i++) k += snprintf(s + k, sizeof s - (size_t)k, i ? ",%lld" : "%lld", (long long)shape.d[i]);
    return tg_seterr("tg_dequantize: shape %s) has a negative dimension or more than 2^59 elements", s), NULL;
  }
  if (shape.ndim < 1 || shape.d[shape.ndim - 1] % tr->block_size)
    return tg_seterr("tg_dequantize: %s rows are whole blocks of %d values; the last dimension must be a multiple of it",
                     name, tr->block_size), NULL;
  int64_t nbytes = tg_ggml_nbytes(t, numel);
  if (tg_numel(raw) != nbytes)
    return tg_seterr("tg_dequantize: %lld values of %s take %lld bytes, but raw has %lld", (long long)numel, name,
                     (long long)nbytes, (long long)tg_numel(raw)), NULL;
  tg_scope_begin();
  const char *dev_prev = tensor_device_begin(tg_device_of(raw));   /* constants and tables on raw's device */
  int64_t nb = numel / tr->block_size;
  tg_tensor *y = fn(tg_reshape(raw, TG_SHAPE(nb, tr->type_size)));
  tg_tensor *r = y ? tg_reshape(y, shape) : NULL;
  if (r) tg_keep(r);
  tensor_device_end(dev_prev);
  tg_scope_end();
  return r;
}
