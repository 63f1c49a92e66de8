/* metrics.h: the server's counters, as GET /metrics shows them in
 * Prometheus' text format (names after llama-server's, "tg:" for
 * "llamacpp:"). The queue owns one and guards it with its mutex. */
#ifndef TG_SERVE_METRICS_H
#define TG_SERVE_METRICS_H

#include <stdint.h>

typedef struct {
  uint64_t chat_requests, completion_requests, embedding_requests, failed_requests;
  uint64_t rejected_requests;                 /* 503s of a full queue */
  uint64_t cached_tokens;                     /* prompt tokens a slot's cache already held */
  uint64_t prompt_tokens, predicted_tokens;
  double prompt_seconds, predicted_seconds;   /* prompt: until the first token's text; predicted: the rest */
} serve_metrics;

/* A generation that ended: its counts and times. */
void serve_metrics_add(serve_metrics *m, int n_prompt, int n_predicted, double prompt_s, double predicted_s);
/* The /metrics page (malloc'd): the counters, the average throughputs, and
 * the slots' and queue's state now. */
char *serve_metrics_text(const serve_metrics *m, int slots_total, int slots_busy, int deferred, int n_ctx);

#endif
