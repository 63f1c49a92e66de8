"""serve_openai_client.py PORT: the official openai client against a tg server
running test_serve.c's fake backend. Prints "openai client: all ok" or fails."""
import sys

import openai

TEXT = "Hello world one two three four five six seven eight"
client = openai.OpenAI(base_url=f"http://127.0.0.1:{sys.argv[1]}/v1", api_key="none", max_retries=0, timeout=20)

models = client.models.list()
assert [m.id for m in models.data] == ["fake-model"], models
assert client.models.retrieve("fake-model").id == "fake-model"

r = client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "hi"}], temperature=0)
assert r.choices[0].message.content == TEXT, r
assert r.choices[0].finish_reason == "stop", r
assert r.usage.completion_tokens == 11 and r.usage.total_tokens == r.usage.prompt_tokens + 11, r

pieces, finish, usage = [], None, None
for chunk in client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "hi"}],
                                            stream=True, stream_options={"include_usage": True}, max_tokens=5):
    if chunk.usage:
        usage = chunk.usage
    for c in chunk.choices:
        pieces.append(c.delta.content or "")
        finish = c.finish_reason or finish
assert "".join(pieces) == "Hello world one two three", pieces
assert finish == "length" and usage.completion_tokens == 5, (finish, usage)

r = client.completions.create(model="fake-model", prompt="Once", max_tokens=2, stop=["zzz"])
assert r.choices[0].text == "Hello world" and r.choices[0].finish_reason == "length", r

text = "".join(c.choices[0].text for c in client.completions.create(model="fake-model", prompt="Once", stream=True)
               if c.choices)
assert text == TEXT, text

try:
    client.completions.create(model="fake-model", prompt="x" * 600)
    raise AssertionError("an over-long prompt should fail")
except openai.BadRequestError as e:
    assert e.code == "context_length_exceeded", e

# OpenAI's own fields are accepted (and ignored where tg has no use for them); others are a 400 naming them
r = client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "hi"}], max_tokens=2,
                                   frequency_penalty=0, presence_penalty=0, user="u", logit_bias={}, store=False,
                                   response_format={"type": "text"}, parallel_tool_calls=False, metadata={"a": "b"})
assert r.choices[0].message.content == "Hello world", r
for extra in ({"temprature": 1}, {"max_tokens": 10 ** 6}):
    try:
        client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "hi"}], extra_body=extra)
        raise AssertionError(f"{extra} should fail")
    except openai.BadRequestError as e:
        assert e.param == next(iter(extra)), e

print("openai client: all ok")
