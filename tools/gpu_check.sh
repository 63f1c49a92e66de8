#!/usr/bin/env bash
# tools/gpu_check.sh: one prepared run for a machine lent an NVIDIA GPU for a
# few minutes (docs/devices.md). From the checkout's root, or anywhere:
#
#   tools/gpu_check.sh                 # everything, within GPU_CHECK_SECONDS (540)
#
# It prints the GPU (nvidia-smi), finds the driver and NVRTC (and says what
# is missing), builds with make -j$(nproc), lists tg's devices, and then, on
# the device under test (CUDA when a GPU is present):
#   1. tg run on stories260K, greedy, on the device and on the CPU: same text?
#   2. the device lines of bench_sgemm (4096 f32 and f16-in/f32-acc against
#      cuBLAS), bench_elementwise (fused against a copy kernel) and bench_llm
#      (stories260K decode, same tokens as the CPU) (BENCH_DEVICES_ONLY=1)
#   3. the Fashion-MNIST demo for FMNIST_STEPS (20) steps on the device, and
#      on the CPU for comparison
#   4. the JIT tests (CUDA graphs) and bench_jit on the device, and the NCCL
#      tests (a CUDA tensor reduced through NCCL in a world of one)
#   5. the golden test suite on the device (TG_DEVICE=dev, one run per golden
#      prefix of tests/main.c), with whatever time is left
# and ends with a summary of the figures. Every step runs under `timeout`,
# and no step starts past the deadline, so one hang costs only its own limit.
#
# Without a GPU it says why and checks the OpenCL device instead when one is
# present (a dry run of this script: PoCL here), else it stops after the
# build. GPU_CHECK_DEVICE=CUDA|CL forces the device under test.
#
# Environment:
#   GPU_CHECK_SECONDS  overall budget in seconds (default 540: the device tool
#                      allows 600 per call)
#   GPU_CHECK_LOG      where the logs go (default $OUT/gpu_check when $OUT is
#                      set, as on the device tool, else build/gpu_check)
#   GPU_CHECK_SKIP     steps to leave out, comma list: build,stories,bench,fmnist,jit,golden
#   BUILD              build directory (default build)
#   JOBS               make -j (default: nproc)
#   CUDA_PATH          the CUDA toolkit (default /usr/local/cuda when present)
#   TG_TESTDATA        the shared test data (stories260K); default
#                      ../shared/testdata, shared/testdata or /work/shared/testdata
#   FMNIST_DIR         Fashion-MNIST .gz files (default /usr/share/datasets/fashion-mnist,
#                      else gpu_data/fashion-mnist in the checkout)
#   FMNIST_STEPS       training steps (default 20)
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
T0=$(date +%s)
BUDGET=${GPU_CHECK_SECONDS:-540}
BUILD=${BUILD:-build}
case "$BUILD" in /*) B=$BUILD;; *) B=$ROOT/$BUILD;; esac
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
if [ -n "${GPU_CHECK_LOG:-}" ]; then LOG=$GPU_CHECK_LOG
elif [ -n "${OUT:-}" ]; then LOG=$OUT/gpu_check
else LOG=$ROOT/$BUILD/gpu_check; fi
mkdir -p "$LOG" || exit 2
SUMMARY=$LOG/summary.txt
: > "$SUMMARY"

say() { echo "== $*"; }
note() { echo "$*" | tee -a "$SUMMARY"; }
elapsed() { echo $(( $(date +%s) - T0 )); }
left() { echo $(( BUDGET - $(date +%s) + T0 )); }
skipped() { case ",${GPU_CHECK_SKIP:-}," in *",$1,"*) return 0;; esac; return 1; }

# run NAME LIMIT CMD...: CMD under timeout (LIMIT, or what the budget has
# left less 20 s for the summary), output to $LOG/NAME.log and the terminal;
# sets RC (124: timed out; 125: not started, no time left).
run() {
  local name=$1 limit=$2; shift 2
  local rest=$(( $(left) - 20 ))
  [ "$rest" -lt "$limit" ] && limit=$rest
  if [ "$limit" -lt 5 ]; then
    echo "(step $name not started: the budget of ${BUDGET}s is spent)" | tee "$LOG/$name.log"
    RC=125; return
  fi
  say "$name (limit ${limit}s, at $(elapsed)s)"
  local s
  s=$(date +%s)
  timeout -k 5 "$limit" "$@" > "$LOG/$name.log" 2>&1
  RC=$?
  local dt=$(( $(date +%s) - s ))
  tail -n 40 "$LOG/$name.log"
  if [ "$RC" = 124 ] || [ "$RC" = 137 ]; then echo "!! $name timed out after ${limit}s"; RC=124; fi
  echo "-- $name: exit $RC in ${dt}s"
  STEP_SECONDS=$dt
}

# ---------------------------------------------------------------- machine
say "machine: $(uname -srm), $(nproc 2>/dev/null) cores, $(date -u +%FT%TZ)"
note "gpu_check: $(git log -1 --format='%h %s' 2>/dev/null | cut -c1-100)"
GPU=none
if command -v nvidia-smi >/dev/null 2>&1; then
  timeout 30 nvidia-smi 2>&1 | tee "$LOG/nvidia-smi.log"
  GPU=$(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n 1)
  DRIVER_CUDA=$(grep -o 'CUDA Version: *[0-9.]*' "$LOG/nvidia-smi.log" | grep -o '[0-9.]*$')
  note "gpu: ${GPU:-nvidia-smi printed no GPU} (driver's CUDA ${DRIVER_CUDA:-?})"
  [ -z "$GPU" ] && GPU=none
else
  note "gpu: none (no nvidia-smi)"
fi
HAVE_LIBCUDA=no
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then HAVE_LIBCUDA=yes
else for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/nvidia/lib64 /usr/lib/wsl/lib; do [ -e "$d/libcuda.so.1" ] && HAVE_LIBCUDA=yes; done; fi
note "driver library libcuda.so.1: $HAVE_LIBCUDA"

# NVRTC (and cuBLAS, for the bench) as tg looks for them: CUDA_PATH/lib64,
# the loader's path, /usr/local/cuda/lib64. Elsewhere (pip's nvidia-* wheels,
# conda) their directory goes onto LD_LIBRARY_PATH.
[ -z "${CUDA_PATH:-}" ] && [ -d /usr/local/cuda ] && export CUDA_PATH=/usr/local/cuda
find_lib() {   # find_lib NAME: the first libNAME.so* found
  local c f
  for c in ${CUDA_PATH:+$CUDA_PATH/lib64 $CUDA_PATH/targets/x86_64-linux/lib} /usr/local/cuda*/lib64 /usr/lib/x86_64-linux-gnu /usr/lib64 /opt/conda/lib; do
    for f in "$c"/lib"$1".so*; do
      case "$f" in *builtins*|*.alt.so*|*"*"*) ;; *) [ -e "$f" ] && { echo "$f"; return 0; };; esac
    done
  done
  ldconfig -p 2>/dev/null | grep -o "/[^ ]*lib$1\.so[.0-9]*\$" | head -n 1 | grep . && return 0
  python3 - "$1" 2>/dev/null <<'EOF' | grep .
