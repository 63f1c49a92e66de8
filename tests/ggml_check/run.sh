#!/bin/sh
# run.sh GGML_DIR: builds ggml's libggml-base from a ggml (or llama.cpp/ggml)
# source tree, then checks that `tg quantize` writes, for every type it
# offers, exactly the bytes ggml_quantize_chunk writes, on a random llama
# model (tg llm-init) and on a stress file of extreme rows, and that ggml's
# own gguf reader reads tg's files. Not part of `make test` (needs cmake, a
# C++ compiler and a ggml checkout). Run from the repository root after `make`.
set -e
GGML=${1:?usage: tests/ggml_check/run.sh GGML_SOURCE_DIR}
W=$(mktemp -d /tmp/tg_ggml_check.XXXXXX)
trap 'rm -rf "$W"' EXIT
cmake -S "$GGML" -B "$W/ggml" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$W/ggml" --target ggml-base -j 2 >/dev/null
LIB=$(dirname "$(find "$W/ggml" -name 'libggml-base.so' | head -1)")
cc -O2 -o "$W/check" tests/ggml_check/check_quantize.c -I"$GGML/include" -L"$LIB" -lggml-base -Wl,-rpath,"$LIB"
build/tg llm-init "$W/m.gguf" --dim 512 --layers 2 --heads 8 --kv-heads 2 --ffn 1024 --vocab 1000 --type f16 --seed 3 >/dev/null
python3 tests/ggml_check/stress_gguf.py "$W/s.gguf"
fail=0
for src in m s; do
  for t in Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K_S Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K IQ4_NL IQ4_XS TQ1_0 TQ2_0 BF16 F16; do
    build/tg quantize "$W/$src.gguf" "$W/q.gguf" $t >/dev/null
    printf '%-3s %-7s' $src $t
    out=$("$W/check" "$W/q.gguf" "$W/$src.gguf") || fail=1
    echo "$out" | tail -1
  done
done
exit $fail
