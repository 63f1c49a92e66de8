/* kernel_sources.c: what the C renderer writes for a tensor's kernels, for
 * tests that look for a construct in the source (a prefetch, a vector
 * helper). Kernels are scheduled from the tensor graph, given the default
 * heuristic's opts (for 2 cores) the way realize does, and rendered to C. */
#include "test.h"
#include "codegen/codegen.h"
#include "codegen/opts.h"
#include "renderer/renderer.h"
#include "schedule/schedule.h"
#include "tensor/tensor.h"

int test_kernels_with(const char *needle, tg_tensor *t, int *nkernels) {
  schedule s;
  ptrmap becomes = { 0 };
  uop_pool_push();
  int found = -1;
  *nkernels = 0;
  if (schedule_create(&t->u, 1, "CPU", &s, &becomes) == 0) {
    found = 0;
    for (int i = 0; i < s.n; i++) {
      uop *ast = s.v[i].ast;
      if (!ast) continue;
      kopt o[32];
      const tg_renderer *ren = renderer_by_name("c");
      int n = kernel_heuristic_opts(ast, ren, 2, o, 32);
      kernel_program kp;
      if (codegen_program(ast, "k", ren, o, n, true, &kp) < 0) { found = -1; break; }
      char *src = kp.src;
      (*nkernels)++;
      found += strstr(src, needle) != NULL;
      free(src);
    }
    schedule_free(&s);
  }
  pm_free(&becomes);
  uop_pool_pop();
  return found;
}