import glob, os, site, sys
for p in site.getsitepackages() + [site.getusersitepackages()]:
    for f in sorted(glob.glob(os.path.join(p, "nvidia", "*", "lib", "lib%s.so*" % sys.argv[1]))):
        print(f); sys.exit(0)
EOF
}
NVRTC=$(find_lib nvrtc)
CUBLAS=$(find_lib cublas)
for l in "$NVRTC" "$CUBLAS"; do
  [ -n "$l" ] || continue
  d=$(dirname "$l")
  case "$d" in "${CUDA_PATH:-/nonexistent}"/lib64|/usr/local/cuda/lib64) ;;
    *) case ":${LD_LIBRARY_PATH:-}:" in *":$d:"*) ;; *) export LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH};; esac;; esac
done
NVRTC_MAJOR=$(basename "${NVRTC:-x}" | grep -o 'so\.[0-9]*' | grep -o '[0-9]*$')
[ -z "$NVRTC_MAJOR" ] && [ -n "$NVRTC" ] && NVRTC_MAJOR=$(readlink -f "$NVRTC" | grep -o 'so\.[0-9]*' | head -n 1 | grep -o '[0-9]*$')
if [ -n "$NVRTC" ]; then note "nvrtc: $NVRTC (major ${NVRTC_MAJOR:-?})"
else note "nvrtc: NOT FOUND (no CUDA toolkit at ${CUDA_PATH:-/usr/local/cuda}, none on the loader path): tg cannot compile CUDA kernels, every CUDA step fails"; fi
note "cublas: ${CUBLAS:-not found (the sgemm device lines have no reference)}"
if [ -n "${DRIVER_CUDA:-}" ] && [ -n "$NVRTC_MAJOR" ] && [ "$NVRTC_MAJOR" -gt "${DRIVER_CUDA%%.*}" ] 2>/dev/null; then
  note "WARNING: NVRTC $NVRTC_MAJOR is newer than the driver (CUDA $DRIVER_CUDA): its PTX may not load (CUDA_ERROR_UNSUPPORTED_PTX_VERSION); set CUDA_PATH to an older toolkit"
