/* jit_export.c: a captured JIT step as one dependency-free C11 file (the
 * seeds' export_model, for C): its kernels' sources, its memory plan, and
 * a PREFIX_run() that launches the kernels in order on the caller's inputs
 * and outputs. Fixed memory (weights, state such as a KV cache, results of
 * pruned kernels) goes to a side file that PREFIX_init() reads. See
 * docs/jit.md. */
#include <ctype.h>
#include "jit/jit_internal.h"

#define EXPORT_MAGIC "TGEXPRT1"

/* the identifier the file's functions start with: the file's base name,
 * letters, digits and _ only, not starting with a digit */
static void prefix_of(const char *path, char *out, size_t n) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t k = 0;
  for (const char *p = base; *p && *p != '.' && k + 1 < n; p++) out[k++] = isalnum((unsigned char)*p) ? *p : '_';
  out[k] = 0;
  if (!k || isdigit((unsigned char)out[0])) snprintf(out, n, "model");
}

static char *side_path(const char *path) {
  size_t n = strlen(path);
  char *s = tg_xmalloc(n + 5);
  memcpy(s, path, n + 1);
  if (n > 2 && !strcmp(s + n - 2, ".c")) s[n - 2] = 0;
  strcat(s, ".bin");
  return s;
}

/* The kernel function's name in its source: "void NAME(void **bufs". */
static const char *kernel_fn(const char *src, size_t *len) {
  for (const char *p = strstr(src, "void "); p; p = strstr(p + 1, "void ")) {
    if (p != src && p[-1] != '\n') continue;
    const char *q = p + 5, *e = q;
    while (isalnum((unsigned char)*e) || *e == '_') e++;
    if (e > q && !strncmp(e, "(void **bufs", 12)) { *len = (size_t)(e - q); return q; }
  }
  return NULL;
}

typedef struct {
  VEC(tg_buffer *) fixed;
  VEC(const tg_program *) progs;
  VEC(const char *) vars;
} export_plan;

static int index_of_ptr(void *const *v, int n, const void *p) {
  for (int i = 0; i < n; i++) if (v[i] == p) return i;
  return -1;
}
static int var_index(export_plan *e, const char *name) {
  for (int i = 0; i < e->vars.n; i++) if (!strcmp(e->vars.v[i], name)) return i;
  VEC_PUSH(e->vars, name);
  return e->vars.n - 1;
}

static int check_exportable(const tg_jit *j) {
  if (!j) return tg_seterr("tg_jit_export: j is NULL");
  if (j->calls < 2 || !j->args) return tg_seterr("tg_jit_export: the JIT has not captured its step yet (call it twice first)");
  for (int k = 0; k < j->cap.l.n; k++) {
    const linear_call *ck = &j->cap.l.v[k];
    if (!ck->prog) return tg_seterr("tg_jit_export: the step copies between devices (%s); only a step that runs on the CPU can be exported", ck->name);
    if (strncmp(ck->dev->name, "CPU", 3)) return tg_seterr("tg_jit_export: kernel %s runs on %s; only CPU kernels can be exported as C", ck->name, ck->dev->name);
    if (!ck->src) return tg_seterr("internal: tg_jit_export: kernel %s has no source", ck->name);
    if (ck->nbufs > 256 || ck->nvars > 32) return tg_seterr("tg_jit_export: kernel %s has too many buffers", ck->name);
  }
  return 0;
}

static void write_header(FILE *f, const tg_jit *j, const export_plan *e, const char *px, const char *side, int64_t fixed_bytes) {
  const char *base = strrchr(side, '/');
  base = base ? base + 1 : side;
  fprintf(f, "/* %s.c: a tg step exported by tg_jit_export: %d kernel launches (%d programs),\n"
             " * %d inputs, %d outputs, %d symbolic variables, %lld bytes of fixed memory\n"
             " * (weights and state, in %s), %lld bytes of planned intermediates.\n"
             " * Dependency-free C11; compile with `cc -O2 -c %s.c` and link with -lm.\n *\n"
             " *   int  %s_init(const char *side_file);   0, or -1 (missing, or not this step's)\n"
             " *   void %s_run(void *const *inputs, void *const *outputs, const long long *vars);\n"
             " *   void %s_free(void);\n *\n"
             " * inputs and outputs are contiguous host memory of %s_input_bytes and\n"
             " * %s_output_bytes; vars are the values of %s_var_names, in order. The\n"
             " * fixed memory keeps its state between runs (a KV cache), one model per\n"
             " * process. */\n",
          px, j->cap.l.n, e->progs.n, j->nin, j->nout, e->vars.n, (long long)fixed_bytes, base, (long long)j->planned_bytes,
          px, px, px, px, px, px, px);
  fputs("#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n", f);
}

