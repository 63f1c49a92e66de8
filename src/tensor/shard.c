/* shard.c: tg_shard and the device tuples of sharded tensors (shard.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include "tensor/shard.h"
#include "runtime/device.h"
#include "uop/dims.h"
#include "tg_dist.h"

/* ---- device tuples: interned, so a tuple's name is one pointer */
typedef struct { char *name; int n; const char *dev[SHARD_MAX_DEVICES]; } dev_tuple;
static struct { dev_tuple **v; int n, cap; } tuples;   /* never freed: names stay valid */
static pthread_mutex_t tuples_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool used;

bool shard_used(void) { return atomic_load(&used); }

const char *shard_devices_name(const char *const *devices, int n) {
  pthread_mutex_lock(&tuples_lock);
  for (int i = 0; i < tuples.n; i++)
    if (tuples.v[i]->n == n && !memcmp(tuples.v[i]->dev, devices, sizeof(char *) * (size_t)n)) {
      pthread_mutex_unlock(&tuples_lock);
      return tuples.v[i]->name;
    }
  dev_tuple *t = tg_xcalloc(1, sizeof *t);
  size_t len = 1;
  t->n = n;
  for (int i = 0; i < n; i++) { t->dev[i] = devices[i]; len += strlen(devices[i]) + 1; }
  t->name = tg_xmalloc(len);
  t->name[0] = '\0';
  for (int i = 0; i < n; i++) { if (i) strcat(t->name, ","); strcat(t->name, devices[i]); }
  VEC_PUSH(tuples, t);
  pthread_mutex_unlock(&tuples_lock);
  return t->name;
}

static const dev_tuple *tuple_of(const char *name) {
  const dev_tuple *r = NULL;
  pthread_mutex_lock(&tuples_lock);
  for (int i = 0; i < tuples.n && !r; i++) if (tuples.v[i]->name == name) r = tuples.v[i];
  pthread_mutex_unlock(&tuples_lock);
  return r;
}
bool shard_is_multi_name(const char *name) { return name && tuple_of(name) != NULL; }
const char *shard_first_device(const char *name) {
  const dev_tuple *t = tuple_of(name);
  return t ? t->dev[0] : name;
}

/* ---- devices of ops over several tensors */
bool tensor_reads_no_memory(const tg_tensor *t) {
  uop_list topo = uop_toposort(t->u);
  bool none = true;
  for (int i = 0; i < topo.n && none; i++) {
    uop_op op = topo.v[i]->op;
    none = op != OP_BUFFER && op != OP_COPY && op != OP_MULTI && op != OP_CALL;
  }
  free(topo.v);
  return none;
}

const char *tensor_join_device(const tg_tensor *a, const tg_tensor *b, const char *op) {
  if (a->device == b->device) return a->device;
  /* constants that ops make on the default device (tg_scalar in a loss)
   * join a sharded tensor: they are evaluated on each part's device */
  bool ma = shard_is_multi_name(a->device), mb = shard_is_multi_name(b->device);
  if (mb && !ma && tensor_reads_no_memory(a)) return b->device;
  if (ma && !mb && tensor_reads_no_memory(b)) return a->device;
  bool sharded = ma || mb;
  tg_seterr("%s: tensors are on different devices (%s and %s); %s", op, a->device, b->device,
            sharded ? "shard the other one too (tg_shard) or gather with tg_to" : "use tg_to");
  return NULL;
}

/* Devices no part can live on, refused here rather than when the first op
 * runs: DISK (read-only file mappings; kernels cannot run there), and NULL
 * beside devices that compute (it runs everything and computes nothing, so
 * its part would hold no values; NULL alone is for counting). Devices of
 * different compute kinds (CPU and CL) are fine: each runs its own kernels. */
