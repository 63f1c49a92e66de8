/* llm_args.c: options shared by the LLM commands (see llm_args.h). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "llm_args.h"
#include "tg_dist.h"

const char llm_args_help[] =
  "  -m FILE          the model (GGUF)\n"
  "  -c N             context size in tokens (default: the model's, at most 4096;\n"
  "                   more than the model's own context length is an error)\n"
  "  --cache-type T   the KV cache's type: f16 (default), bf16, f32, q8_0\n"
  "  --devices D,D    tensor parallel: the model's heads and feed-forward split over\n"
  "                   these devices (CPU:0,CPU:1; TG_CPU_DEVICES=N for more CPUs)\n"
  "  -n N             tokens to generate (default: until the end or a full context)\n"
  "  --temp T         temperature (default 0.8; 0 = greedy)\n"
  "  --top-k K        (default 40; 0 = off)   --top-p P (default 0.95)   --min-p P (default 0.05)\n"
  "  --seed S         sampling seed (default: from the clock)\n";

void llm_args_init(llm_args *a) {
  memset(a, 0, sizeof *a);
  a->n_predict = -1;
  a->sampling = tg_sampling_default();
  a->sampling.seed = (uint64_t)time(NULL);
}

static bool number(const char *s, double *v) {
  char *end;
  *v = strtod(s, &end);
  return end != s && !*end && isfinite(*v);   /* "nan" and "inf" are no values here */
}

int llm_args_parse(llm_args *a, int argc, char **argv, int *i, const char *cmd) {
  static const char *const names[] = { "-m", "-c", "-n", "--temp", "--top-k", "--top-p", "--min-p", "--seed", "--cache-type", "--devices", NULL };
  const char *opt = argv[*i];
  int which = -1;
  for (int k = 0; names[k]; k++) if (!strcmp(opt, names[k])) which = k;
  if (which < 0) return 0;
  if (*i + 1 >= argc) { fprintf(stderr, "%s: %s needs a value\n", cmd, opt); return -1; }
  const char *val = argv[++*i];
  double v = 0;
  if (which == 8 || which == 9) {   /* tg_llm_load checks them: an unknown one fails the load (exit 1) */
    *(which == 8 ? &a->cache_type : &a->devices) = val;
    return 1;
  }
  if (which > 0 && !number(val, &v)) { fprintf(stderr, "%s: %s: '%s' is not a number\n", cmd, opt, val); return -1; }
  switch (which) {
  case 0: a->model = val; break;
  case 1: if (v < 1 || v > 1 << 20) goto range; a->n_ctx = (int)v; break;
  case 2: if (v < -1 || v > 1 << 30) goto range; a->n_predict = (int)v; break;
  case 3: if (v < 0 || v > 100) goto range; a->sampling.temperature = (float)v; break;
  case 4: if (v < 0) goto range; a->sampling.top_k = (int)v; break;
  case 5: if (v < 0 || v > 1) goto range; a->sampling.top_p = (float)v; break;
  case 6: if (v < 0 || v > 1) goto range; a->sampling.min_p = (float)v; break;
  case 7: if (v < 0) goto range; a->sampling.seed = (uint64_t)v; a->seed_given = true; break;
  }
  return 1;
range:
  fprintf(stderr, "%s: %s %s is out of range\n", cmd, opt, val);
  return -1;
}

bool llm_args_split_start(llm_args *a, const char *cmd) {
  if (tg_dist_init() < 0) { fprintf(stderr, "%s: --split layers: %s\n", cmd, tg_error()); return false; }
  if (tg_dist_broadcast_host(&a->sampling.seed, sizeof a->sampling.seed, 0) < 0) { fprintf(stderr, "%s: %s\n", cmd, tg_error()); return false; }
  a->split_layers = true;
  return true;
}

/* Whether every rank of a split model loaded (one that failed has said
 * why); called by every rank, whether it loaded or not. */
static bool all_ranks_loaded(bool loaded, const char *cmd) {
  int32_t failed = !loaded;
  if (tg_dist_allreduce_host(&failed, 1, TG_I32, TG_DIST_SUM) < 0) { fprintf(stderr, "%s: %s\n", cmd, tg_error()); return false; }
  if (loaded && failed) fprintf(stderr, "%s: rank %d: %d other rank(s) could not load their layers\n", cmd, tg_dist_rank(), (int)failed);
  return failed == 0;
}

/* The tokenizer loads on a thread of its own while the model loads (it
 * reads only the file's vocabulary: a few ms of a first token). */
typedef struct { const char *path; tg_tokenizer *tok; char err[1024]; } tokenizer_job;
static void *load_tokenizer(void *arg) {
  tokenizer_job *j = arg;
  j->tok = tg_tokenizer_load(j->path);
  if (!j->tok) snprintf(j->err, sizeof j->err, "%s", tg_error());
  return NULL;
}

bool llm_args_load(const llm_args *a, const char *cmd, tg_llm **m, tg_tokenizer **tok) {
  if (!a->model) { fprintf(stderr, "%s: no model: pass -m FILE.gguf\n", cmd); return false; }
  tokenizer_job job = { .path = a->model };
  pthread_t th;
  bool threaded = pthread_create(&th, NULL, load_tokenizer, &job) == 0;
  if (!threaded) load_tokenizer(&job);
  *m = tg_llm_load(a->model, &(tg_llm_opts){ .n_ctx = a->n_ctx, .cache_type = a->cache_type, .special = a->special, .n_seq = a->n_seq,
                                               .devices = a->devices, .split_layers = a->split_layers });
  if (threaded) pthread_join(th, NULL);
  *tok = job.tok;
  if (!*tok) fprintf(stderr, "%s: %s\n", cmd, job.err);   /* the tokenizer's error first, as when it loaded first */
  else if (!*m) fprintf(stderr, "%s: %s\n", cmd, tg_error());
  bool ok = *tok && *m;
  if (a->split_layers) ok = all_ranks_loaded(ok, cmd) && ok;   /* every rank takes part */
  if (!ok) {
    tg_llm_free(*m);
    *m = NULL;
    tg_tokenizer_free(*tok);
    *tok = NULL;
    return false;
  }
  /* the library takes any size (tests use small models with long caches);
   * a user asking for more than the model was made for gets told */
  int train = tg_llm_config_of(*m)->n_ctx_train;
  if (a->n_ctx > train) {
    fprintf(stderr, "%s: -c %d is longer than the model's context length (%d)\n", cmd, a->n_ctx, train);
    tg_llm_free(*m);
    tg_tokenizer_free(*tok);
    *m = NULL;
    return false;
  }
  return true;
}
