/* fuzz_request.c: an HTTP request body from untrusted bytes, as `tg serve`
 * parses it (serve_request_parse, no socket). The first byte picks the
 * endpoint (chat or text completion). A body that parses must come back
 * validated: the limits of request.h hold for every field. */
#include "fuzz.h"
#include "serve/request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  bool chat = data[0] & 1;
  serve_request r;
  serve_error e;
  if (serve_request_parse(&r, chat, (const char *)data + 1, size - 1, &e) == 0) {
    if (r.chat != chat || (chat ? !r.messages : !r.prompt && !r.n_prompt_tokens)) __builtin_trap();
    if (!(r.sampling.temperature >= 0 && r.sampling.temperature <= 2 && r.sampling.top_p >= 0 && r.sampling.top_p <= 1 &&
          r.sampling.min_p >= 0 && r.sampling.min_p <= 1 && r.sampling.top_k >= 0 && (r.max_tokens == -1 || r.max_tokens >= 1)))
      __builtin_trap();
    for (int i = 0; i < r.n_stop; i++) if (!r.stop[i][0]) __builtin_trap();
    for (int i = 0; i < r.n_prompt_tokens; i++) if (r.prompt_tokens[i] < 0) __builtin_trap();
    serve_request_free(&r);
  } else if (e.status < 400 || e.status > 499 || !e.message[0]) {
    __builtin_trap();
  } else {
    free(serve_error_json(&e));
  }
  return 0;
}
