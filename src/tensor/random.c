/* random.c: counter-based random numbers, like tinygrad's. Element i of the
 * k-th draw after tg_manual_seed(s) is threefry2x32(counter + i, key = s):
 * the same seed gives the same numbers on any device and any run, and no
 * generator state lives in a buffer. */
#include <math.h>
#include <pthread.h>
#include "tensor/tensor.h"
#include "runtime/buffer.h"
#include "tensor/math_internal.h"

static uint64_t rng_seed = 0x5eed;
static uint64_t rng_counter;
static pthread_mutex_t rng_lock = PTHREAD_MUTEX_INITIALIZER;

void tg_manual_seed(uint64_t seed) {
  pthread_mutex_lock(&rng_lock);
  rng_seed = seed; rng_counter = 0;
  pthread_mutex_unlock(&rng_lock);
}

/* 64 random bits per element of a flat tensor of n elements (borrowed). */
static uop *random_bits(int64_t n) {
  pthread_mutex_lock(&rng_lock);
  uint64_t base = rng_counter, key = rng_seed;
  rng_counter += (uint64_t)n;
  pthread_mutex_unlock(&rng_lock);
  int64_t sh[1] = { n };
  /* counter and key live in a small buffer, not in the kernel: every draw
   * then runs the same compiled kernel */
  uint64_t ck[2] = { base, key };
  tg_buffer *b = buffer_new(device_get(tg_default_device()), TG_U64, 2);
  if (!b || buffer_copyin(b, ck, sizeof ck) < 0) { buffer_release(b); return NULL; }
  uop *buf = uop0(OP_BUFFER, DT_U64, arg_ptr(b));
  buffer_release(b);
  int64_t lo[1] = { 0 }, hi[1] = { 1 }, lo2[1] = { 1 }, hi2[1] = { 2 };
  uop *cbase = mv_expand(uop1(OP_SHRINK, DT_U64, buf, arg_ints((int64_t[]){ lo[0], hi[0] }, 2)), sh, 1);
  uop *ckey = mv_expand(uop1(OP_SHRINK, DT_U64, buf, arg_ints((int64_t[]){ lo2[0], hi2[0] }, 2)), sh, 1);
  uop *ctr = uop_alu(OP_ADD, uop_cast(uop0(OP_ARANGE, DT_INDEX, arg_int(n)), DT_U64), cbase);
  return uop2(OP_THREEFRY, DT_U64, ctr, ckey, arg_none());
}

/* 32 bits -> float32 in [0, 1): 23 mantissa bits under exponent 0, minus 1 */
static uop *bits_to_unit(uop *bits32) {
  int nd = bits32->ndim; int64_t *sh = bits32->shape;
  uop *m = uop_alu(OP_SHR, bits32, const_like(9, DT_U32, sh, nd));
  m = uop_alu(OP_OR, m, const_like(0x3f800000, DT_U32, sh, nd));
  uop *f = uop1(OP_BITCAST, DT_F32, m, arg_none());
  return uop_alu(OP_SUB, f, const_like(1, DT_F32, sh, nd));
}

static bool check(tg_shape s, tg_dtype dt, const char *op) {
  if (s.ndim < 0 || s.ndim > TG_MAX_DIMS) { tg_seterr("%s: bad number of dimensions %d", op, s.ndim); return false; }
  for (int i = 0; i < s.ndim; i++) if (s.d[i] < 0) { tg_seterr("%s: negative dimension at axis %d", op, i); return false; }
  if (!shape_ok(s.d, s.ndim, op)) return false;
  if (!tg_dtype_is_float(dt)) { tg_seterr("%s: dtype must be a float type, not %s", op, (unsigned)dt < TG_DTYPE_COUNT ? tg_dtype_name(dt) : "unknown"); return false; }
  return true;
}

