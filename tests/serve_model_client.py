"""serve_model_client.py PORT: the official openai client against `tg serve`
running stories260K (started by tests/test_serve_model.c). Greedy output must
be llama.cpp's text. Prints "openai client: all ok" or fails."""
import sys

import openai

WANT = ", there was a little girl named Lily. She loved to play outside in the park."
client = openai.OpenAI(base_url=f"http://127.0.0.1:{sys.argv[1]}/v1", api_key="none", max_retries=0, timeout=60)

assert [m.id for m in client.models.list().data] == ["stories260K.gguf"]
r = client.completions.create(model="stories260K.gguf", prompt="Once upon a time", max_tokens=20, temperature=0)
assert WANT.startswith(r.choices[0].text) and len(r.choices[0].text) > 30, r
assert r.usage.prompt_tokens == 5 and r.usage.completion_tokens == 20, r.usage
text = "".join(c.choices[0].text for c in client.completions.create(model="stories260K.gguf", prompt="Once upon a time",
                                                                    max_tokens=20, temperature=0, stream=True) if c.choices)
assert text == r.choices[0].text, text
r = client.chat.completions.create(model="stories260K.gguf", messages=[{"role": "user", "content": "Tell me a story"}],
                                   max_tokens=8, temperature=0.7, seed=1)
assert r.choices[0].finish_reason in ("stop", "length") and r.usage.completion_tokens >= 1, r
print("openai client: all ok")