static void write_tables(FILE *f, const tg_jit *j, const export_plan *e, const char *px) {
  fprintf(f, "const int %s_num_inputs = %d, %s_num_outputs = %d, %s_num_vars = %d;\n", px, j->nin, px, j->nout, px, e->vars.n);
  const tensor_sig *sigs[2] = { j->in_sig, j->out_sig };
  const int ns[2] = { j->nin, j->nout };
  const char *what[2] = { "input", "output" };
  for (int w = 0; w < 2; w++) {
    fprintf(f, "const long long %s_%s_bytes[%d] = {", px, what[w], ns[w] ? ns[w] : 1);
    for (int i = 0; i < ns[w]; i++) {
      int64_t numel = 1;
      for (int d = 0; d < sigs[w][i].shape.ndim; d++) numel *= sigs[w][i].shape.d[d];
      fprintf(f, "%s%lld", i ? ", " : " ", (long long)(numel * tg_dtype_size(sigs[w][i].dtype)));
    }
    fprintf(f, " };\nconst char *const %s_%s_dtypes[%d] = {", px, what[w], ns[w] ? ns[w] : 1);
    for (int i = 0; i < ns[w]; i++) fprintf(f, "%s\"%s\"", i ? ", " : " ", tg_dtype_name(sigs[w][i].dtype));
    fputs(" };\n", f);
  }
  fprintf(f, "const char *const %s_var_names[%d] = {", px, e->vars.n ? e->vars.n : 1);
  for (int i = 0; i < e->vars.n; i++) fprintf(f, "%s\"%s\"", i ? ", " : " ", e->vars.v[i]);
  fprintf(f, "%s };\n\n", e->vars.n ? "" : " 0");
  fprintf(f, "static void *%s_fixed[%d], *%s_slot[%d];\n", px, e->fixed.n ? e->fixed.n : 1, px, j->nslots ? j->nslots : 1);
  fprintf(f, "static const unsigned long long %s_fixed_bytes[%d] = {", px, e->fixed.n ? e->fixed.n : 1);
  for (int i = 0; i < e->fixed.n; i++) fprintf(f, "%s%zuull", i ? ", " : " ", e->fixed.v[i]->nbytes);
  fprintf(f, "%s };\nstatic const unsigned long long %s_slot_bytes[%d] = {", e->fixed.n ? "" : " 0", px, j->nslots ? j->nslots : 1);
  for (int i = 0; i < j->nslots; i++) fprintf(f, "%s%zuull", i ? ", " : " ", j->slot_bytes[i]);
  fprintf(f, "%s };\n\n", j->nslots ? "" : " 0");
}

static void write_init(FILE *f, const tg_jit *j, const export_plan *e, const char *px) {
  fprintf(f,
    "static void *%s_alloc(unsigned long long n) {\n"
    "  void *p = aligned_alloc(64, (size_t)((n + 63) / 64 * 64 + 64));\n"
    "  if (p) memset(p, 0, (size_t)((n + 63) / 64 * 64 + 64));\n"
    "  return p;\n}\n\n"
    "void %s_free(void) {\n"
    "  for (int i = 0; i < %d; i++) { free(%s_fixed[i]); %s_fixed[i] = 0; }\n"
    "  for (int i = 0; i < %d; i++) { free(%s_slot[i]); %s_slot[i] = 0; }\n}\n\n",
    px, px, e->fixed.n, px, px, j->nslots, px, px);
  fprintf(f,
    "int %s_init(const char *side_file) {\n"
    "  FILE *f = fopen(side_file, \"rb\");\n"
    "  if (!f) return -1;\n"
    "  char magic[8];\n  unsigned long long n = 0;\n"
    "  int ok = fread(magic, 1, 8, f) == 8 && !memcmp(magic, \"%s\", 8) && fread(&n, sizeof n, 1, f) == 1 && n == %dull;\n"
    "  for (int i = 0; ok && i < %d; i++) {\n"
    "    unsigned long long b = 0;\n"
    "    ok = fread(&b, sizeof b, 1, f) == 1 && b == %s_fixed_bytes[i] && (%s_fixed[i] = %s_alloc(b)) != 0 && fread(%s_fixed[i], 1, (size_t)b, f) == b;\n"
    "  }\n"
    "  for (int i = 0; ok && i < %d; i++) ok = (%s_slot[i] = %s_alloc(%s_slot_bytes[i])) != 0;\n"
    "  fclose(f);\n"
    "  if (!ok) { %s_free(); return -1; }\n"
    "  return 0;\n}\n\n",
    px, EXPORT_MAGIC, e->fixed.n, e->fixed.n, px, px, px, px, j->nslots, px, px, px, px);
}

