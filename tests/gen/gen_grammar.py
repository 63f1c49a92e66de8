#!/usr/bin/env python3
"""Goldens for tg's JSON-schema grammars (run from the repo root):

    python3 tests/gen/gen_grammar.py    # writes tests/goldens/grammar_schemas.json

Random schemas over the keywords tg's converter supports (src/grammar/
json_schema.c: type and type lists, properties, required, minimum,
maximum, exclusiveMinimum and exclusiveMaximum on integers,
additionalProperties false/true/a schema, items, minItems, maxItems,
minLength, maxLength, enum, const, anyOf, oneOf with disjoint branches,
$ref into $defs), and for each schema random candidate texts: instances
built to fit it, and mutations of them (a wrong type, a missing required
property, an extra one, a string or array too long or too short, a value
outside the enum, a cut-off text). Every candidate's label comes from the
`jsonschema` package (PyPI) alone: valid when json.loads parses it and
Draft202012Validator finds no error.

Candidates are written the way the grammar expects JSON to be written
(docs/llm.md): an object's properties in the order required, then optional
(each in "properties" order), then additional ones; white space as
llama.cpp's grammar allows it (none, ", " and ": ", or indented by 2);
integers with no point, other numbers with a fraction. Within that form
tg's grammar must accept exactly the valid texts (tests/test_grammar.c,
grammar_schema_goldens).

File format: a JSON array of {"schema": ..., "cases": [{"text": str,
"valid": bool}, ...]}, ASCII (non-ASCII characters as \\u escapes).
"""
import json
import random

import jsonschema

rng = random.Random(20261202)
NAMES = ["a", "b", "ab", "id", "name", "tags", "x1", "value", "ok", "n"]
CHARS = "abcxyz 019_-\"\\\n\té€ß/"
SCALARS = ["string", "integer", "number", "boolean", "null"]


def rand_string(lo=0, hi=8):
    return "".join(rng.choice(CHARS) for _ in range(rng.randint(lo, hi)))


def rand_schema(depth, defs):
    kinds = ["scalar"] * 4 + ["enum", "const"]
    if depth < 3:
        kinds += ["object"] * 3 + ["array"] * 2 + ["anyof", "typelist"]
    if defs and depth > 0:
        kinds.append("ref")
    k = rng.choice(kinds)
    if k == "scalar":
        t = rng.choice(SCALARS)
        s = {"type": t}
        if t == "integer" and rng.random() < 0.5:
            lo = rng.choice([-1000, -13, -1, 0, 1, 7, 95, 100, 12345])
            kind = rng.choice(["min", "max", "both", "exclusive"])
            if kind in ("min", "both"):
                s["minimum"] = lo
            if kind in ("max", "both"):
                s["maximum"] = lo + rng.choice([0, 1, 9, 90, 1000]) if kind == "both" else lo
            if kind == "exclusive":
                s["exclusiveMinimum"] = lo - 0.5 if rng.random() < 0.3 else lo
                s["exclusiveMaximum"] = lo + rng.choice([2, 50, 999])
        if t == "string" and rng.random() < 0.5:
            lo = rng.randint(0, 3)
            if rng.random() < 0.7:
                s["minLength"] = lo
            if rng.random() < 0.7:
                s["maxLength"] = lo + rng.randint(0, 4)
        return s
    if k == "enum":
        vals = rng.sample(["red", "green", "blue", "a b", 'q"t', 0, 1, 42, -7, 2.5, True, False, None], rng.randint(1, 4))
        return {"enum": vals}
    if k == "const":
        return {"const": rng.choice(["fixed", 3, -1.25, True, None])}
    if k == "typelist":
        return {"type": rng.sample(["string", "integer", "boolean", "null"], rng.randint(2, 3))}
    if k == "anyof":
        types = rng.sample(["string", "integer", "boolean", "null", "object", "array"], rng.randint(2, 3))
        branches = []
        for t in types:
            if t == "object":
                branches.append(rand_object(depth + 1, defs))
            elif t == "array":
                branches.append(rand_array(depth + 1, defs))
            else:
                branches.append({"type": t})
        return {rng.choice(["anyOf", "oneOf"]): branches}
    if k == "ref":
        return {"$ref": "#/$defs/" + rng.choice(sorted(defs))}
    if k == "object":
        return rand_object(depth, defs)
    return rand_array(depth, defs)