fi

DEV=${GPU_CHECK_DEVICE:-}
if [ -z "$DEV" ]; then
  if [ "$GPU" != none ] && [ "$HAVE_LIBCUDA" = yes ]; then DEV=CUDA; else DEV=CL; fi
fi

# ---------------------------------------------------------------- build
missing=""
for h in cjson/cJSON.h pcre2.h microhttpd.h; do
  printf '#define PCRE2_CODE_UNIT_WIDTH 8\n#include <stdarg.h>\n#include <stddef.h>\n#include <sys/types.h>\n#include <sys/socket.h>\n#include <%s>\n' "$h" |
    ${CC:-cc} -E -x c - >/dev/null 2>&1 || missing="$missing $h"
done
[ -n "$missing" ] && note "build: headers missing:$missing (Debian: libcjson-dev libpcre2-dev libmicrohttpd-dev); the build will fail"
BENCHES="$BUILD/bench/bench_sgemm $BUILD/bench/bench_elementwise $BUILD/bench/bench_llm $BUILD/bench/bench_jit"
if ! skipped build; then
  run build 300 make -j"$JOBS" BUILD="$BUILD" all "$BUILD/tests/tg_tests" $BENCHES
  if [ "$RC" = 0 ]; then note "build: ok in ${STEP_SECONDS}s (make -j$JOBS)"
  else note "build: FAILED (exit $RC; $LOG/build.log):"; grep -m 5 -i 'error' "$LOG/build.log" | tee -a "$SUMMARY"; fi
  run build_fmnist 60 make -j"$JOBS" BUILD="$BUILD" "$BUILD/examples/fashion_mnist"
  [ "$RC" = 0 ] || note "build: examples/fashion_mnist not built (zlib1g-dev missing?)"
fi
if [ ! -x "$BUILD/tg" ]; then note "no $BUILD/tg: stopping"; cat "$SUMMARY"; exit 1; fi

run devices 30 "$BUILD/tg" devices
cat "$LOG/devices.log" >> "$SUMMARY"
if ! grep -q "^$DEV " "$LOG/devices.log"; then
  note "device under test $DEV is not present: $(grep "^$DEV:" "$LOG/devices.log" || echo '?'); stopping after the build"
  echo; echo "== summary ($(elapsed)s)"; cat "$SUMMARY"; exit 1
fi
[ "$DEV" = CUDA ] || note "no usable GPU: checking $DEV instead (a dry run of this script)"