static void write_run(FILE *f, const tg_jit *j, export_plan *e, const char *px) {
  int maxb = 1, maxv = 1;
  for (int k = 0; k < j->cap.l.n; k++) {
    if (j->cap.l.v[k].nbufs > maxb) maxb = j->cap.l.v[k].nbufs;
    if (j->cap.l.v[k].nvars > maxv) maxv = j->cap.l.v[k].nvars;
  }
  fprintf(f, "void %s_run(void *const *inputs, void *const *outputs, const long long *vars) {\n"
             "  void *b[%d];\n  long long v[%d];\n  (void)inputs; (void)outputs; (void)vars; (void)v;\n", px, maxb, maxv);
  for (int k = 0; k < j->cap.l.n; k++) {
    const linear_call *ck = &j->cap.l.v[k];
    fprintf(f, "  /* %s */\n ", ck->name);
    for (int a = 0; a < ck->nbufs; a++) {
      const jit_arg *ja = &j->args[k][a];
      if (ja->kind == ARG_INPUT) fprintf(f, " b[%d] = inputs[%d];", a, ja->index);
      else if (ja->kind == ARG_OUTPUT) fprintf(f, " b[%d] = outputs[%d];", a, ja->index);
      else if (ja->kind == ARG_SLOT) fprintf(f, " b[%d] = %s_slot[%d];", a, px, ja->index);
      else fprintf(f, " b[%d] = %s_fixed[%d];", a, px, index_of_ptr((void *const *)e->fixed.v, e->fixed.n, ck->bufs[a]));
    }
    for (int i = 0; i < ck->nvars; i++) fprintf(f, " v[%d] = vars[%d];", i, var_index(e, ck->varnames[i]));
    fprintf(f, "\n  %s_k%d(b, v, 0, 1);\n", px, index_of_ptr((void *const *)e->progs.v, e->progs.n, ck->prog));
  }
  fputs("}\n", f);
}

static int write_side(const char *path, const export_plan *e) {
  FILE *f = fopen(path, "wb");
  if (!f) return tg_seterr("tg_jit_export: cannot write %s", path);
  unsigned long long n = (unsigned long long)e->fixed.n;
  bool ok = fwrite(EXPORT_MAGIC, 1, 8, f) == 8 && fwrite(&n, sizeof n, 1, f) == 1;
  void *tmp = NULL;
  for (int i = 0; ok && i < e->fixed.n; i++) {
    tg_buffer *b = e->fixed.v[i];
    unsigned long long nb = b->nbytes;
    tmp = tg_xrealloc(tmp, b->nbytes ? b->nbytes : 1);
    /* memory never written (a fresh state buffer): zeros */
    if (b->ptr) { if (buffer_copyout(b, tmp, b->nbytes) < 0) { ok = false; break; } }
    else memset(tmp, 0, b->nbytes);
    ok = fwrite(&nb, sizeof nb, 1, f) == 1 && fwrite(tmp, 1, b->nbytes, f) == b->nbytes;
  }
  free(tmp);
  if (fclose(f) != 0) ok = false;
  if (!ok) return tg_error()[0] ? -1 : tg_seterr("tg_jit_export: writing %s failed", path);
  return 0;
}

int tg_jit_export(const tg_jit *j, const char *path) {
  if (!path) return tg_seterr("tg_jit_export: path is NULL");
  if (check_exportable(j) < 0) return -1;
  char px[64];
  prefix_of(path, px, sizeof px);
  export_plan e = { 0 };
  int64_t fixed_bytes = 0;
  for (int k = 0; k < j->cap.l.n; k++) {
    const linear_call *ck = &j->cap.l.v[k];
    if (index_of_ptr((void *const *)e.progs.v, e.progs.n, ck->prog) < 0) VEC_PUSH(e.progs, ck->prog);
    for (int i = 0; i < ck->nvars; i++) var_index(&e, ck->varnames[i]);
    for (int a = 0; a < ck->nbufs; a++)
      if (j->args[k][a].kind == ARG_FIXED && index_of_ptr((void *const *)e.fixed.v, e.fixed.n, ck->bufs[a]) < 0) {
        VEC_PUSH(e.fixed, ck->bufs[a]);
        fixed_bytes += (int64_t)ck->bufs[a]->nbytes;
      }
  }
  char *side = side_path(path);
  int rc = -1;
  FILE *f = fopen(path, "w");
  if (!f) { tg_seterr("tg_jit_export: cannot write %s", path); goto done; }
  write_header(f, j, &e, px, side, fixed_bytes);
  /* each program once, its function renamed PREFIX_kN and made static */
  for (int p = 0; p < e.progs.n; p++) {
    const char *src = NULL;
    for (int k = 0; k < j->cap.l.n && !src; k++) if (j->cap.l.v[k].prog == e.progs.v[p]) src = j->cap.l.v[k].src;
    size_t len = 0;
    const char *fn = kernel_fn(src, &len);
    if (!fn) { fclose(f); tg_seterr("internal: tg_jit_export: no kernel function in the source of %s", e.progs.v[p]->name); goto done; }
    fprintf(f, "/* ---- program %d: %.*s */\n", p, (int)len, fn);
    fwrite(src, 1, (size_t)(fn - 5 - src), f);
    fprintf(f, "static void %s_k%d%s\n", px, p, fn + len);
  }
  write_tables(f, j, &e, px);
  write_init(f, j, &e, px);
  write_run(f, j, &e, px);
  if (fclose(f) != 0) { tg_seterr("tg_jit_export: writing %s failed", path); goto done; }
  rc = write_side(side, &e);
done:
  free(side);
  VEC_FREE(e.fixed); VEC_FREE(e.progs); VEC_FREE(e.vars);
  return rc;
}
