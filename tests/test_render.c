/* test_render.c: the renderers' code rules (renderer/code_for_op.c and each
 * dialect's tables): which dialect spells an op how, the order of the
 * tables (a dialect's rules before the core's), vector nodes only where a
 * dialect has vector types, and the passes' TRACK_REWRITES lines. The
 * expected spellings are the languages' own: C's and CUDA's libm names
 * float32 functions with an f, OpenCL C overloads them and spells bit casts
 * as_<type>. */
#include <fcntl.h>
#include <unistd.h>
#include "test.h"
#include "renderer/cstyle.h"
#include "tensor/tensor.h"

static uop *node(dtype_t d, const char *name) { return uop0(OP_DEFINE_GLOBAL, d, arg_str(name)); }

/* the code of u in r's dialect, its sources named a, b, c */
static char *code_of(const tg_renderer *r, uop *u) {
  rctx c = { .r = r, .d = r->dialect };
  for (int i = 0; i < u->nsrc; i++)
    if (!pm_get(&c.names, u->src[i])) pm_put(&c.names, u->src[i], rfmt("%c", 'a' + i));
  char *s = render_code(&c, u);
  for (size_t i = 0; i < c.names.cap; i++) if (c.names.e[i].key) free(c.names.e[i].val);
  pm_free(&c.names);
  return s;
}

static void expect(const tg_renderer *r, uop *u, const char *want, int line) {
  char *got = code_of(r, u);
  if (!want ? got != NULL : !got || strcmp(got, want))
    test_fail(__FILE__, line, "%s: %s: got %s, want %s", r->name, uop_op_name(u->op), got ? got : "NULL", want ? want : "NULL");
  free(got);
}
#define EXPECT(r, u, want) expect(r, u, want, __LINE__)

TEST(render_rules_per_dialect) {
  uop_pool_push();
  uop *f = node(DT_F32, "f"), *g = node(DT_F32, "g"), *d = node(dt_scalar(TG_F64), "d");
  uop *i = node(DT_I32, "i"), *j = node(DT_I32, "j"), *u = node(dt_scalar(TG_U32), "u"), *v = node(dt_scalar(TG_U32), "v");
  /* libm: float32 names in C and CUDA C, overloads in OpenCL C; doubles overloaded everywhere */
  EXPECT(&renderer_c, uop_alu1(OP_EXP2, f), "exp2f(a)");
  EXPECT(&renderer_cuda, uop_alu1(OP_EXP2, f), "exp2f(a)");
  EXPECT(&renderer_opencl, uop_alu1(OP_EXP2, f), "exp2(a)");
  EXPECT(&renderer_c, uop_alu1(OP_SQRT, d), "sqrt(a)");
  EXPECT(&renderer_cuda, uop_alu(OP_MOD, f, g), "fmodf(a,b)");
  EXPECT(&renderer_opencl, uop_alu(OP_MOD, f, g), "fmod(a,b)");
  EXPECT(&renderer_c, uop_alu(OP_IDIV, f, g), "truncf(a/b)");
  EXPECT(&renderer_opencl, uop_alu(OP_IDIV, d, d), "trunc(a/a)");
  /* integer division: a positive constant divides as it is; otherwise x/0
   * is 0 and MIN/-1 wraps (through the dialect's unsigned 64-bit type) */
  EXPECT(&renderer_c, uop_alu(OP_IDIV, i, uop_const_int(DT_I32, 4)), "(a/b)");
  EXPECT(&renderer_c, uop_alu(OP_IDIV, i, uop_const_int(DT_I32, -4)), "(b==0?0:b==-1?(int)(0ULL-(unsigned long long)a):a/b)");
  EXPECT(&renderer_opencl, uop_alu(OP_IDIV, i, j), "(b==0?0:b==-1?(int)(0UL-(ulong)a):a/b)");
  EXPECT(&renderer_cuda, uop_alu(OP_IDIV, u, v), "(b==0?0:a/b)");
  EXPECT(&renderer_c, uop_alu(OP_MOD, i, j), "((b==0||b==-1)?0:a%b)");
  EXPECT(&renderer_opencl, uop_alu(OP_MOD, u, uop_const_int(dt_scalar(TG_U32), 8)), "(a%b)");
  /* MAX: NaN propagates for floats */
  EXPECT(&renderer_c, uop_alu(OP_MAX, f, g), "((a!=a||a>b)?a:b)");
  EXPECT(&renderer_opencl, uop_alu(OP_MAX, i, j), "(a>b?a:b)");
  EXPECT(&renderer_cuda, uop_alu1(OP_RECIPROCAL, f), "(1.0f/a)");
  EXPECT(&renderer_cuda, uop_alu1(OP_RECIPROCAL, d), "(1.0/a)");
  EXPECT(&renderer_c, uop_alu1(OP_NEG, node(DT_BOOL, "p")), "(!a)");
  EXPECT(&renderer_c, uop_alu1(OP_TRUNC, i), "a");
  /* bit casts: each dialect's own */
  uop *bits = uop_new(OP_BITCAST, DT_I32, &f, 1, arg_none());
  EXPECT(&renderer_c, bits, "({ int o_; float i_ = a; __builtin_memcpy(&o_, &i_, sizeof o_); o_; })");
  EXPECT(&renderer_opencl, bits, "as_int(a)");
  EXPECT(&renderer_cuda, bits, "tg_bitcast<int>(a)");
  /* vectors: the C dialect's lanes (a scalar operand broadcast); none on GPUs */
  uop *f4 = node(dt_vec(DT_F32, 4), "f4");
  uop *vadd = uop_new(OP_ADD, dt_vec(DT_F32, 4), (uop *[]){ f4, f }, 2, arg_none());
  EXPECT(&renderer_c, vadd, "(a+(b-(tg_v4_float){0}))");
  EXPECT(&renderer_opencl, vadd, NULL);
  EXPECT(&renderer_cuda, vadd, NULL);
  EXPECT(&renderer_c, uop_new(OP_SQRT, dt_vec(DT_F32, 4), &f4, 1, arg_none()), "tg_sqrt_v4(a)");
  EXPECT(&renderer_c, uop_new(OP_POW, dt_vec(DT_F32, 4), (uop *[]){ f4, f4 }, 2, arg_none()), NULL);   /* no rule: cannot render */
  uop_pool_pop();
}

/* TRACK_REWRITES=1 names the render passes and the rule behind each
 * expression: "rewrite render c [(EXP2.f32 a)]: EXP2:float #.. -> exp2f(..)". */
typedef struct { tg_tensor *x; int found, nk; } track_case;
static void render_sqrt_exp2(void *p) { track_case *t = p; t->found = test_kernels_with("exp2f(", tg_exp2(tg_sqrt(t->x)), &t->nk); }

TEST(render_track_rewrites) {
  float data[5] = { 0, 1, 2, 3, 4 };
  track_case t = { tg_from_data(data, TG_SHAPE(5), TG_F32), 0, 0 };
  CHECK_OK(t.x && tg_realize(t.x) == 0);
  char *log = test_track_rewrites(1, render_sqrt_exp2, &t);
  if (!log) SKIP("no temporary file");
  CHECK_EQ_INT(t.found, 1);
  CHECK_MSG(strstr(log, "rewrite render c [(EXP2.f32 a)]: EXP2:float") && strstr(log, "-> exp2f("), "%.400s", log);
  CHECK_MSG(strstr(log, "rewrite render c [(SQRT.f32 a)]: SQRT:float") && strstr(log, "-> sqrtf("), "%.400s", log);
  free(log);
}
