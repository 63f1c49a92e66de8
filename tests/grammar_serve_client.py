#!/usr/bin/env python3
"""Structured output through tg serve (test_grammar.c, grammar_serve_model):
python3 grammar_serve_client.py PORT. With the official openai client when it
is installed (else urllib): json_object, json_schema (streamed and not),
GBNF through extra_body, and a 400 for an unsupported schema. Each reply
must parse as JSON and, with the jsonschema package, validate against its
schema. Prints "grammar client: all ok" at the end."""
import json
import sys
import urllib.error
import urllib.request

port = int(sys.argv[1])
base = f"http://127.0.0.1:{port}/v1"
try:
    import jsonschema
except ImportError:
    jsonschema = None

# small and bounded: stories260K's context is 128 tokens, prompt included
PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 6}, "pet": {"enum": ["cat", "dog"]}},
          "required": ["name"], "additionalProperties": False}
SMALL_OBJECT = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "additionalProperties": False}
MSG = [{"role": "user", "content": "Who?"}]


def check(text, schema):
    v = json.loads(text)
    if jsonschema is not None:
        jsonschema.Draft202012Validator(schema).validate(v)
    return v


def post(body):
    req = urllib.request.Request(base + "/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


fmt = {"type": "json_schema", "json_schema": {"name": "person", "strict": True, "schema": PERSON}}
try:
    from openai import BadRequestError, OpenAI
except ImportError:
    OpenAI = None

if OpenAI is not None:
    client = OpenAI(base_url=base, api_key="none")
    for seed in range(3):
        r = client.chat.completions.create(model="m", messages=MSG, response_format=fmt, seed=seed, temperature=1)
        assert r.choices[0].finish_reason == "stop", r
        check(r.choices[0].message.content, PERSON)
    parts = []
    for chunk in client.chat.completions.create(model="m", messages=MSG, response_format=fmt, seed=7, stream=True):
        if chunk.choices and chunk.choices[0].delta.content:
            parts.append(chunk.choices[0].delta.content)
    check("".join(parts), PERSON)
    # json_object: a small bounded schema beside it (llama-server's extension) keeps the tiny model finite
    r = client.chat.completions.create(model="m", messages=MSG, seed=1,
                                       response_format={"type": "json_object", "schema": SMALL_OBJECT})
    check(r.choices[0].message.content, SMALL_OBJECT)
    r = client.chat.completions.create(model="m", messages=MSG, max_tokens=50, seed=2, extra_body={"grammar": 'root ::= ("yes" | "no") "."'})
    assert r.choices[0].message.content in ("yes.", "no."), r.choices[0].message.content
    try:
        client.chat.completions.create(model="m", messages=MSG, response_format={"type": "json_schema", "json_schema": {
            "name": "x", "schema": {"type": "string", "pattern": "^a"}}})
        raise AssertionError("an unsupported schema was accepted")
    except BadRequestError as e:
        assert "'pattern' is not supported" in str(e), e
else:
    for seed in range(3):
        status, r = post({"messages": MSG, "response_format": fmt, "seed": seed})
        assert status == 200, r
        check(r["choices"][0]["message"]["content"], PERSON)
    status, r = post({"messages": MSG, "grammar": 'root ::= ("yes" | "no") "."', "max_tokens": 50})
    assert status == 200 and r["choices"][0]["message"]["content"] in ("yes.", "no."), r
    status, r = post({"messages": MSG, "response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "string", "pattern": "a"}}}})
    assert status == 400 and r["error"]["param"] == "response_format.json_schema.schema", r
print("grammar client: all ok" + ("" if jsonschema else " (not validated: no jsonschema)") + ("" if OpenAI else " (urllib: no openai)"))
