/* program.c: codegen_program, the one way from a kernel AST to source
 * (see codegen.h). */
#include "codegen/codegen.h"
#include "codegen/opts.h"
#include "viz/viz.h"

int codegen_program(uop *ast, const char *name, const tg_renderer *r, const kopt *o, int n, bool skip_misfits, kernel_program *out) {
  memset(out, 0, sizeof *out);
  for (int d = 0; d < 3; d++) out->global[d] = out->local[d] = 1;
  uop_pool_push();
  kopt used[64];
  int nused = 0;
  for (int i = 0; i < n; i++) {
    uop *trial = ast;
    if (kernel_apply_opt(&trial, o[i], r) == 0) {
      ast = trial;
      if (nused < 64) used[nused++] = o[i];
    } else if (!skip_misfits) {
      char msg[4096];
      snprintf(msg, sizeof msg, "%s", tg_error());
      tg_seterr("kernel %s: %s", name, msg);
      uop_pool_pop();
      return -1;
    }
  }
  if (skip_misfits) tg_clear_error();
  kopts_format(used, nused, out->opts, sizeof out->opts);
  out->max_cores = kernel_thread_count(ast);
  ast = kernel_expand_lanes(ast, r->simd_vectors);
  if (ast && r->has_local) {
    ast = kernel_gpu_lower(ast, r, out->global, out->local);
    if (!ast) {
      char msg[4096];
      snprintf(msg, sizeof msg, "%s", tg_error());
      tg_seterr("kernel %s (%s%s): %s", name, nused ? "opts " : "no opts", out->opts, msg);
    }
  }
  if (ast && !r->native_half) ast = decompose_small_floats(ast);
  if (viz_codegen_hook && ast) viz_codegen_lowered(ast, name);   /* DEBUG=5/6, VIZ */
  out->src = ast ? render_kernel(r, ast, name) : NULL;
  if (ast) {
    uop_list l = uop_toposort(ast);
    for (int i = 0; i < l.n; i++)
      if (l.v[i]->op == OP_DEFINE_GLOBAL && l.v[i]->arg.i + 1 > out->nbuf_args) out->nbuf_args = (int)l.v[i]->arg.i + 1;
    free(l.v);
  }
  uop_pool_pop();
  return out->src ? 0 : -1;
}
