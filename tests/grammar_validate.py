#!/usr/bin/env python3
"""Validates constrained generations (test_grammar.c, grammar_generate_tiny_model):
each line of FILE is {"schema": ..., "text": ...}; the text must parse as JSON and
validate against the schema per the jsonschema package. Exit 1 on any failure."""
import json
import sys

import jsonschema

bad = 0
n = 0
for line in open(sys.argv[1]):
    rec = json.loads(line)
    n += 1
    try:
        jsonschema.Draft202012Validator(rec["schema"]).validate(json.loads(rec["text"]))
    except (json.JSONDecodeError, jsonschema.ValidationError) as e:
        bad += 1
        print(f"  invalid: {rec['text']!r}: {str(e).splitlines()[0]}")
print(f"  jsonschema: {n - bad} of {n} outputs valid")
sys.exit(1 if bad else 0)