tg_tensor *tg_rand(tg_shape shape, tg_dtype dt) {
  if (!check(shape, dt, "tg_rand")) return NULL;
  int64_t n = shape_numel(shape.d, shape.ndim);
  API_BEGIN;
  uop *bits = random_bits(n);
  if (!bits) API_RETURN(NULL);
  uop *lo = uop_cast(bits, DT_U32);
  uop *u = bits_to_unit(lo);
  u = make_unique(mv_reshape(uop_cast(u, dt_scalar(dt)), shape.d, shape.ndim));
  API_RETURN(tensor_wrap(u, tg_default_device()));
}

tg_tensor *tg_randn(tg_shape shape, tg_dtype dt) {
  if (!check(shape, dt, "tg_randn")) return NULL;
  int64_t n = shape_numel(shape.d, shape.ndim);
  API_BEGIN;
  int64_t sh[1] = { n };
  uop *bits = random_bits(n);
  if (!bits) API_RETURN(NULL);
  uop *u1 = bits_to_unit(uop_cast(bits, DT_U32));
  uop *u2 = bits_to_unit(uop_cast(uop_alu(OP_SHR, bits, const_like(32, DT_U64, sh, 1)), DT_U32));
  /* Box-Muller: sqrt(-2 ln(1-u1)) * cos(2 pi u2) */
  uop *one = const_like(1, DT_F32, sh, 1);
  uop *ln = uop_alu(OP_MUL, uop_alu1(OP_LOG2, uop_alu(OP_SUB, one, u1)), const_like(-2.0 * M_LN2, DT_F32, sh, 1));
  uop *r = uop_alu1(OP_SQRT, ln);
  uop *c = uop_alu1(OP_SIN, uop_alu(OP_SUB, const_like(M_PI / 2, DT_F32, sh, 1), uop_alu(OP_MUL, u2, const_like(2 * M_PI, DT_F32, sh, 1))));
  uop *z = uop_alu(OP_MUL, r, c);
  z = make_unique(mv_reshape(uop_cast(z, dt_scalar(dt)), shape.d, shape.ndim));
  API_RETURN(tensor_wrap(z, tg_default_device()));
}

/* tinygrad's rand_like / randn_like: t's shape (symbolic axes at their
 * maximum), dtype and device */
static tg_tensor *random_like(const tg_tensor *t, bool normal, const char *op) {
  if (!t) { tensor_null_arg(op, "t"); return NULL; }
  tg_shape s = { t->u->ndim, { 0 } };
  for (int i = 0; i < s.ndim; i++) s.d[i] = t->u->shape[i];
  tg_dtype dt = (tg_dtype)t->u->dtype.scalar;
  if (!tg_dtype_is_float(dt)) TG_FAIL("%s: t must be a float tensor, not %s", op, tg_dtype_name(dt));
  const char *prev = tensor_device_begin(t->device);
  tg_tensor *r = normal ? tg_randn(s, dt) : tg_rand(s, dt);
  tensor_device_end(prev);
  return r;
}
tg_tensor *tg_rand_like(const tg_tensor *t) { return random_like(t, false, "tg_rand_like"); }
tg_tensor *tg_randn_like(const tg_tensor *t) { return random_like(t, true, "tg_randn_like"); }

tg_tensor *tg_threefry(tg_tensor *x, tg_tensor *key) {
  NEED(x, "tg_threefry"); NEED(key, "tg_threefry");
  if (tg_dtype_of(x) != TG_U64 || tg_dtype_of(key) != TG_U64)
    TG_FAIL("tg_threefry: counter and key must be uint64 tensors, not %s and %s", tg_dtype_name(tg_dtype_of(x)), tg_dtype_name(tg_dtype_of(key)));
  API_BEGIN;
  uop *ux, *uk;
  if (!mt_broadcast2(x, key, &ux, &uk, TG_U64, "tg_threefry")) API_RETURN(NULL);
  API_RETURN(tensor_wrap(uop2(OP_THREEFRY, DT_U64, ux, uk, arg_none()), x->device));
}
