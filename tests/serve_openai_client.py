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

# tools: the fake model calls get_weather and get_time after some text ("calltool"), or finishes a forced call
tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
         {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}]
r = client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "calltool"}], tools=tools)
m = r.choices[0].message
assert r.choices[0].finish_reason == "tool_calls" and m.content == "Let me look.", r
assert [(c.type, c.function.name, c.function.arguments) for c in m.tool_calls] == \
    [("function", "get_weather", '{"city":"Paris"}'), ("function", "get_time", "{}")], m.tool_calls
assert len({c.id for c in m.tool_calls}) == 2, m.tool_calls

calls, content, finish = {}, "", None
for chunk in client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "calltool"}],
                                            tools=tools, stream=True):
    for c in chunk.choices:
        content += c.delta.content or ""
        finish = c.finish_reason or finish
        for tc in c.delta.tool_calls or []:   # accumulated the way clients do: by index
            d = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
            d["id"] += tc.id or ""
            d["name"] += tc.function.name or ""
            d["arguments"] += tc.function.arguments or ""
assert content == "Let me look." and finish == "tool_calls", (content, finish)
assert [(d["name"], d["arguments"]) for _, d in sorted(calls.items())] == \
    [("get_weather", '{"city":"Paris"}'), ("get_time", "{}")], calls

# the client's own accumulation of a stream (what client.chat.completions.stream uses) gives the non-streamed calls;
# the arguments come in pieces ("slow": the fake takes 20 ms a token), each call's head first with arguments ""
from openai.lib.streaming.chat import ChatCompletionStreamState

for extra in ({}, {"parallel_tool_calls": False}):
    want = client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "calltool slow"}],
                                          tools=tools, **extra).choices[0]
    state, pieces = ChatCompletionStreamState(), {}
    for chunk in client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "calltool slow"}],
                                                tools=tools, stream=True, **extra):
        state.handle_chunk(chunk)
        for c in chunk.choices:
            for tc in c.delta.tool_calls or []:
                if tc.id:
                    assert tc.function.name and tc.function.arguments == "" and tc.index not in pieces, tc
                    pieces[tc.index] = 0
                else:
                    assert tc.function.name is None and tc.function.arguments, tc
                    pieces[tc.index] += 1
    got = state.get_final_completion().choices[0]
    assert got.finish_reason == want.finish_reason == "tool_calls", (got, want)
    assert got.message.content == want.message.content, (got.message, want.message)
    assert [(c.type, c.function.name, c.function.arguments) for c in got.message.tool_calls] == \
        [(c.type, c.function.name, c.function.arguments) for c in want.message.tool_calls], (got.message, want.message)
    assert len(got.message.tool_calls) == (1 if extra else 2) and pieces[0] > 2, (extra, pieces)

r = client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "hi"}], tools=tools,
                                   tool_choice={"type": "function", "function": {"name": "get_weather"}})
assert r.choices[0].message.tool_calls[0].function.name == "get_weather", r

# the call and its result go back as history: the client's own message objects
history = [{"role": "user", "content": "weather?"}, m,
           {"role": "tool", "tool_call_id": m.tool_calls[0].id, "content": "22C"},
           {"role": "tool", "tool_call_id": m.tool_calls[1].id, "content": "noon"}]
r = client.chat.completions.create(model="fake-model", messages=history, tools=tools, tool_choice="none", max_tokens=2)
assert r.choices[0].message.content == "Hello world" and r.choices[0].finish_reason == "length", r

# reasoning: the fake template opens <think> for "think"
r = client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "think"}])
assert r.choices[0].message.content == "The answer.", r
assert r.choices[0].message.model_extra["reasoning_content"] == "I am thinking", r
reasoning = "".join((c.delta.model_extra or {}).get("reasoning_content") or ""
                    for ch in client.chat.completions.create(model="fake-model", stream=True,
                                                             messages=[{"role": "user", "content": "think"}])
                    for c in ch.choices)
assert reasoning == "I am thinking", reasoning

# embeddings: without encoding_format the client asks for base64 and decodes it; both give the unit vectors
want = [[0.57735, 0.0, 0.57735, 0.57735], [0.0, 0.485071, 0.485071, 0.727607]]   # (3,0,3,3)/sqrt(27), (0,2,2,3)/sqrt(17)
for kw in ({"encoding_format": "float"}, {}):
    e = client.embeddings.create(model="fake-model", input=["abc", "zz"], **kw)
    got = [[round(float(x), 6) for x in d.embedding] for d in e.data]
    assert got == want and e.usage.prompt_tokens == 5, (kw, got, e.usage)

print("openai client: all ok")
