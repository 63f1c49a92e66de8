/* serve.h: the OpenAI-compatible HTTP server behind `tg serve`, written
 * against an abstract model backend.
 *
 * A backend is a table of three functions plus its context. The server calls
 * them from ONE worker thread, one request at a time, so a backend needs no
 * locking; HTTP requests wait in a FIFO queue for that worker. Everything else
 * (JSON, validation, stop strings, streaming, usage counts, finish reasons) is
 * the server's job. See docs/serve.md. */
#ifndef TG_SERVE_H
#define TG_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

/* Sampling parameters of one request, already validated. Defaults when the
 * request leaves them out: temperature 1, top_p 1, min_p 0, top_k 0 (off);
 * has_seed false means "pick any seed". temperature 0 means greedy.
 * grammar: the backend samples only tokens it allows (tg_sampler_set_grammar). */
typedef struct {
  float temperature, top_p, min_p;
  int top_k;
  uint64_t seed;
  bool has_seed;
  const char *grammar;    /* GBNF that constrains the output (structured output), or NULL */
} serve_sampling;

/* Receives one decoded piece of generated text (not NUL-terminated; it may end
 * inside a UTF-8 character, the server reassembles). Returns false when the
 * backend must stop generating now: the client left, a stop string matched,
 * or the server is shutting down. */
typedef bool (*serve_emit_fn)(void *u, const char *piece, size_t len);

typedef struct serve_backend {
  void *ctx;              /* passed back to every function */
  const char *model_id;   /* the "model" the API reports, e.g. the file's base name */
  int n_ctx;              /* context length: prompt + generated tokens must fit */

  /* Renders OpenAI chat messages through the model's chat template and
   * tokenizes the result into a malloc'd *tokens. messages is a cJSON array
   * of {"role": string, "content": string} objects (the server flattens
   * content-part arrays to one string and validates roles). continue_final:
   * the last message is an assistant message the model must continue (a
   * prefill), so no new assistant turn is opened and the turn is not closed.
   * Otherwise the rendered prompt ends with the opening of an assistant
   * turn. Returns the token count, or -1 with tg_seterr. */
  int (*tokenize_chat)(void *ctx, const cJSON *messages, bool continue_final, int **tokens);

  /* Tokenizes a raw prompt for /v1/completions (adding BOS if the model wants
   * one) into a malloc'd *tokens. Returns the count, or -1 with tg_seterr. */
  int (*tokenize_text)(void *ctx, const char *prompt, int **tokens);

  /* Generates at most max_tokens tokens after the prompt (the server ensures
   * n_prompt + max_tokens <= n_ctx), calling emit with each token's text.
   * Stops by itself at the model's end-of-turn/end-of-text tokens (their text
   * is not emitted) and when emit returns false. *n_out: tokens generated
   * (an end token counts); *hit_eos: it stopped on an end token.
   * Returns 0, or -1 with tg_seterr. */
  int (*generate)(void *ctx, const int *prompt, int n_prompt, const serve_sampling *s, int max_tokens,
                  serve_emit_fn emit, void *u, int *n_out, bool *hit_eos);
} serve_backend;

/* The port `tg serve` listens on without --port (llama.cpp's). */
#define SERVE_DEFAULT_PORT 8080

typedef struct {
  const char *host;       /* address to bind; NULL = "127.0.0.1" (use "0.0.0.0" or "::" for all) */
  int port;               /* 0 = any free port (serve_port tells which); tg serve: SERVE_DEFAULT_PORT */
  size_t max_body;        /* request body cap in bytes; 0 = 8 MiB. Larger bodies get 413 */
  bool quiet;             /* no per-request log lines on stderr */
  /* Against idle and slow clients (slowloris): a connection that sends or
   * receives nothing for timeout_s seconds is closed (0 = 30; a generation
   * in progress is not idle), and one address may hold at most
   * max_conns_per_ip connections at once (0 = 32; more are refused at once).
   * At most SERVE_MAX_CONNECTIONS connections are open in all. */
  unsigned timeout_s;
  unsigned max_conns_per_ip;
} serve_options;

#define SERVE_DEFAULT_TIMEOUT_S 30
#define SERVE_DEFAULT_CONNS_PER_IP 32
#define SERVE_MAX_CONNECTIONS 512

typedef struct serve_server serve_server;

/* Starts the server (HTTP threads and the generation worker) and returns at
 * once; NULL with tg_seterr when it cannot bind or the backend is incomplete.
 * The backend must outlive the server. */
serve_server *serve_start(const serve_options *opt, const serve_backend *backend);
/* The port the server listens on. */
int serve_port(const serve_server *srv);
/* Stops accepting, ends requests in flight (their generations stop at the
 * next token) and frees the server. */
void serve_stop(serve_server *srv);

/* What `tg serve` calls: serve_start, a "listening on" line on stderr, block
 * until SIGINT or SIGTERM, serve_stop. Returns 0, or -1 with tg_seterr. */
int serve_run(const serve_options *opt, const serve_backend *backend);

#endif
