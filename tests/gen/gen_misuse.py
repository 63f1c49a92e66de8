#!/usr/bin/env python3
"""gen_misuse.py: writes tests/test_misuse.c, a misuse case for every
function of the public headers (include/*.h), from their prototypes.

    python3 tests/gen/gen_misuse.py

For each function: one case per pointer argument set to NULL (the others
given ordinary values), one per dtype or other enum argument set to 99 and
to -1, one per count argument (n, count, ...) set to -1, and shapes and axis
lists with 17 (TG_MAX_DIMS + 1) or -1 dimensions. tests/test_misuse.c runs
each case in a forked child: it must not crash (no signal, no sanitizer
report), and a function that returns a pointer or a number must return
NULL or a negative number with a message in tg_error(), unless the header
documents that argument as optional (OPTIONAL below). Standard library only;
rerun after changing a header (the test also checks it is up to date).
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "test_misuse.c")

# Arguments the headers document as optional (NULL means a default) or
# calls that accept a value this generator counts as misuse. A case listed
# here must still not crash; it may succeed.
OPTIONAL = {
    "tg_free.t", "tg_set_default_device.name", "tg_to.device", "tg_devices.out", "tg_devices.absent",
    "tg_safetensors_load.device", "tg_npy_load.device", "tg_gguf_load_tensors.device",
    "tg_safetensors_save.metadata", "tg_gguf_save.metadata", "tg_llm_load.opts", "tg_sampler_new.p",
    "tg_jinja_render.vars_json", "tg_chat_template_new.template_text", "tg_chat_template_new.preset_name",
    "tg_chat_template_new.bos_token", "tg_chat_template_new.eos_token", "tg_chat_apply_json.tools_json",
    "tg_chat_apply_json.extra_json", "tg_detokenize.len", "tg_token_stream_push.len", "tg_token_stream_flush.len",
    "tg_tensor_list_free.l", "tg_tokenizer_free.tok", "tg_llm_free.m", "tg_sampler_free.s", "tg_jit_free.j", "tg_schedule_free.s",
    "tg_chat_template_free.t", "tg_token_stream_free.s", "tg_optim_free.o", "tg_state_dict_free.sd",
    "tg_llm_eval.logits", "tg_llm_decode_batch.logits", "tg_llm_eval_batch.positions", "tg_llm_eval_batch.want",
    "tg_llm_eval_batch.logits", "tg_cummax.indices", "tg_cummin.indices",
    "tg_sort.indices", "tg_topk.indices", "tg_linear.bias", "tg_layernorm.weight", "tg_layernorm.bias",
    "tg_jit_new.ctx", "tg_set_kernel_opts.spec", "tg_viz_begin.dir",
    "tg_sampler_set_grammar.tok",  # with g NULL (the generator has no grammar to pass): detaches
    "tg_function_new.name", "tg_function_new.ctx", "tg_function_set_grad.ctx", "tg_function_set_grad.grad",
    "tg_custom_kernel.name",  # tg_kernel.h: NULL names the kernel "custom_kernel"
    # tg_movement.h: "out may be NULL to only count" (splitting); tg_layers.h: the same
    # for tg_state_dict_parameters
    "tg_split.out", "tg_split_size.out", "tg_chunk.out", "tg_state_dict_parameters.out",
}
# tg_layers.h: tg_<layer>_state(layer, sd, prefix) names tensors "<name>" when prefix
# is NULL or "" (tg_optim_state too).
OPTIONAL_ARG = {("_state", "prefix")}

# Known gaps (issue [2.9]): calls that accept the misuse or fail without a
# message. They must still not crash; each one fixed comes off this list
# (the test fails when a case not listed here is accepted or silent).
KNOWN = set("""
""".split())

SKIP = {
    "tg_release_cached_memory",   # no arguments worth testing; global
}


def strip(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"^\s*#[^\n]*(\\\n[^\n]*)*", " ", text, flags=re.M)
    text = text.replace('extern "C" {', " ")
    return re.sub(r"\bTG_API\b", " ", text)   # the export marker (include/tg_api.h)


def prototypes():
    protos, opaque, fnptr = [], set(), {}
    for h in sorted(os.listdir(os.path.join(ROOT, "include"))):
        if not h.endswith(".h"):
            continue
        src = strip(open(os.path.join(ROOT, "include", h)).read())
        for m in re.finditer(r"typedef\s+struct\s+(tg_\w+)\s+(tg_\w+)\s*;", src):
            opaque.add(m.group(2))
        for m in re.finditer(r"typedef\s+([^;{}]*?)\(\s*\*\s*(tg_\w+)\s*\)\s*\(([^;]*?)\)\s*;", src):
            fnptr[m.group(2)] = (m.group(1).strip(), m.group(3))
        src = re.sub(r"\{[^{}]*\}", " ", src)   # struct bodies
        for stmt in src.split(";"):
            stmt = " ".join(stmt.split())
            if stmt.startswith("typedef") or "(" not in stmt:
                continue
            m = re.match(r"^(?:\}\s*)?([\w\s\*]+?)\s*\b(tg_\w+)\s*\((.*)\)\s*(?:__attribute__.*)?$", stmt)
            if not m or "(*" in m.group(3) or "..." in m.group(3):
                continue
            ret, name, params = m.group(1).strip(), m.group(2), m.group(3).strip()
            if ret.startswith("struct ") and "*" not in ret:
                continue
            args = []
            if params and params != "void":
                for p in params.split(","):
                    p = p.strip()
                    pm = re.match(r"^(.*?)(\w+)$", p)
                    typ, arg = pm.group(1).strip(), pm.group(2)
                    typ = typ.replace("struct tg_tokenizer", "tg_tokenizer")
                    args.append((typ, arg))
            protos.append((ret, name, args))
    seen, out = set(), []
    for p in protos:
        if p[1] not in seen and p[1] not in SKIP:
            seen.add(p[1])
            out.append(p)
    return out, opaque, fnptr


ENUMS = {"tg_dtype", "tg_reduce_kind", "tg_pad_kind", "tg_interp_mode"}
COUNTS = {"n", "nin", "nout", "count", "n_tokens", "nmeta", "max", "cap", "ntensors", "nids", "n_ids"}
OPAQUE_FIXTURE = {
    "tg_tokenizer": "fx_tokenizer()", "tg_llm": "fx_llm()", "tg_sampler": "fx_sampler()",
    "tg_chat_template": "fx_template()", "tg_token_stream": "fx_stream()", "tg_jit": "fx_jit()",
    "tg_optim": "fx_optim()", "tg_tensor": "fx_tensor()", "tg_schedule": "fx_schedule()",
}


def base(typ):
    return typ.replace("const", "").replace("*", "").strip()


def default(fn, typ, arg, opaque, fnptr):
    t = " ".join(typ.split())
    b, stars = base(t), t.count("*")
    if stars == 0:
        if b in fnptr:
            return "fx_jit_fn" if b == "tg_jit_fn" else "NULL"
        return {"tg_shape": "TG_SHAPE(2, 3)", "tg_axes": "TG_AXES(0)", "tg_dtype": "TG_F32", "bool": "false",
                "double": "1.0", "float": "1.0f", "tg_jinja_options": "(tg_jinja_options){ 0 }"}.get(
            b, "(%s)0" % b if b in ENUMS or b.startswith("tg_") else "1")
    if b == "char" and stars == 1:
        if arg in ("device",):
            return '"CPU"'
        if arg in ("path", "gguf_path"):
            return '"/tmp/tg_misuse.out"' if "save" in fn else '"goldens/llm_llama.gguf"'
        if "json" in arg:
            return '"[]"' if "messages" in arg or "tools" in arg else '"{}"'
        if arg == "template_text":
            return '"{{ 1 }}"'
        return '"x"'
    if b == "char" and stars == 2:
        return "(const char *[4]){ \"x\", \"y\", NULL, NULL }" if "const" in t else "(char *[4]){ 0 }"
    if b == "void":
        return "fx_bytes"
    if b in ("int64_t", "int32_t", "int", "float", "size_t", "uint8_t", "uint16_t", "double", "bool"):
        if stars == 2:
            return "(%s *[1]){ 0 }" % b
        return "(%s[16]){ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 }" % b
    if b == "tg_tensor" and stars == 2:
        return "fx_tensors()"
    if b in opaque or b == "tg_tensor":
        return OPAQUE_FIXTURE.get(b, "NULL")
    if stars == 1:   # a struct the caller fills or passes: options may be NULL (defaults)
        return "NULL" if b.endswith("_opts") or b in ("tg_sampling",) else "(%s[4]){ 0 }" % b
    return "NULL"


def cases():
    protos, opaque, fnptr = prototypes()
    out = []
    for ret, fn, args in protos:
        vals = [default(fn, t, a, opaque, fnptr) for t, a in args]
        variants = []
        for i, (t, a) in enumerate(args):
            b, stars = base(t), t.count("*")
            if stars and vals[i] != "NULL":
                variants.append((i, "NULL", f"{a}=NULL"))
            if stars == 0 and b in ENUMS:
                variants += [(i, f"({b})99", f"{a}=99"), (i, f"({b})-1", f"{a}=-1")]
            if stars == 0 and b in ("int", "int64_t", "size_t") and a in COUNTS:
                variants.append((i, "-1" if b != "size_t" else "(size_t)-1", f"{a}=-1"))
            if stars == 0 and b == "tg_shape":
                variants += [(i, "(tg_shape){ .ndim = 17 }", f"{a}.ndim=17"), (i, "(tg_shape){ .ndim = -1 }", f"{a}.ndim=-1")]
            if stars == 0 and b == "tg_axes":
                variants += [(i, "(tg_axes){ .n = 17 }", f"{a}.n=17"), (i, "TG_AXES(99)", f"{a}=(99)")]
        for i, v, what in variants:
            call_args = list(vals)
            call_args[i] = v
            check = ("ptr" if "*" in ret else "int" if ret in ("int", "int64_t", "int32_t") else "none")
            key = f"{fn}({what})"
            optional = f"{fn}.{args[i][1]}" in OPTIONAL or any(fn.endswith(sfx) and args[i][1] == a
                                                                   for sfx, a in OPTIONAL_ARG)
            out.append((fn, what, f"{fn}({', '.join(call_args)})", check, 2 if key in KNOWN else 1 if optional else 0))
    return out


def main():
    cs = cases()
    lines = ["/* test_misuse.c: GENERATED by tests/gen/gen_misuse.py from the public headers; do not edit.",
             " * Every public function with a NULL pointer, an out-of-range enum, a",
             " * negative count or a shape of too many dimensions, each in a forked child",
             " * (misuse_run in test_misuse_run.c): no crash, and an error return with a",
             " * message where the function can return one. */",
             '#include "test_misuse.h"', "",
             "#define M_PTR(e) return (e) == NULL ? M_ERROR : M_ACCEPTED",
             "#define M_INT(e) return (e) < 0 ? M_ERROR : M_ACCEPTED",
             "#define M_NONE(e) return ((void)(e), M_UNCHECKED)", ""]
    for k, (fn, what, call, check, optional) in enumerate(cs):
        macro = {"ptr": "M_PTR", "int": "M_INT", "none": "M_NONE"}[check]
        lines.append(f"static int c{k}(void) {{ {macro}({call}); }}")
    lines += ["", "const misuse_case misuse_cases[] = {"]
    for k, (fn, what, call, check, optional) in enumerate(cs):
        lines.append(f'  {{ "{fn}({what})", c{k}, {["M_STRICT", "M_OPTIONAL", "M_KNOWN_GAP"][optional]} }},')
    lines += ["};", f"const int misuse_ncases = {len(cs)};", ""]
    text = "\n".join(lines)
    if len(sys.argv) > 1 and sys.argv[1] == "--check":
        sys.exit(0 if os.path.exists(OUT) and open(OUT).read() == text else 1)
    open(OUT, "w").write(text)
    print(f"gen_misuse: {len(cs)} cases over {len(set(c[0] for c in cs))} functions -> {OUT}")


if __name__ == "__main__":
    main()
