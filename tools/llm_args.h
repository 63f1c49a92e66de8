/* llm_args.h: the options tg run, tg chat and tg serve share: the model,
 * context size and sampling (parsed the same way everywhere). */
#ifndef TG_TOOLS_LLM_ARGS_H
#define TG_TOOLS_LLM_ARGS_H

#include <stdbool.h>
#include "tg.h"

typedef struct {
  const char *model;
  int n_ctx;
  int n_seq;              /* sequences the model holds (tg serve's slots; 0: one) */
  const char *cache_type; /* --cache-type (NULL: f16) */
  const char *devices;    /* --devices: tensor parallel over these ("CPU:0,CPU:1"; NULL: one device) */
  bool special;           /* generation shows control tokens' text (tg serve: tool-call markers) */
  int n_predict;          /* -n: tokens to generate (-1: until the end or the context fills) */
  tg_sampling sampling;
  bool seed_given;
  bool split_layers;      /* tg run --split layers: the layers split over mpirun's ranks */
} llm_args;

/* Defaults: llama.cpp's sampling, n_predict -1, n_ctx 0 (the model's). */
void llm_args_init(llm_args *a);
/* Consumes argv[*i] (and its value) when it is a shared option: returns 1,
 * 0 when it is not one, -1 (message printed) for a bad value. */
int llm_args_parse(llm_args *a, int argc, char **argv, int *i, const char *cmd);
/* The options' help lines. */
extern const char llm_args_help[];

/* --split layers: joins mpirun's world (tg_dist_init) and takes rank 0's
 * sampling seed, so every rank samples the same tokens; prints an error and
 * returns false. */
bool llm_args_split_start(llm_args *a, const char *cmd);

/* Loads the model and its tokenizer; prints an error and returns false.
 * With split_layers every rank fails when one cannot load its layers. */
bool llm_args_load(const llm_args *a, const char *cmd, tg_llm **m, tg_tokenizer **tok);

#endif
