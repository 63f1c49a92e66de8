/* serve.h: the OpenAI-compatible HTTP server behind `tg serve`, written
 * against an abstract model backend.
 *
 * A backend is a table of functions plus its context. generate, embed and
 * the slot functions run on ONE worker thread, so the model needs no
 * locking; HTTP requests wait in a bounded FIFO queue for that worker,
 * which runs one request at a time, or, with slots, up to n_slots at once
 * in batched steps.
 * render_chat, tokenize_text and detokenize only read the tokenizer and
 * template: the server calls them from the worker and, for /tokenize,
 * /detokenize and /apply-template, from HTTP threads, at the same time.
 * Everything else (JSON, validation, stop strings, tool calls and
 * reasoning in the reply, streaming, usage counts, finish reasons) is the
 * server's job. See docs/serve.md. */
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

struct serve_slot_event;

typedef struct serve_backend {
  void *ctx;              /* passed back to every function */
  const char *model_id;   /* the "model" the API reports, e.g. the file's base name */
  int n_ctx;              /* context length: prompt + generated tokens must fit */
  /* The chat template's source (Jinja), or NULL: the server reads from it
   * how the model writes tool calls (serve_tool_format_detect). */
  const char *chat_template;

  /* Renders OpenAI chat messages through the model's chat template into a
   * malloc'd prompt string. messages is a cJSON array of objects with
   * "role" and "content" (a string; the server flattens content parts and
   * validates roles) and, where the client gave them, "tool_calls"
   * (assistant), "tool_call_id" and "name" (tool). tools is the request's
   * tools array (NULL when none: the template's `tools` variable stays
   * undefined); kwargs an object whose members become extra template
   * variables (chat_template_kwargs, e.g. enable_thinking), or NULL.
   * continue_final: the last message is an assistant message the model must
   * continue (a prefill), so no new assistant turn is opened and the turn is
   * not closed; add_generation_prompt: the prompt ends with the opening of
   * an assistant turn (the server passes at most one of them). Returns NULL
   * with tg_seterr when the template cannot render them. */
  char *(*render_chat)(void *ctx, const cJSON *messages, const cJSON *tools, const cJSON *kwargs,
                       bool add_generation_prompt, bool continue_final);

  /* Tokenizes text into a malloc'd *tokens: add_special adds BOS (and EOS)
   * as the model wants, parse_special turns control tokens' text
   * ("<|im_end|>") into those tokens. Chat prompts and /v1/completions
   * prompts are tokenized with both true. Returns the count, or -1 with
   * tg_seterr. */
  int (*tokenize_text)(void *ctx, const char *text, bool add_special, bool parse_special, int **tokens);

  /* Generates at most max_tokens tokens after the prompt (the server ensures
   * n_prompt + max_tokens <= n_ctx), calling emit with each token's text.
   * Stops by itself at the model's end-of-turn/end-of-text tokens (their text
   * is not emitted) and when emit returns false. *n_out: tokens generated
   * (an end token counts); *hit_eos: it stopped on an end token.
   * Returns 0, or -1 with tg_seterr. */
  int (*generate)(void *ctx, const int *prompt, int n_prompt, const serve_sampling *s, int max_tokens,
                  serve_emit_fn emit, void *u, int *n_out, bool *hit_eos);

  /* Optional (NULL: POST /detokenize is a 501). The text of n tokens
   * (control tokens' text included), malloc'd, or NULL with tg_seterr for
   * an id out of range. */
  char *(*detokenize)(void *ctx, const int *tokens, int n);

  /* Optional (NULL: /v1/embeddings is a 501). Runs the n tokens through the
   * model and writes their embedding to out (n_embd floats): the last
   * hidden state (after the final norm) averaged over the tokens, not yet
   * normalized. Called from the worker thread, like generate. 0, or -1 with
   * tg_seterr. */
  int (*embed)(void *ctx, const int *tokens, int n, float *out);
  int n_embd;

  /* Parallel slots (optional): with n_slots > 1 and the functions below,
   * up to n_slots requests run at once, each on its own slot (a sequence
   * with its own KV cache of n_ctx positions), all decoding together in
   * one batched step (continuous batching: a request joins between
   * steps). Without them, requests run one at a time through generate.
   * The worker thread calls them, never two at once. */
  int n_slots;
  /* How many leading tokens of prompt the slot's cache holds (the server
   * sends a request to the free slot that shares the longest prefix). */
  int (*slot_cached)(void *ctx, int slot, const int *prompt, int n_prompt);
  /* Starts a generation on a free slot, with generate's arguments: keeps
   * the longest prefix its cache shares with the prompt (*n_cached tokens;
   * the last prompt token always runs again) and reads the rest in the
   * steps that follow. 0, or -1 with tg_seterr. */
  int (*slot_begin)(void *ctx, int slot, const int *prompt, int n_prompt, const serve_sampling *s, int max_tokens,
                    int *n_cached);
  /* One step of the n slots[] that have a generation: a piece of the
   * prompts still being read, and one token of each of the others, in one
   * batched pass; ev[i] gets what slots[i] did. -1 with tg_seterr when the
   * step failed for all of them. */
  int (*slot_step)(void *ctx, const int *slots, int n, struct serve_slot_event *ev);
  /* Ends the slot's generation (finished, stopped or cancelled); its cache
   * stays, for a next prompt that shares it. */
  void (*slot_end)(void *ctx, int slot);
  /* embed on the given free slot (its cache then holds the tokens). */
  int (*slot_embed)(void *ctx, int slot, const int *tokens, int n, float *out);
} serve_backend;

/* What one slot did in a step. */
typedef struct serve_slot_event {
  const char *text;       /* new text (not NUL-terminated; valid until the next step) */
  size_t len;
  int n_out;              /* tokens generated so far (an end token counts) */
  bool done;              /* finished: an end token (eos), max_tokens, or a full context */
  bool eos;
  bool failed;            /* then error says why; the slot's generation is over */
  char error[256];
} serve_slot_event;

#define SERVE_MAX_SLOTS 64

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
  /* When set, every request but GET /health, /models and OPTIONS must carry
   * it ("Authorization: Bearer KEY" or "X-Api-Key: KEY"); others get a 401,
   * as llama-server's --api-key. */
  const char *api_key;
  /* Requests waiting for a slot beyond this many get a 503 at once
   * (0 = SERVE_DEFAULT_MAX_QUEUE). */
  int max_queue;
} serve_options;

#define SERVE_DEFAULT_MAX_QUEUE 256

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
