/* uop_serial.c: see uop_serial.h. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include "uop/uop_serial.h"
#include "util/sha256.h"
#include "uop/ops.h"

/* " N" appended without printf: a kernel's key is thousands of these, and
 * it is built on every warm cache lookup */
static void put_int(strbuf *sb, int64_t v) {
  char buf[24], *e = buf + sizeof buf, *p = e;
  uint64_t m = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  do *--p = (char)('0' + m % 10); while (m /= 10);
  if (v < 0) *--p = '-';
  *--p = ' ';
  sb_append(sb, p, (size_t)(e - p));
}

bool uop_serialize_nodes(strbuf *sb, const uop_list *l, uop_arg_writer arg, void *ctx) {
  ptrmap num = { 0 };
  bool ok = true;
  for (int i = 0; i < l->n && ok; i++) {
    uop *u = l->v[i];
    pm_put(&num, u, (void *)(intptr_t)(i + 1));
    sb_printf(sb, "%d", (int)u->op);   /* the line's first number has no leading space */
    put_int(sb, u->dtype.bits), put_int(sb, u->nsrc);
    for (int s = 0; s < u->nsrc; s++) put_int(sb, (int)(intptr_t)pm_get(&num, u->src[s]) - 1);
    int own = arg ? arg(sb, u, ctx) : 0;
    if (own < 0) { ok = false; break; }
    if (!own) {
      put_int(sb, u->arg.kind);
      switch (u->arg.kind) {
      case ARG_INT: put_int(sb, u->arg.i); break;
      case ARG_FLOAT: sb_printf(sb, " %a", u->arg.f); break;
      case ARG_INTS:
        put_int(sb, u->arg.n);
        for (int k = 0; k < u->arg.n; k++) put_int(sb, u->arg.v[k]);
        break;
      case ARG_STR: sb_printf(sb, " %zu:", strlen(u->arg.s)); sb_puts(sb, u->arg.s); break;
      case ARG_NONE: break;
      default: ok = false; break;   /* ARG_PTR */
      }
    }
    sb_append(sb, "\n", 1);
  }
  pm_free(&num);
  return ok;
}

void uop_put_int(strbuf *sb, int64_t v) { put_int(sb, v); }

bool uop_serialize(strbuf *sb, uop *root) {
  uop_list l = uop_toposort(root);
  bool ok = uop_serialize_nodes(sb, &l, NULL, NULL);
  free(l.v);
  return ok;
}

/* ---- parsing: every number checked, every index bounded */

typedef struct { const char *p, *end; bool bad; } cursor;

static int64_t next_int(cursor *c) {
  while (c->p < c->end && *c->p == ' ') c->p++;
  if (c->p >= c->end || c->bad) { c->bad = true; return 0; }
  char buf[32];
  size_t k = 0;
  while (c->p < c->end && k < sizeof buf - 1 && (*c->p == '-' || (*c->p >= '0' && *c->p <= '9'))) buf[k++] = *c->p++;
  buf[k] = 0;
  char *e;
  errno = 0;
  long long v = strtoll(buf, &e, 10);
  if (!k || *e || errno) c->bad = true;
  return v;
}

static double next_float(cursor *c) {
  while (c->p < c->end && *c->p == ' ') c->p++;
  char buf[64];
  size_t k = 0;
  while (c->p < c->end && k < sizeof buf - 1 && *c->p != ' ' && *c->p != '\n') buf[k++] = *c->p++;
  buf[k] = 0;
  char *e;
  double v = strtod(buf, &e);
  if (!k || *e) c->bad = true;
  return v;
}

uop *uop_deserialize(const char *text, size_t n) {
  cursor c = { text, text + n, false };
  VEC(uop *) nodes = { 0 };
  int64_t stack_ints[16];
  while (c.p < c.end && !c.bad) {
    int64_t op = next_int(&c), bits = next_int(&c), nsrc = next_int(&c);
    if (c.bad || op < 0 || op >= OP_COUNT || bits < 0 || bits > UINT32_MAX || nsrc < 0 || nsrc > 4096) { c.bad = true; break; }
    uop *stack_src[8], **src = nsrc <= 8 ? stack_src : tg_xmalloc(sizeof(uop *) * (size_t)nsrc);
    for (int64_t s = 0; s < nsrc && !c.bad; s++) {
      int64_t ix = next_int(&c);
      if (ix < 0 || ix >= nodes.n) c.bad = true;
      else src[s] = nodes.v[ix];
    }
    int64_t kind = c.bad ? -1 : next_int(&c);
    uop_arg arg = arg_none();
    int64_t *ints = NULL;
    char *str = NULL;
    if (kind == ARG_INT) arg = arg_int(next_int(&c));
    else if (kind == ARG_FLOAT) arg = arg_float(next_float(&c));
    else if (kind == ARG_INTS) {
      int64_t m = next_int(&c);
      if (m < 0 || m > (1 << 20)) c.bad = true;
      else {
        ints = m <= 16 ? stack_ints : tg_xmalloc(sizeof(int64_t) * (size_t)m);
        for (int64_t k = 0; k < m && !c.bad; k++) ints[k] = next_int(&c);
        arg = arg_ints(ints, (int)m);
      }
    } else if (kind == ARG_STR) {
      int64_t len = next_int(&c);
      if (len < 0 || c.p >= c.end || *c.p != ':' || len > c.end - c.p - 1) c.bad = true;
      else {
        str = tg_xmalloc((size_t)len + 1);
        memcpy(str, c.p + 1, (size_t)len);
        str[len] = 0;
        c.p += 1 + len;
        arg = arg_str(str);
        if (strlen(str) != (size_t)len) c.bad = true;
      }
    } else if (kind != ARG_NONE) c.bad = true;
    if (c.p >= c.end || *c.p != '\n') c.bad = true;
    else c.p++;
    if (!c.bad) { dtype_t dt; dt.bits = (uint32_t)bits; VEC_PUSH(nodes, uop_new((uop_op)op, dt, src, (int)nsrc, arg)); }
    if (src != stack_src) free(src);
    if (ints != stack_ints) free(ints);
    free(str);
  }
  uop *root = !c.bad && nodes.n ? nodes.v[nodes.n - 1] : NULL;
  VEC_FREE(nodes);
  return root;
}

/* ---- digests, remembered per node */

static ptrmap digests;   /* uop* (retained) -> malloc'd 65 bytes */
static pthread_mutex_t digest_lock = PTHREAD_MUTEX_INITIALIZER;

void uop_text_digest_note(uop *root, const char digest[65]) {
  pthread_mutex_lock(&digest_lock);
  if (!pm_get(&digests, root)) {
    char *d = tg_xmalloc(65);
    memcpy(d, digest, 65);
    uop_retain(root);
    pm_put(&digests, root, d);
  }
  pthread_mutex_unlock(&digest_lock);
}

bool uop_text_digest(uop *root, char out[65]) {
  pthread_mutex_lock(&digest_lock);
  const char *known = pm_get(&digests, root);
  if (known) memcpy(out, known, 65);
  pthread_mutex_unlock(&digest_lock);
  if (known) return true;
  strbuf sb = { 0 };
  bool ok = uop_serialize(&sb, root);
  if (ok) {
    sha256_ctx c;
    uint8_t d[32];
    sha256_init(&c);
    sha256_update(&c, sb.s, sb.n);
    sha256_final(&c, d);
    sha256_hex(d, out);
    uop_text_digest_note(root, out);
  }
  sb_free(&sb);
  return ok;
}
