/* golden_io.h: reads the op goldens written by tests/gen/gen_ops.py (the
 * format is described at the top of that script) and compares tg tensors
 * with their expected arrays. Usable by any test:
 *
 *   golden_file *g = golden_load("goldens/ops_reduce.bin");
 *   for (int i = 0; g && i < g->ncases; i++) {
 *     const golden_case *c = &g->cases[i];
 *     tg_tensor *x = golden_tensor(&c->in[0]);
 *     ...
 *     golden_check(result, &c->out[0], c, c->label);
 *   }
 *   golden_free(g);
 */
#ifndef TG_GOLDEN_IO_H
#define TG_GOLDEN_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "tg.h"

typedef struct {
  tg_dtype dtype;
  int ndim;
  int64_t shape[TG_MAX_DIMS];
  int64_t numel;
  size_t nbytes;
  void *data;          /* malloc'd, aligned for any element type; never NULL */
} golden_array;

typedef enum { GOLDEN_INTS = 0, GOLDEN_FLOATS = 1 } golden_param_type;
typedef struct {
  char key[64];
  golden_param_type type;
  int n;
  int64_t *i;          /* type GOLDEN_INTS */
  double *f;           /* type GOLDEN_FLOATS */
} golden_param;

typedef struct {
  char op[64];         /* the dispatch name */
  char label[160];     /* unique, says what the case checks */
  double rtol, atol;
  int nparams, nin, nout;
  golden_param *params;
  golden_array *in, *out;
} golden_case;

typedef struct {
  char path[256];
  int ncases;
  golden_case *cases;
} golden_file;

/* Loads a golden file; NULL with a message in *err (static storage) when it
 * is missing or malformed. */
golden_file *golden_load(const char *path, const char **err);
void golden_free(golden_file *g);

/* Parameters. The getters accept either list type (ints convert to double and
 * integral doubles to int). */
const golden_param *golden_param_get(const golden_case *c, const char *key);
bool golden_has(const golden_case *c, const char *key);
int64_t golden_int(const golden_case *c, const char *key, int64_t dflt);
double golden_f64(const golden_case *c, const char *key, double dflt);
/* Copies up to max values of an int list into out; returns the count, or -1
 * when the key is missing. */
int golden_ints(const golden_case *c, const char *key, int64_t *out, int max);
/* The same into ints (for opts structs), and a 0/1 parameter as a bool. */
int golden_ints32(const golden_case *c, const char *key, int *out, int max);
bool golden_flag(const golden_case *c, const char *key);

/* The array's shape as a tg_shape, and a tensor holding a copy of its data
 * (on the default device). */
tg_shape golden_shape(const golden_array *a);
tg_tensor *golden_tensor(const golden_array *a);
/* Element i as a double (small floats decoded exactly; 64-bit ints rounded). */
double golden_value(const golden_array *a, int64_t i);

/* Reads t back and compares it with want: shape and dtype must be equal, then
 * every element (ints and bools exactly, floats with |got - want| <= atol +
 * rtol*|want|, NaN matching NaN, inf matching inf of the same sign; bitexact:
 * raw bytes). Reports the first mismatches through test_fail, prefixed with
 * `what`; returns true when everything matched. */
bool golden_compare(tg_tensor *t, const golden_array *want, double rtol, double atol, bool bitexact, const char *what);
/* golden_compare with the case's tolerances and its bitexact parameter. */
bool golden_check(tg_tensor *t, const golden_array *want, const golden_case *c, const char *what);


/* Makes tensors of the case's inputs into in[]; false (reported) when one
 * fails. */
bool golden_inputs(const golden_case *c, tg_tensor **in);
/* Checks forward outputs out[0..nf) against c->out[0..nf), then the
 * gradients of in[grad[k]] against c->out[nf + k]. */
bool golden_check_results(const golden_case *c, tg_tensor *const *out, int nf, tg_tensor *const *in, const int64_t *grad, int ngrad);

/* Runs the cases of a golden file with run(c). A case that known(label)
 * names (NULL: none) is a known bug: those run only when known_only, each in
 * a forked child so a crash cannot take the suite down; the others run only
 * when !known_only. Prints a summary line, counts run cases into *ran (may be
 * NULL). TG_TEST_CASE=substring runs matching labels only; TG_TEST_VERBOSE
 * prints each label first. */
typedef bool (*golden_case_fn)(const golden_case *c);
typedef const char *(*golden_known_fn)(const char *label);
void golden_run_file(const char *path, golden_case_fn run, golden_known_fn known, bool known_only, int *ran);

/* The golden files of one test file: pattern has one %s, filled with each
 * group name ("goldens/ops_%s.bin"). */
typedef struct { const char *pattern; const char *const *groups; int ngroups; } golden_set;
/* golden_run_file on the file of group. */
void golden_run_group(const golden_set *s, const char *group, golden_case_fn run, golden_known_fn known, bool known_only, int *ran);
/* Runs the known-bug cases of every group; fails unless exactly `listed`
 * (the length of the test file's known_bugs[]) exist. */
void golden_run_known_bugs(const golden_set *s, golden_case_fn run, golden_known_fn known, int listed);
/* Every case's op names an entry of a dispatch table and every entry is
 * used. The table holds n entries of entry_size bytes, each beginning with
 * its `const char *name`. each(c, path, ctx), when given, checks a case
 * further. Returns the number of cases. */
typedef void (*golden_each_fn)(const golden_case *c, const char *path, void *ctx);
int golden_check_dispatch(const golden_set *s, const void *table, size_t entry_size, int n, golden_each_fn each, void *ctx);
#endif
