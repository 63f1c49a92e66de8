/* cmd_serve.c: `tg serve -m MODEL.gguf [--host 127.0.0.1] [--port 8080]`:
 * the OpenAI-compatible HTTP server (src/serve) on a model: chat prompts go
 * through the model's chat format (with the request's tools); up to
 * --parallel N requests (default 4) run at once on slots, each a sequence
 * of the model's cache, decoding in batched steps (serve_slots.c); -c is
 * the context of all slots together, as llama-server's. --api-key KEY (or
 * LLAMA_API_KEY, as llama-server) makes clients send it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cjson/cJSON.h>
#include "chat_session.h"
#include "commands.h"
#include "serve/serve.h"
#include "serve_slots.h"
#include "util/util.h"
#include "util/settings.h"

/* The backend's ctx is the slots, which know their session. */
static chat_session *session(void *ctx) { return ((serve_slots *)ctx)->s; }

static char *render_chat(void *ctx, const cJSON *messages, const cJSON *tools, const cJSON *kwargs, bool add_gen,
                         bool continue_final) {
  chat_session *s = session(ctx);
  char *m = cJSON_PrintUnformatted(messages), *t = tools ? cJSON_PrintUnformatted(tools) : NULL;
  char *k = kwargs ? cJSON_PrintUnformatted(kwargs) : NULL;
  char *prompt = m ? tg_chat_apply_json(s->tmpl, m, t, k, add_gen, continue_final) : NULL;
  if (!m) tg_seterr("could not print the messages");
  free(m);
  free(t);
  free(k);
  return prompt;
}

static int tokenize_text(void *ctx, const char *text, bool add_special, bool parse_special, int **tokens) {
  chat_session *s = session(ctx);
  int32_t *ids = NULL;
  int n = tg_tokenize(s->tok, text, strlen(text), add_special, parse_special, &ids);
  *tokens = (int *)ids;
  return n;
}

static char *detokenize(void *ctx, const int *tokens, int n) {
  chat_session *s = session(ctx);
  return tg_detokenize(s->tok, (const int32_t *)tokens, n, false, true, NULL);
}

static int embed(void *ctx, const int *tokens, int n, float *out) {
  chat_session *s = session(ctx);
  return tg_llm_embed(s->model, (const int32_t *)tokens, n, out);
}

static int generate(void *ctx, const int *prompt, int n_prompt, const serve_sampling *ss, int max_tokens, serve_emit_fn emit, void *u,
                    int *n_out, bool *hit_eos) {
  chat_session *s = session(ctx);
  tg_sampling p = { .temperature = ss->temperature, .top_k = ss->top_k, .top_p = ss->top_p, .min_p = ss->min_p,
                    .seed = ss->has_seed ? ss->seed : (uint64_t)time(NULL) ^ (uint64_t)clock() };
  tg_sampler *smp = tg_sampler_new(&p);
  tg_grammar *g = ss->grammar ? tg_grammar_new(ss->grammar, strlen(ss->grammar)) : NULL;
  if (!smp || (ss->grammar && (!g || tg_sampler_set_grammar(smp, g, s->tok)))) {
    tg_sampler_free(smp);
    tg_grammar_free(g);
    return -1;
  }
  tg_gen_stats st = { 0 };
  int rc = tg_llm_generate(s->model, s->tok, (const int32_t *)prompt, n_prompt, max_tokens, smp, s->end_ids, s->n_end, emit, u, &st);
  tg_sampler_free(smp);
  tg_grammar_free(g);
  *n_out = st.n_generated + (st.hit_eog ? 1 : 0);
  *hit_eos = st.hit_eog;
  return rc;
}

