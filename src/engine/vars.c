/* vars.c: see vars.h. */
#include <ctype.h>
#include <pthread.h>
#include "engine/vars.h"
#include "util/util.h"

typedef struct { char *name; int64_t min, max, value; bool bound; } var_entry;
static VEC(var_entry) table;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static var_entry *find(const char *name) {
  for (int i = 0; i < table.n; i++) if (!strcmp(table.v[i].name, name)) return &table.v[i];
  return NULL;
}

int vars_declare(const char *name, int64_t min, int64_t max) {
  if (!name || !(isalpha((unsigned char)name[0]) || name[0] == '_')) return tg_seterr("tg_variable: '%s' is not a name", name ? name : "(null)");
  for (const char *p = name; *p; p++) if (!isalnum((unsigned char)*p) && *p != '_') return tg_seterr("tg_variable: '%s' is not a name", name);
  if (min > max) return tg_seterr("tg_variable: %s: min %lld > max %lld", name, (long long)min, (long long)max);
  pthread_mutex_lock(&lock);
  var_entry *e = find(name);
  int rc = 0;
  if (e && (e->min != min || e->max != max))
    rc = tg_seterr("tg_variable: %s was declared with range [%lld, %lld], not [%lld, %lld]", name, (long long)e->min, (long long)e->max, (long long)min, (long long)max);
  else if (!e) VEC_PUSH(table, ((var_entry){ tg_xstrdup(name), min, max, min, false }));
  pthread_mutex_unlock(&lock);
  return rc;
}

int vars_range(const char *name, int64_t *min, int64_t *max) {
  pthread_mutex_lock(&lock);
  var_entry *e = name ? find(name) : NULL;
  if (e) { *min = e->min; *max = e->max; }
  pthread_mutex_unlock(&lock);
  return e ? 0 : -1;
}

/* The error for binding e (NULL: unknown) to value, or 0. Lock held. */
static int check_value(const char *who, const char *name, const var_entry *e, int64_t value) {
  if (!e) return tg_seterr("%s: no variable named '%s'", who, name ? name : "(null)");
  if (value < e->min || value > e->max)
    return tg_seterr("%s: %s = %lld is outside its range [%lld, %lld]", who, name, (long long)value, (long long)e->min, (long long)e->max);
  return 0;
}

int tg_bind(const char *name, int64_t value) {
  pthread_mutex_lock(&lock);
  var_entry *e = name ? find(name) : NULL;
  int rc = check_value("tg_bind", name, e, value);
  if (rc == 0) { e->value = value; e->bound = true; }
  pthread_mutex_unlock(&lock);
  return rc;
}

int vars_check_given(const char *who, const var_values *given) {
  if (!given || given->n == 0) return 0;
  if (given->n < 0 || !given->names || !given->values) return tg_seterr("%s: %s", who, given->n < 0 ? "negative variable count" : "NULL variable names or values");
  pthread_mutex_lock(&lock);
  int rc = 0;
  for (int i = 0; i < given->n && rc == 0; i++) {
    const char *name = given->names[i];
    rc = check_value(who, name, name ? find(name) : NULL, given->values[i]);
    for (int k = 0; k < i && rc == 0; k++)
      if (!strcmp(given->names[k], name)) rc = tg_seterr("%s: variable '%s' given twice", who, name);
  }
  pthread_mutex_unlock(&lock);
  return rc;
}

int vars_values_given(const char *const *names, int n, int64_t *values, const var_values *given) {
  pthread_mutex_lock(&lock);
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    int g = given ? given->n - 1 : -1;
    while (g >= 0 && strcmp(given->names[g], names[i])) g--;
    var_entry *e = g >= 0 ? NULL : find(names[i]);
    if (g >= 0) values[i] = given->values[g];
    else if (!e || !e->bound) rc = tg_seterr("variable '%s' is not bound (tg_bind it, or give its value, before running)", names[i]);
    else values[i] = e->value;
  }
  pthread_mutex_unlock(&lock);
  return rc;
}

int vars_values(const char *const *names, int n, int64_t *values) { return vars_values_given(names, n, values, NULL); }
