/* cmd_quantize.c: `tg quantize IN.gguf OUT.gguf TYPE` converts a model's
 * float weights to a ggml quantized type, like llama-quantize without an
 * importance matrix (src/quant/quantize_model.c). */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "tg.h"
#include "commands.h"
#include "quant/quantize.h"

static int usage(void) {
  fprintf(stderr, "usage: tg quantize [--pure] IN.gguf OUT.gguf TYPE\n"
                  "  TYPE (llama-quantize's names; Q3_K, Q4_K, Q5_K mean the _M ones):\n   ");
  int n;
  const quant_ftype *ft = quant_ftypes(&n);
  for (int i = 0; i < n; i++) fprintf(stderr, " %s", ft[i].name);
  fprintf(stderr, "\n  --pure: every quantizable tensor gets TYPE's type (no output.weight rule, no mixtures)\n");
  return 2;
}

int cmd_quantize(int argc, char **argv) {
  quant_model_opts o = { false, stdout };
  const char *pos[3];
  int np = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--pure")) o.pure = true;
    else if (argv[i][0] == '-' && argv[i][1]) return usage();
    else if (np < 3) pos[np++] = argv[i];
    else return usage();
  }
  if (np != 3) return usage();
  const quant_ftype *ft = quant_ftype_by_name(pos[2]);
  if (!ft) {
    fprintf(stderr, "tg quantize: unknown or unsupported type '%s'\n", pos[2]);
    return usage();
  }
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  if (quant_model(pos[0], pos[1], ft, &o) < 0) {
    fprintf(stderr, "tg quantize: %s\n", tg_error());
    return 1;
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("wrote %s (%s) in %.2f s\n", pos[1], ft->name, (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9);
  return 0;
}
