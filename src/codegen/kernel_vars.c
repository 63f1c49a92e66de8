/* kernel_vars.c: which symbolic variables a kernel reads, in the order it
 * receives them (vars[i], sorted by name). */
#include <stdlib.h>
#include <string.h>
#include "codegen/codegen.h"

static int by_name(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

int kernel_var_names(uop *ast, const char **names, int max) {
  uop_list l = uop_toposort(ast);
  int n = 0;
  for (int i = 0; i < l.n; i++) {
    uop *u = l.v[i];
    if (u->op != OP_DEFINE_VAR) continue;
    bool dup = false;
    for (int k = 0; k < n && !dup; k++) dup = !strcmp(names[k], u->arg.s);
    if (!dup && n < max) names[n++] = u->arg.s;
  }
  free(l.v);
  qsort(names, (size_t)n, sizeof(char *), by_name);
  return n;
}

