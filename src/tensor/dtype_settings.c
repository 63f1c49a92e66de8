/* dtype_settings.c: the two process-wide dtype defaults tinygrad takes from
 * its environment, DEFAULT_FLOAT and SUM_DTYPE, and the rules that read them
 * (tinygrad's least_upper_float and sum_acc_dtype). Each is read from the
 * environment on first use, and a setter overrides it from then on. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include "tensor/tensor.h"
#include "dtype/dtype.h"
#include "util/settings.h"

#define UNSET (-1)
static _Atomic int default_float = UNSET, sum_dtype = UNSET;

/* A float dtype named by the environment variable var, or float32 (with a
 * warning on stderr when var names something else). */
static int float_from_env(setting_id var) {
  const char *s = setting_str(var);
  if (!s || !*s) return TG_F32;
  int dt = tg_dtype_from_name(s);
  if (dt >= 0 && tg_dtype_is_float((tg_dtype)dt)) return dt;
  fprintf(stderr, "tg: %s=%s is not a float dtype name; using float32\n", settings_table[var].name, s);
  tg_clear_error();
  return TG_F32;
}

static tg_dtype get(_Atomic int *slot, setting_id var) {
  int v = atomic_load(slot);
  if (v == UNSET) {
    int e = float_from_env(var);
    atomic_compare_exchange_strong(slot, &v, e);   /* a setter that ran meanwhile wins */
    v = atomic_load(slot);
  }
  return (tg_dtype)v;
}

static int set(_Atomic int *slot, tg_dtype dt, const char *op) {
  if ((int)dt < 0 || dt >= TG_DTYPE_COUNT || !tg_dtype_is_float(dt))
    return tg_seterr("%s: %s is not a float dtype", op, (int)dt >= 0 && dt < TG_DTYPE_COUNT ? tg_dtype_name(dt) : "(unknown)"), -1;
  atomic_store(slot, (int)dt);
  return 0;
}

tg_dtype tg_default_float(void) { return get(&default_float, SET_DEFAULT_FLOAT); }
int tg_set_default_float(tg_dtype dt) { return set(&default_float, dt, "tg_set_default_float"); }
tg_dtype tg_sum_acc_float(void) { return get(&sum_dtype, SET_SUM_DTYPE); }
int tg_set_sum_acc_float(tg_dtype dt) { return set(&sum_dtype, dt, "tg_set_sum_acc_float"); }

void dtype_settings_reload(void) {
  atomic_store(&default_float, UNSET);
  atomic_store(&sum_dtype, UNSET);
}

dtype_t dtype_least_upper_float(dtype_t d) {
  if (dt_is_float(d)) return dt_base(d);
  return dt_scalar(tg_dtype_promote((tg_dtype)d.scalar, tg_default_float()));
}

dtype_t dtype_sum_acc(dtype_t d) {
  tg_dtype s = (tg_dtype)d.scalar;
  if (dt_is_unsigned(d)) return dt_scalar(tg_dtype_promote(s, TG_U32));
  if (dt_is_int(d) || s == TG_BOOL) return dt_scalar(tg_dtype_promote(s, TG_I32));
  return dt_scalar(tg_dtype_promote(s, tg_sum_acc_float()));
}