def rand_object(depth, defs):
    names = rng.sample(NAMES, rng.randint(0, 4))
    props = {n: rand_schema(depth + 1, defs) for n in names}
    s = {"type": "object", "properties": props}
    req = [n for n in names if rng.random() < 0.5]
    if req:
        s["required"] = req
    ap = rng.choice([False, False, True, "schema"])
    s["additionalProperties"] = {"type": rng.choice(["integer", "boolean"])} if ap == "schema" else ap
    return s


def rand_array(depth, defs):
    s = {"type": "array", "items": rand_schema(depth + 1, defs)}
    if rng.random() < 0.5:
        s["minItems"] = rng.randint(0, 2)
    if rng.random() < 0.5:
        s["maxItems"] = s.get("minItems", 0) + rng.randint(0, 3)
    return s


def resolve(s, root):
    while isinstance(s, dict) and "$ref" in s:
        s = root["$defs"][s["$ref"].split("/")[-1]]
    return s


def rand_int(s):
    """An integer near s's bounds (inside or just outside them)."""
    edges = [s[k] for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") if k in s]
    if edges and rng.random() < 0.8:
        e = int(rng.choice(edges))
        return e + rng.choice([-11, -1, 0, 0, 1, 1, 2, 10, 99])
    return rand_number(True)


def rand_number(integral):
    if integral:
        return rng.choice([0, 1, -1, 7, 42, -300, 123456])
    x = round(rng.uniform(-1000, 1000), rng.randint(1, 3))
    return x + 0.5 if x == int(x) else x


def instance(s, root, depth=0):
    """A value built to fit s (not always: jsonschema has the last word)."""
    s = resolve(s, root)
    if s is True or s == {}:
        return rng.choice([1, "v", None, True, [1, 2], {"k": 1}])
    if "const" in s:
        return s["const"]
    if "enum" in s:
        return rng.choice(s["enum"])
    for key in ("anyOf", "oneOf"):
        if key in s:
            return instance(rng.choice(s[key]), root, depth + 1)
    t = s.get("type")
    if isinstance(t, list):
        t = rng.choice(t)
    if t == "string":
        lo = s.get("minLength", 0)
        hi = s.get("maxLength", lo + 6)
        return rand_string(lo, hi)
    if t == "integer":
        return rand_int(s)
    if t == "number":
        return rand_number(rng.random() < 0.3)
    if t == "boolean":
        return rng.random() < 0.5
    if t == "null":
        return None
    if t == "array":
        lo = s.get("minItems", 0)
        hi = s.get("maxItems", lo + 3)
        return [instance(s["items"], root, depth + 1) for _ in range(rng.randint(lo, hi))]
    if t == "object":
        props = s.get("properties", {})
        req = s.get("required", [])
        out = {}
        for n in props:
            if n in req or rng.random() < 0.6:
                out[n] = instance(props[n], root, depth + 1)
        ap = s.get("additionalProperties", False)
        if ap is not False and rng.random() < 0.5:
            for _ in range(rng.randint(1, 2)):
                key = rng.choice(["zz", "q", "a2", "nam", "idx", ""])
                if key not in props:
                    out[key] = instance(ap, root, depth + 1) if isinstance(ap, dict) else rng.choice([1, "s", None, [True]])
        return out
    raise ValueError(s)


def wrong_value(v):
    """A value of another JSON type than v."""
    pool = ["str", 5, 2.5, True, None, [1], {"k": 0}]
    return rng.choice([p for p in pool if type(p) is not type(v)])


def mutate(v, s, root):
    """v changed somewhere: often invalid, sometimes not (the label says)."""
    s = resolve(s, root)
    if isinstance(v, dict) and isinstance(s, dict) and s.get("type") == "object":
        props = s.get("properties", {})
        choice = rng.random()
        keys = list(v)
        if keys and choice < 0.3:
            k = rng.choice(keys)
            v = dict(v)
            if k in props and rng.random() < 0.7:
                v[k] = mutate(v[k], props[k], root)
            else:
                v[k] = wrong_value(v[k])
            return v
        if keys and choice < 0.55:
            v = dict(v)
            del v[rng.choice(keys)]
            return v
        v = dict(v)
        v[rng.choice(["extra", "abc", "nameX", "i", "tag"])] = rng.choice([1, True, "s"])
        return v
    if isinstance(v, list) and isinstance(s, dict) and s.get("type") == "array":
        choice = rng.random()
        if v and choice < 0.3:
            i = rng.randrange(len(v))
            return v[:i] + [mutate(v[i], s["items"], root)] + v[i + 1:]
        if choice < 0.65:
            return v + [instance(s["items"], root) for _ in range(rng.randint(1, 3))]
        return v[:max(0, len(v) - rng.randint(1, 2))]
    if isinstance(v, int) and not isinstance(v, bool) and rng.random() < 0.6:
        return v + rng.choice([-100, -2, -1, 1, 2, 100])
    if isinstance(v, str) and rng.random() < 0.6:
        return v + rand_string(1, 5) if rng.random() < 0.5 else v[: max(0, len(v) - rng.randint(1, 3))]
    return wrong_value(v)


def dump(v, s, root, style, depth=0):
    """v as JSON text, objects in the grammar's property order."""
    s = resolve(s, root)
    if isinstance(s, dict):
        for key in ("anyOf", "oneOf"):
            if key in s:
                fits = [b for b in s[key] if jsonschema.Draft202012Validator({**resolve(b, root), "$defs": root.get("$defs", {})}).is_valid(v)]
                s = fits[0] if fits else {}
    ind = "\n" + "  " * (depth + 1) if style == "indent" else ""
    end = "\n" + "  " * depth if style == "indent" else ""
    comma = "," if style != "spaced" else ", "
    colon = ":" if style == "compact" else ": "
    if isinstance(v, dict):
        if not v:
            return "{}"
        props = s.get("properties", {}) if isinstance(s, dict) else {}
        req = s.get("required", []) if isinstance(s, dict) else []
        order = [k for k in props if k in req] + [k for k in props if k not in req]
        keys = [k for k in order if k in v] + [k for k in v if k not in props]
        ap = s.get("additionalProperties", True) if isinstance(s, dict) else True
        parts = []
        for k in keys:
            sub = props[k] if k in props else (ap if isinstance(ap, dict) else {})
            parts.append(ind + json.dumps(k) + colon + dump(v[k], sub, root, style, depth + 1))
        return "{" + comma.join(parts) + end + "}"
    if isinstance(v, list):
        if not v:
            return "[]"
        items = s.get("items", {}) if isinstance(s, dict) else {}
        return "[" + comma.join(ind + dump(x, items, root, style, depth + 1) for x in v) + end + "]"
    return json.dumps(v, ensure_ascii=rng.random() < 0.5)


def label(text, schema):
    try:
        v = json.loads(text)
    except json.JSONDecodeError:
        return False
    return jsonschema.Draft202012Validator(schema).is_valid(v)


def main():
    out = []
    while len(out) < 150:
        defs = {}
        if rng.random() < 0.3:
            defs = {"item": rand_schema(2, {}), "pair": {"type": "array", "items": {"type": "integer"}, "maxItems": 2}}
        schema = rand_schema(0, defs)
        if defs:
            schema = {**schema, "$defs": defs}
        jsonschema.Draft202012Validator.check_schema(schema)
        texts = set()
        for _ in range(40):
            if len(texts) >= 16:
                break
            style = rng.choice(["compact", "spaced", "indent"])
            v = instance(schema, schema)
            if rng.random() < 0.5:
                v = mutate(v, schema, schema)
            t = dump(v, schema, schema, style)
            if rng.random() < 0.08 and len(t) > 1:
                t = t[: rng.randrange(1, len(t))]   # cut off: never valid
            texts.add(t)
        cases = [{"text": t, "valid": label(t, schema)} for t in sorted(texts)]
        out.append({"schema": schema, "cases": cases})
    n = sum(len(o["cases"]) for o in out)
    nv = sum(c["valid"] for o in out for c in o["cases"])
    with open("tests/goldens/grammar_schemas.json", "w") as f:
        f.write("[\n" + ",\n".join(json.dumps(o, ensure_ascii=True) for o in out) + "\n]\n")
    print(f"{len(out)} schemas, {n} texts ({nv} valid)")


if __name__ == "__main__":
    main()
