/* metrics.c: the Prometheus text of GET /metrics (see metrics.h). */
#include "serve/metrics.h"
#include <stdio.h>
#include "util/util.h"

void serve_metrics_add(serve_metrics *m, int n_prompt, int n_predicted, double prompt_s, double predicted_s) {
  m->prompt_tokens += (uint64_t)(n_prompt > 0 ? n_prompt : 0);
  m->predicted_tokens += (uint64_t)(n_predicted > 0 ? n_predicted : 0);
  m->prompt_seconds += prompt_s;
  m->predicted_seconds += predicted_s;
}

/* One metric: its help line, type line and value. */
static void metric(strbuf *b, const char *name, const char *type, const char *help, double v) {
  sb_printf(b, "# HELP tg:%s %s\n# TYPE tg:%s %s\ntg:%s %.17g\n", name, help, name, type, name, v);
}

char *serve_metrics_text(const serve_metrics *m, int slots_total, int slots_busy, int deferred, int n_ctx) {
  strbuf b = { 0 };
  sb_puts(&b, "# HELP tg:requests_total Completion and embedding requests accepted, by endpoint.\n"
              "# TYPE tg:requests_total counter\n");
  sb_printf(&b, "tg:requests_total{endpoint=\"chat\"} %llu\n", (unsigned long long)m->chat_requests);
  sb_printf(&b, "tg:requests_total{endpoint=\"completion\"} %llu\n", (unsigned long long)m->completion_requests);
  sb_printf(&b, "tg:requests_total{endpoint=\"embedding\"} %llu\n", (unsigned long long)m->embedding_requests);
  metric(&b, "requests_failed_total", "counter", "Accepted requests that ended in an error (a prompt that does not fit, a failed generation).",
         (double)m->failed_requests);
  metric(&b, "requests_rejected_total", "counter", "Requests refused with a 503 because the queue was full.", (double)m->rejected_requests);
  metric(&b, "prompt_tokens_total", "counter", "Prompt tokens processed.", (double)m->prompt_tokens);
  metric(&b, "prompt_tokens_cached_total", "counter", "Prompt tokens reused from a slot's cache (not processed again).", (double)m->cached_tokens);
  metric(&b, "prompt_seconds_total", "counter", "Prompt processing time.", m->prompt_seconds);
  metric(&b, "tokens_predicted_total", "counter", "Generated tokens.", (double)m->predicted_tokens);
  metric(&b, "tokens_predicted_seconds_total", "counter", "Generation time.", m->predicted_seconds);
  metric(&b, "prompt_tokens_seconds", "gauge", "Average prompt throughput in tokens/s.",
         m->prompt_seconds > 0 ? (double)m->prompt_tokens / m->prompt_seconds : 0);
  metric(&b, "predicted_tokens_seconds", "gauge", "Average generation throughput in tokens/s.",
         m->predicted_seconds > 0 ? (double)m->predicted_tokens / m->predicted_seconds : 0);
  metric(&b, "slots_total", "gauge", "Generation slots.", slots_total);
  metric(&b, "slots_busy", "gauge", "Slots running a request now.", slots_busy);
  metric(&b, "requests_processing", "gauge", "Requests being processed.", slots_busy);
  metric(&b, "requests_deferred", "gauge", "Requests waiting in the queue.", deferred);
  metric(&b, "n_ctx", "gauge", "Context length of the model.", n_ctx);
  return b.s;
}