static int unfit_devices(const char *const *names, int n) {
  int nulls = 0;
  for (int i = 0; i < n; i++) {
    if (!strcmp(names[i], "DISK"))
      return tg_seterr("tg_shard: DISK cannot hold a part: its memory is read-only file mappings and no op runs there "
                       "(shard over compute devices: CPU, CPU:1, CL, ...)");
    nulls += !strcmp(names[i], "NULL");
  }
  if (nulls && nulls < n) {
    const char *other = NULL;
    for (int i = 0; i < n && !other; i++) if (strcmp(names[i], "NULL")) other = names[i];
    return tg_seterr("tg_shard: NULL computes nothing, so its part would hold no values beside %s's (shard over compute devices, or NULL alone)",
                     other);
  }
  return 0;
}

/* ---- the API */
tg_tensor *tg_shard(tg_tensor *t, const char *const *devices, int n, int axis) {
  NEED(t, "tg_shard");
  if (!devices) TG_FAIL("tg_shard: devices is NULL");
  if (n < 1 || n > SHARD_MAX_DEVICES) TG_FAIL("tg_shard: %d devices (1 to %d)", n, SHARD_MAX_DEVICES);
  const char *names[SHARD_MAX_DEVICES];
  for (int i = 0; i < n; i++) {
    if (!devices[i]) TG_FAIL("tg_shard: devices[%d] is NULL", i);
    tg_device *d = device_get(devices[i]);
    if (!d) { char why[256]; snprintf(why, sizeof why, "%s", tg_error()); TG_FAIL("tg_shard: %s", why); }
    names[i] = d->name;
    for (int j = 0; j < i; j++) if (names[j] == names[i]) TG_FAIL("tg_shard: device %s is listed twice", names[i]);
  }
  if (unfit_devices(names, n) < 0) return NULL;
  const uop *u = t->u;
  if (axis != -1 && (axis < 0 || axis >= u->ndim)) TG_FAIL("tg_shard: axis %d out of range for a %d-D tensor (-1: replicated)", axis, u->ndim);
  if (axis >= 0 && uop_dim_var(u, axis)) TG_FAIL("tg_shard: axis %d is symbolic", axis);
  if (axis >= 0 && u->shape[axis] % n)
    TG_FAIL("tg_shard: axis %d of size %lld does not split evenly over %d devices", axis, (long long)u->shape[axis], n);
  API_BEGIN;
  uop *parts[SHARD_MAX_DEVICES];
  int64_t size = axis >= 0 ? u->shape[axis] / n : 0;
  bool no_memory = tensor_reads_no_memory(t);
  for (int i = 0; i < n; i++) {
    uop *p = t->u;
    if (axis >= 0) {
      int64_t s[TG_MAX_DIMS], e[TG_MAX_DIMS];
      for (int k = 0; k < u->ndim; k++) { s[k] = 0; e[k] = u->shape[k]; }
      s[axis] = size * i; e[axis] = size * (i + 1);
      p = mv_shrink(p, s, e);
    }
    if (t->device != names[i] || no_memory) p = uop1(OP_COPY, p->dtype, p, arg_str(names[i]));   /* a part knows its device */
    parts[i] = p;
  }
  atomic_store(&used, true);
  API_RETURN(tensor_wrap(uop_new(OP_MULTI, u->dtype, parts, n, arg_int(axis)), shard_devices_name(names, n)));
}

tg_tensor *shard_replicate_on(tg_tensor *t, const char *name) {
  const dev_tuple *d = tuple_of(name);
  return d ? tg_shard(t, d->dev, d->n, -1) : t;
}

int tg_shard_axis(const tg_tensor *t) {
  if (!t) { tensor_null_arg("tg_shard_axis", "t"); return -2; }
  if (!shard_is_multi_name(t->device)) return -2;
  return shard_axis_of(t->u);
}

int shard_data(tg_tensor *t, void *out, size_t nbytes) {
  tg_scope_begin();
  tg_tensor *g = tg_to(t, shard_first_device(t->device));
  int rc = g ? tg_data(g, out, nbytes) : -1;
  tg_scope_end();
  return rc;
}