# ---------------------------------------------------------------- stories260K
TESTDATA=""
for d in "${TG_TESTDATA:-}" "$ROOT/../shared/testdata" "$ROOT/shared/testdata" /work/shared/testdata; do
  [ -n "$d" ] && [ -f "$d/models/stories260K.gguf" ] && { TESTDATA=$d; break; }
done
STORIES=${TESTDATA:+$TESTDATA/models/stories260K.gguf}
if skipped stories; then :
elif [ -z "$STORIES" ]; then note "stories260K: skipped (no models/stories260K.gguf in TG_TESTDATA, ../shared/testdata, shared/testdata)"
else
  prompt="Once upon a time"
  # the text on stdout (the log), --stats on stderr: "prompt: ..., generated: N tokens, X tok/s"
  run stories_cpu 60 sh -c 'TG_DEVICE=CPU "$0" run -m "$1" -p "$2" -n 100 --temp 0 --stats 2>"$3"' \
    "$BUILD/tg" "$STORIES" "$prompt" "$LOG/stories_cpu.stats"
  run stories_dev 120 sh -c 'TG_DEVICE="$4" "$0" run -m "$1" -p "$2" -n 100 --temp 0 --stats 2>"$3"' \
    "$BUILD/tg" "$STORIES" "$prompt" "$LOG/stories_dev.stats" "$DEV"
  text() { cat "$LOG/$1.log"; }
  speed() { grep -o 'generated: [0-9]* tokens, [0-9.]* tok/s' "$LOG/$1.stats" | grep -o '[0-9.]* tok/s'; }
  if [ "$RC" = 0 ] && [ -n "$(text stories_dev)" ] && [ "$(text stories_cpu)" = "$(text stories_dev)" ]; then
    note "stories260K greedy ($DEV vs CPU): same text; decode $DEV $(speed stories_dev), CPU $(speed stories_cpu)"
  else
    note "stories260K greedy ($DEV vs CPU): DIFFERENT or failed (exit $RC); see $LOG/stories_*: $(tail -n 2 "$LOG/stories_dev.stats" | tr '\n' ' ')"
    diff <(text stories_cpu) <(text stories_dev) | head -n 6 | tee -a "$SUMMARY"
  fi
fi

# ---------------------------------------------------------------- benches
if ! skipped bench; then
  for b in bench_sgemm bench_elementwise bench_llm; do
    lim=120; [ $b = bench_sgemm ] && lim=180
    run "$b" "$lim" env BENCH_DEVICES_ONLY=1 BENCH_DEVICES="$DEV" ${TESTDATA:+TG_TESTDATA=$TESTDATA} "$BUILD/bench/$b"
    grep -E '^bench ' "$LOG/$b.log" | grep -v 'skipped reason=device_absent\|not_in_BENCH_DEVICES' >> "$SUMMARY"
    [ "$RC" = 0 ] || note "$b: exit $RC$([ "$RC" = 124 ] && echo ' (timed out)'); $(grep -m 1 'bench FAIL' "$LOG/$b.log")"
  done
fi

# ---------------------------------------------------------------- Fashion-MNIST
FM=""
for d in "${FMNIST_DIR:-}" /usr/share/datasets/fashion-mnist "$ROOT/gpu_data/fashion-mnist"; do
  [ -n "$d" ] && [ -f "$d/train-images-idx3-ubyte.gz" ] && { FM=$d; break; }
done
STEPS=${FMNIST_STEPS:-20}
if skipped fmnist; then :
elif [ ! -x "$BUILD/examples/fashion_mnist" ]; then note "fashion_mnist: skipped (not built)"
elif [ -z "$FM" ]; then note "fashion_mnist: skipped (no dataset: FMNIST_DIR, /usr/share/datasets/fashion-mnist or gpu_data/fashion-mnist)"
else
  for d in "$DEV" CPU; do
    run "fmnist_$d" 150 env TG_DEVICE="$d" "$BUILD/examples/fashion_mnist" "$STEPS" "$FM"
    r=$(grep '^result ' "$LOG/fmnist_$d.log" | tail -n 1)
    if [ -n "$r" ]; then note "fashion_mnist $d: $r (chance: accuracy 0.1)"
    else note "fashion_mnist $d: no result (exit $RC); $(grep -v '^\[' "$LOG/fmnist_$d.log" | tr '\r' '\n' | grep -v '^\[' | tail -n 2 | tr '\n' ' ')"; fi
  done
