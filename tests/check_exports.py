#!/usr/bin/env python3
"""check_exports.py: libtg.so exports exactly the functions of include/.

    python3 tests/check_exports.py build/libtg.so include

Lists the library's exported symbols (nm -D --defined-only) and the
functions the public headers declare, and fails (exit 1, one line per
problem, saying what to do) when a header declares a function without
TG_API, when one marked TG_API is not in the library, or when the library
exports a name no header declares. Exit 2: nm could not read the library.
"""
import os
import re
import subprocess
import sys


def declared(include):
    """{name: (header, has TG_API)} for every function declared in include/*.h."""
    out = {}
    for h in sorted(os.listdir(include)):
        if not h.endswith(".h"):
            continue
        text = open(os.path.join(include, h)).read()
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        text = re.sub(r"//[^\n]*", " ", text)
        text = re.sub(r"^\s*#[^\n]*(\\\n[^\n]*)*", " ", text, flags=re.M)
        text = text.replace('extern "C" {', " ")
        while re.search(r"\{[^{}]*\}", text):           # struct and enum bodies
            text = re.sub(r"\{[^{}]*\}", " ", text)
        for stmt in text.split(";"):
            stmt = " ".join(stmt.split()).lstrip("} ")
            if stmt.startswith("typedef"):
                continue
            m = re.match(r"^[\w\s\*]*?\b(tg_\w+)\s*\(", stmt)
            if m:
                out[m.group(1)] = (h, re.match(r"^TG_API\b", stmt) is not None)
    return out


def exported(lib):
    r = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True)
    if r.returncode != 0:
        print("check_exports: nm -D %s failed: %s" % (lib, r.stderr.strip()))
        sys.exit(2)
    names = set()
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) >= 3 and not f[2].startswith("_"):   # _init, _fini, __bss_start ...
            names.add(f[2].split("@")[0])
    return names


def main():
    lib, include = sys.argv[1], sys.argv[2]
    decl, syms = declared(include), exported(lib)
    problems = []
    for name, (h, marked) in sorted(decl.items()):
        if not marked:
            problems.append("%s is declared in include/%s without TG_API: mark it TG_API in include/%s "
                            "(as every function there is), or programs that link libtg.so cannot call it" % (name, h, h))
        elif name not in syms:
            problems.append("%s is declared TG_API in include/%s but libtg.so does not define it: "
                            "define it in src/, or take the declaration out of include/%s" % (name, h, h))
    for name in sorted(syms - set(decl)):
        problems.append("libtg.so exports %s, which no header of include/ declares: an internal function "
                        "must not carry TG_API (or a visibility attribute); a public one is declared, "
                        "marked TG_API, in include/tg*.h" % name)
    for p in problems:
        print("check_exports: " + p)
    print("check_exports: %d functions declared, %d exported, %d problems" % (len(decl), len(syms), len(problems)))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
