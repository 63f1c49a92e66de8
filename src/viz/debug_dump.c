/* debug_dump.c: what DEBUG=5..7 print besides the engine's own lines: the
 * linearized program of a kernel (one instruction a line, sources by
 * instruction number) and the disassembly of a compiled CPU kernel. */
#include <dlfcn.h>
#include "viz/viz.h"
#include "codegen/codegen.h"
#include "runtime/device.h"
#include "util/settings.h"

static const char *kind_name(linst_kind k) {
  switch (k) {
  case LI_LOOP: return "LOOP";
  case LI_ENDLOOP: return "ENDLOOP";
  case LI_ACC_INIT: return "ACC_INIT";
  case LI_ACC_UPDATE: return "ACC_UPDATE";
  default: return "";
  }
}

/*    3 ALU   MUL        int        [1, 2]
 * sources are instruction numbers; values never emitted on their own
 * (constants) are written inline. */
char *viz_linear_text(uop *ast) {
  strbuf b = { 0 };
  uop_pool_push();
  lprogram p = { 0 };
  if (linearize(ast, &p) < 0) {
    sb_printf(&b, "(linearize failed: %s)\n", tg_error());
  } else {
    ptrmap at = { 0 };
    for (int i = 0; i < p.n; i++) {
      linst *li = &p.v[i];
      uop *u = li->u;
      char dts[32], arg[96];
      dt_str(u->dtype, dts, (int)sizeof dts);
      uop_arg_str(u, arg, (int)sizeof arg);
      sb_printf(&b, "%4d %-10s %-13s %-12s [", i, li->kind == LI_OP ? "" : kind_name(li->kind), uop_op_name(u->op), dts);
      if (li->kind == LI_OP || li->kind == LI_LOOP || li->kind == LI_ACC_INIT)
        for (int s = 0; s < u->nsrc; s++) {
          void *n = pm_get(&at, u->src[s]);
          if (n) sb_printf(&b, s ? ", %d" : "%d", (int)(intptr_t)n - 1);
          else {
            char a[64];
            uop_arg_str(u->src[s], a, (int)sizeof a);
            sb_printf(&b, s ? ", %s%s%s" : "%s%s%s", u->src[s]->op == OP_CONST ? "" : uop_op_name(u->src[s]->op), u->src[s]->op == OP_CONST || !a[0] ? "" : " ", a);
          }
        }
      sb_printf(&b, "] %s\n", arg);
      if ((li->kind == LI_OP || li->kind == LI_LOOP || li->kind == LI_ACC_INIT) && !pm_get(&at, u)) pm_put(&at, u, (void *)(intptr_t)(i + 1));
    }
    pm_free(&at);
  }
  lprogram_free(&p);
  uop_pool_pop();
  return b.s ? b.s : tg_xstrdup("");
}

/* DEBUG=7. The CPU kernel's function lives in a shared object that dladdr
 * names; objdump (or $OBJDUMP) disassembles just that symbol. */
void viz_debug_disasm(const struct tg_program *p, const char *name) {
  if (!p || !p->fn) {
    fprintf(stderr, "DEBUG=7: kernel %s on %s: no disassembly (only CPU kernels are disassembled, from their shared object)\n", name,
            p && p->dev ? p->dev->name : "?");
    return;
  }
  void *addr;
  memcpy(&addr, &p->fn, sizeof addr);
  Dl_info info;
  if (!dladdr(addr, &info) || !info.dli_fname) { fprintf(stderr, "DEBUG=7: kernel %s: cannot find its shared object\n", name); return; }
  const char *tool = setting_str(SET_OBJDUMP);
  if (!tool || !*tool) tool = "objdump";
  for (const char *s = info.dli_fname; *s; s++)
    if (*s == '\'') { fprintf(stderr, "DEBUG=7: kernel %s: the path %s has a quote; not disassembled\n", name, info.dli_fname); return; }
  for (const char *s = name; *s; s++)
    if (!(*s == '_' || (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z'))) return;
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "%s -d --no-show-raw-insn --disassemble='%s' '%s' 2>&1", tool, name, info.dli_fname);
  FILE *f = popen(cmd, "r");
  if (!f) { fprintf(stderr, "DEBUG=7: cannot run %s\n", tool); return; }
  fprintf(stderr, "kernel %s disassembly (%s):\n", name, info.dli_fname);
  char line[1024];
  bool body = false;
  while (fgets(line, sizeof line, f)) {
    if (!body && !strstr(line, ">:")) continue;   /* skip objdump's file header */
    body = true;
    fputs(line, stderr);
  }
  int st = pclose(f);
  if (!body) fprintf(stderr, "  (%s printed nothing for %s%s)\n", tool, name, st ? "; is binutils installed?" : "");
}
