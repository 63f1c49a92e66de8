/* variables.c: symbolic integer variables as tensors (tg_variable). The
 * bindings live in the engine (engine/vars.c), which feeds them to kernels. */
#include "engine/vars.h"
#include "tensor/tensor.h"

tg_tensor *tg_variable(const char *name, int64_t min, int64_t max) {
  if (vars_declare(name, min, max) < 0) return NULL;
  API_BEGIN;
  uop *v = uop2(OP_DEFINE_VAR, DT_INDEX, uop_const_int(DT_INDEX, min), uop_const_int(DT_INDEX, max), arg_str(name));
  API_RETURN(tensor_wrap(uop_cast(v, DT_I32), tg_default_device()));
}
