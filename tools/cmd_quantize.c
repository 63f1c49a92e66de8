/* cmd_quantize.c: `tg quantize IN.gguf OUT.gguf TYPE` converts a model's
 * float weights to a ggml quantized type, like llama-quantize without an
 * importance matrix (src/quant/quantize_model.c). */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "tg.h"
#include "commands.h"
#include "io/ggml_types.h"
#include "quant/quantize.h"

static int usage(void) {
  fprintf(stderr, "usage: tg quantize [--pure] IN.gguf OUT.gguf TYPE\n"
                  "  TYPE: ");
  for (uint32_t t = 0; t < GGML_TYPE_COUNT; t++)
    if (quant_can_write(t) && quant_llama_ftype(t) >= 0) fprintf(stderr, "%s ", ggml_type_info(t)->name);
  fprintf(stderr, "\n  --pure: no output.weight -> Q6_K rule (every quantizable tensor gets TYPE)\n");
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
  int t = ggml_type_by_name(pos[2]);
  if (t < 0 || !quant_can_write((uint32_t)t) || quant_llama_ftype((uint32_t)t) < 0) {
    fprintf(stderr, "tg quantize: unknown or unsupported type '%s'\n", pos[2]);
    return usage();
  }
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  if (quant_model(pos[0], pos[1], (uint32_t)t, &o) < 0) {
    fprintf(stderr, "tg quantize: %s\n", tg_error());
    return 1;
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("wrote %s (%s) in %.2f s\n", pos[1], ggml_type_info((uint32_t)t)->name, (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9);
  return 0;
}
