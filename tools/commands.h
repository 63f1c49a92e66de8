/* commands.h: the `tg` subcommands. Each lives in tools/cmd_<name>.c and
 * takes the arguments after its name (argv[0] is the command name). It
 * returns the process exit status: 0 ok, 1 failure, 2 usage error. */
#ifndef TG_TOOLS_COMMANDS_H
#define TG_TOOLS_COMMANDS_H

typedef struct {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
} tg_command;

int cmd_devices(int argc, char **argv);
int cmd_selftest(int argc, char **argv);
int cmd_bench_llm(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_gguf(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_llm_init(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_viz(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_env(int argc, char **argv);

/* A command that is done with a loaded model exits with status rc here,
 * leaving the model's memory to the end of the process (freeing its graphs
 * is tens of milliseconds of a short `tg run`); in sanitizer builds, whose
 * leak check wants everything freed, it returns and the caller frees. */
void cmd_exit_now(int rc);

#endif
