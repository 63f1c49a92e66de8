/* variables.c: symbolic integer variables as tensors (tg_variable) and as
 * axis sizes (tg_shrink_var). The bindings live in the engine
 * (engine/vars.c), which feeds them to kernels; how symbolic axes flow
 * through the graph is uop/dims.c. */
#include "engine/vars.h"
#include "tensor/tensor.h"
#include "uop/dims.h"

static uop *var_uop(const char *name, int64_t min, int64_t max) {
  return uop2(OP_DEFINE_VAR, DT_INDEX, uop_const_int(DT_INDEX, min), uop_const_int(DT_INDEX, max), arg_str(name));
}

tg_tensor *tg_variable(const char *name, int64_t min, int64_t max) {
  if (vars_declare(name, min, max) < 0) return NULL;
  API_BEGIN;
  API_RETURN(tensor_wrap(uop_cast(var_uop(name, min, max), DT_I32), tg_default_device()));
}

tg_tensor *tg_shrink_var(tg_tensor *t, int axis, const char *var) {
  NEED(t, "tg_shrink_var");
  int a = norm_axis(axis, t->u->ndim, "tg_shrink_var");
  if (a < 0) return NULL;
  int64_t min, max;
  if (vars_range(var, &min, &max) < 0) TG_FAIL("tg_shrink_var: no variable named '%s' (declare it with tg_variable)", var ? var : "(null)");
  int64_t size = t->u->shape[a];
  if (min < 0 || max > size)
    TG_FAIL("tg_shrink_var: %s ranges over [%lld, %lld], which does not fit axis %d of size %lld (needs 0 <= min and max <= %lld)",
            var, (long long)min, (long long)max, a, (long long)size, (long long)size);
  API_BEGIN;
  API_RETURN(tensor_wrap(uop2(OP_SHRINK_VAR, t->u->dtype, t->u, var_uop(var, min, max), arg_int(a)), t->device));
}

const char *tg_dim_var(const tg_tensor *t, int axis) {
  if (!t) { tensor_null_arg("tg_dim_var", "t"); return NULL; }
  if (axis < -t->u->ndim || axis >= t->u->ndim) return NULL;
  uop *v = uop_dim_var(t->u, axis < 0 ? axis + t->u->ndim : axis);
  return v ? v->arg.s : NULL;
}

bool tg_dim_is_symbolic(const tg_tensor *t, int axis) { return tg_dim_var(t, axis) != NULL; }