fi

# ---------------------------------------------------------------- JIT on the device
# The JIT's replays on the device (CUDA: its batches as CUDA graphs), and
# bench_jit's per-kernel replay cost there.
if ! skipped jit; then
  run jit_tests 120 env TG_BIN="$B/tg" sh -c 'cd tests && exec "$0" "$1"' "$B/tests/tg_tests" jit_
  note "jit tests: $(grep -c '^ok ' "$LOG/jit_tests.log") passed, $(grep -c '^FAIL ' "$LOG/jit_tests.log") failed ($(grep -A2 '^FAIL ' "$LOG/jit_tests.log" | head -n 3 | tr '\n' ' '))"
  grep -E '^(ok|skip) +jit_cuda' "$LOG/jit_tests.log" | tee -a "$SUMMARY"
  run bench_jit 60 env TG_DEVICE="$DEV" "$BUILD/bench/bench_jit"
  grep -E '^bench ' "$LOG/bench_jit.log" >> "$SUMMARY"
  # NCCL on a CUDA tensor's memory (a world of one: one GPU here)
  run nccl_tests 60 env TG_BIN="$B/tg" sh -c 'cd tests && exec "$0" "$1"' "$B/tests/tg_tests" dist_nccl
  grep -E '^(ok|FAIL|skip)|info:' "$LOG/nccl_tests.log" | tee -a "$SUMMARY"
fi

# ---------------------------------------------------------------- goldens
# The golden tests (tests/main.c golden_prefixes) with the device as the
# default, as the suite's own CUDA/ pass runs them, but without the CPU run
# of the whole suite before it: one run per prefix (a test name filter).
if ! skipped golden; then
  prefixes=$(sed -n 's/.*golden_prefixes\[\] = {\(.*\)};.*/\1/p' tests/main.c | tr -d '" ' | tr ',' ' ')
  [ -z "$prefixes" ] && prefixes="ops_ math_ movement_ nn_golden autograd_ layers_golden layers_optim random_ dtype_encode llm_stories260k"
  : > "$LOG/golden.log"
  for p in $prefixes; do
    run "golden_$p" 240 env TG_DEVICE="$DEV" TG_TEST_PASSES=none TG_BIN="$B/tg" \
      sh -c 'cd tests && exec "$0" "$1"' "$B/tests/tg_tests" "$p"
    grep -E "^(ok   |FAIL |skip )$p" "$LOG/golden_$p.log" >> "$LOG/golden.log"   # the filter is a substring: golden names only
    [ "$RC" = 125 ] && { note "golden $DEV: prefixes from $p on not run (no time left)"; break; }
    [ "$RC" = 124 ] && note "golden $DEV: $p timed out"
    case "$RC" in 0|1|124|125) ;; *) note "golden $DEV: $p exited $RC (a crash?): $(tail -n 1 "$LOG/golden_$p.log")";; esac
  done
  ok=$(grep -c '^ok ' "$LOG/golden.log"); bad=$(grep -c '^FAIL ' "$LOG/golden.log"); sk=$(grep -c '^skip ' "$LOG/golden.log")
  note "golden tests on $DEV: $ok passed, $bad failed, $sk skipped ($LOG/golden.log)"
  grep '^FAIL ' "$LOG/golden.log" | head -n 30 | tee -a "$SUMMARY"
fi

echo
echo "== summary ($(elapsed)s of ${BUDGET}s; logs in $LOG)"
cat "$SUMMARY"
