/* tg.c: the `tg` command: dispatches to the subcommands in tools/cmd_*.c. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tg.h"
#include "commands.h"

static int cmd_version(int argc, char **argv) {
  (void)argc; (void)argv;
  printf("tg 0.1.0\n");
  return 0;
}

static const tg_command commands[] = {
  { "version", cmd_version, "print the version" },
  { "devices", cmd_devices, "list the devices present (CPU, CL, CUDA ...) and why others are absent" },
  { "env", cmd_env, "[--markdown]: every environment variable tg reads, its value now, default and meaning" },
  { "selftest", cmd_selftest, "build a small graph, compile it and check the result" },
  { "run", cmd_run, "continue a prompt with a GGUF model" },
  { "chat", cmd_chat, "chat with a GGUF model interactively" },
  { "serve", cmd_serve, "an OpenAI-compatible HTTP server for a GGUF model" },
  { "bench-llm", cmd_bench_llm, "prompt and decode speed of a GGUF model (tok/s)" },
  { "gguf", cmd_gguf, "print a GGUF file's header, metadata and tensor table" },
  { "quantize", cmd_quantize, "IN.gguf OUT.gguf TYPE: quantize a model's weights (as llama-quantize)" },
  { "llm-init", cmd_llm_init, "OUT.gguf [opts]: write a random-weight llama GGUF" },
  { "perplexity", cmd_perplexity, "-m MODEL.gguf -f TEXT: perplexity of a text (as llama-perplexity)" },
  { "tokenize", cmd_tokenize, "print the tokens of a text with a GGUF file's tokenizer" },
  { "export", cmd_export, "-m MODEL.gguf -o OUT.c: the decode step as one dependency-free C file" },
  { "viz", cmd_viz, "[DIR] [--top N] [-s NAME] [--chrome OUT.json] [--serve]: read a VIZ=-1 trace (rewrites, kernels, profile; --serve: a web page)" },
};
#define N_COMMANDS ((int)(sizeof commands / sizeof commands[0]))

static int usage(void) {
  fprintf(stderr, "usage: tg <command> [args]\ncommands:\n");
  for (int i = 0; i < N_COMMANDS; i++) fprintf(stderr, "  %-14s %s\n", commands[i].name, commands[i].summary);
  fprintf(stderr, "environment: DEBUG=2 prints each kernel run, DEBUG=4 its source (3 AST, 5/6 linearized, 7 disassembly); VIZ=-1 records a trace for `tg viz` (VIZ=1 also serves its web page at exit); TG_DEVICE=CL (or CUDA, NULL ...) picks the device\n");
  return 2;
}

void cmd_exit_now(int rc) {
#if defined(__SANITIZE_ADDRESS__)
  (void)rc;
#else
  exit(rc);   /* (stdio is flushed, atexit handlers run: VIZ's page) */
#endif
}

int main(int argc, char **argv) {
  /* Building and scheduling a model's graphs makes and frees many blocks of
   * a few hundred KB (node tables, serialized structure): kept in the heap
   * rather than mapped and unmapped each time, and the heap not trimmed
   * between them, their pages are faulted in once, not at every use
   * (about 10,000 of a 125M model's first token's 28,000 faults). */
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) return usage();
  for (int i = 0; i < N_COMMANDS; i++)
    if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "tg: unknown command '%s'\n", argv[1]);
  return usage();
}