int cmd_serve(int argc, char **argv) {
  llm_args a;
  llm_args_init(&a);
  a.special = true;   /* the tool-call formats' control-token markers must reach the reply parser */
  const char *host = "127.0.0.1", *alias = NULL, *api_key = setting_str(SET_LLAMA_API_KEY);
  int port = SERVE_DEFAULT_PORT, timeout = 0, per_ip = 0, parallel = 4, max_queue = 0;
  bool warmup = true;
  for (int i = 1; i < argc; i++) {
    int r = llm_args_parse(&a, argc, argv, &i, "tg serve");
    if (r < 0) return 2;
    if (r > 0) continue;
    if (!strcmp(argv[i], "--host") && i + 1 < argc) host = argv[++i];
    else if (!strcmp(argv[i], "--port") && i + 1 < argc) port = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--alias") && i + 1 < argc) alias = argv[++i];
    else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) timeout = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--max-conns-per-ip") && i + 1 < argc) per_ip = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--api-key") && i + 1 < argc) api_key = argv[++i];
    else if ((!strcmp(argv[i], "--parallel") || !strcmp(argv[i], "-np")) && i + 1 < argc) parallel = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--max-queue") && i + 1 < argc) max_queue = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--no-warmup")) warmup = false;
    else {
      fprintf(stderr, "tg serve: unknown argument '%s'\nusage: tg serve -m MODEL.gguf [--host 127.0.0.1] [--port %d] [--alias NAME] [-c CTX] [--timeout S] [--max-conns-per-ip N] [--api-key KEY] [--parallel N] [--max-queue N] [--no-warmup]\n",
              argv[i], SERVE_DEFAULT_PORT);
      return 2;
    }
  }
  if (port < 0 || port > 65535) { fprintf(stderr, "tg serve: port %d is out of range\n", port); return 2; }
  if (timeout < 0 || per_ip < 0 || max_queue < 0) { fprintf(stderr, "tg serve: --timeout, --max-conns-per-ip and --max-queue must not be negative\n"); return 2; }
  if (parallel < 1 || parallel > SERVE_MAX_SLOTS) { fprintf(stderr, "tg serve: --parallel %d is out of range (1 to %d)\n", parallel, SERVE_MAX_SLOTS); return 2; }
  if (a.n_ctx > 0) {   /* -c is shared by the slots */
    if (a.n_ctx / parallel < 8) { fprintf(stderr, "tg serve: -c %d leaves fewer than 8 positions to each of %d slots\n", a.n_ctx, parallel); return 2; }
    a.n_ctx /= parallel;
  }
  a.n_seq = parallel;
  chat_session s;
  if (!chat_session_open(&s, &a, "tg serve")) return 1;
  serve_slots ss;
  serve_slots_init(&ss, &s, parallel);
  if (warmup && parallel > 1) {   /* as llama-server's warm-up: the batched steps' kernels compiled before the first request */
    fprintf(stderr, "tg serve: warming up the batched decode of %d slots\n", parallel);
    if (serve_slots_warmup(&ss) < 0) {
      fprintf(stderr, "tg serve: warm-up failed: %s\n", tg_error());
      serve_slots_free(&ss);
      chat_session_close(&s);
      return 1;
    }
  }
  const char *slash = strrchr(a.model, '/');
  serve_backend b = { .ctx = &ss, .model_id = alias ? alias : slash ? slash + 1 : a.model, .n_ctx = tg_llm_config_of(s.model)->n_ctx,
                      .chat_template = s.template_text, .render_chat = render_chat, .tokenize_text = tokenize_text,
                      .generate = generate, .detokenize = detokenize, .embed = embed,
                      .n_embd = tg_llm_config_of(s.model)->dim, .n_slots = parallel,
                      .slot_cached = serve_slots_cached, .slot_begin = serve_slots_begin, .slot_step = serve_slots_step,
                      .slot_end = serve_slots_end, .slot_embed = serve_slots_embed };
  int rc = serve_run(&(serve_options){ .host = host, .port = port, .timeout_s = (unsigned)timeout,
                                       .max_conns_per_ip = (unsigned)per_ip, .api_key = api_key, .max_queue = max_queue }, &b);
  serve_slots_free(&ss);
  chat_session_close(&s);
  return rc == 0 ? 0 : 1;
}
