# tg: one `make` builds build/libtg.a, build/libtg.so and build/tg.
# `make test` builds and runs the suite (FILTER=substring runs some of it); `make test SAN=1`
# runs it under ASan+UBSan, `make test TSAN=1` under ThreadSanitizer.
# `make install PREFIX=/usr/local` (DESTDIR too) installs the headers, both libraries, tg and tg.pc.
# `make fuzz FUZZ_SECONDS=N` builds the libFuzzer harnesses of fuzz/ and runs each N seconds
# (FUZZ_RUNS=N: or until N executions).
CC      ?= cc
BUILD   ?= build
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -fPIC -Iinclude -Isrc -pthread
LDLIBS  += -lm -ldl -pthread -lcjson -lpcre2-8 -lmicrohttpd
ifeq ($(SAN),1)
  BUILD   := build-san
  # float-cast-overflow is not in gcc's (nor clang's) "undefined" group
  CFLAGS  += -fsanitize=address,undefined,float-cast-overflow -fno-omit-frame-pointer -fno-sanitize-recover=undefined,float-cast-overflow
  LDFLAGS += -fsanitize=address,undefined,float-cast-overflow
endif
ifeq ($(TSAN),1)
  BUILD   := build-tsan
  CFLAGS  += -fsanitize=thread -fno-omit-frame-pointer
  LDFLAGS += -fsanitize=thread
endif
# The fuzz build (see the fuzz target below): the library again, by clang,
# with libFuzzer's coverage, ASan and UBSan; every finding aborts.
FUZZ_SAN := -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer
# The graph machinery compares pointers and node ids in its hash tables on
# every step, a grammar's matcher state ids: value profiles of those
# comparisons guide no mutation and took a third of fuzz_gguf_load's time,
# three quarters of fuzz_gbnf's, so there the build keeps edge coverage only
# (the parsers of files, grammars and templates keep both).
FUZZ_NO_CMP := uop schedule codegen engine renderer runtime jit tensor util
FUZZ_NO_CMP_FILES := src/grammar/grammar.c src/grammar/grammar_match.c src/grammar/grammar_mask.c
ifeq ($(FUZZ),1)
  CC      := clang
  CFLAGS  += -fsanitize=fuzzer-no-link $(FUZZ_SAN)
  LDFLAGS += $(FUZZ_SAN)
$(FUZZ_NO_CMP:%=$(BUILD)/src/%/%.o) $(FUZZ_NO_CMP_FILES:%.c=$(BUILD)/%.o): CFLAGS += -fno-sanitize-coverage=trace-cmp
endif

TG_VERSION   := 0.2.0
TG_SOVERSION := 0

LIB_SRC   := $(sort $(wildcard src/*/*.c))
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o)
TEST_SRC  := $(sort $(wildcard tests/*.c))
TEST_OBJ  := $(TEST_SRC:%.c=$(BUILD)/%.o)
BENCH_SRC := $(sort $(wildcard bench/*.c))
BENCH_BEAM_SRC := bench/bench_sgemm.c bench/bench_matvec.c bench/bench_conv.c
EX_SRC    := $(sort $(wildcard examples/*.c))
TOOL_SRC  := $(sort $(wildcard tools/*.c))
TOOL_OBJ  := $(TOOL_SRC:%.c=$(BUILD)/%.o)

all: $(BUILD)/libtg.a $(BUILD)/libtg.so $(BUILD)/tg

$(BUILD)/%.o: %.c $(wildcard include/*.h src/*/*.h tools/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# The library exports only what include/*.h marks TG_API (include/tg_api.h).
$(BUILD)/src/%.o $(BUILD)/gen/%.o: CFLAGS += -fvisibility=hidden

# The quantizers must round exactly as ggml's C code does: no a*b+c fused
# into one FMA (see src/quant/quantize.h).
$(BUILD)/src/quant/quantize_%.o: CFLAGS += -ffp-contract=off

# The float-conversion helpers are compiled into the library and also pasted,
# as text, into generated kernels: one source for both.
$(BUILD)/gen/kernel_prelude.c: src/dtype/fpconv.h
	@mkdir -p $(dir $@)
	@{ echo 'const char tg_kernel_prelude_fpconv[] = {'; od -An -v -tx1 $< | sed 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; echo '0};'; } > $@
# The VIZ web page's files, compiled in as arrays (src/viz/web/embed.sh).
VIZ_WEB := $(sort $(wildcard src/viz/web/*.html src/viz/web/*.css src/viz/web/*.js))
$(BUILD)/gen/viz_web_assets.c: src/viz/web/embed.sh $(VIZ_WEB)
	@mkdir -p $(dir $@)
	@sh src/viz/web/embed.sh $@ $(VIZ_WEB)
GEN_OBJ := $(BUILD)/gen/kernel_prelude.o $(BUILD)/gen/viz_web_assets.o
$(GEN_OBJ): %.o: %.c
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libtg.a: $(LIB_OBJ) $(GEN_OBJ)
	@rm -f $@
	ar rcs $@ $^
# The shared library carries its major version in its soname:
# libtg.so -> libtg.so.0 -> libtg.so.0.2.0 (a program records libtg.so.0).
$(BUILD)/libtg.so.$(TG_VERSION): $(LIB_OBJ) $(GEN_OBJ)
	$(CC) -shared -Wl,-soname,libtg.so.$(TG_SOVERSION) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/libtg.so.$(TG_SOVERSION): $(BUILD)/libtg.so.$(TG_VERSION)
	ln -sf $(notdir $<) $@
$(BUILD)/libtg.so: $(BUILD)/libtg.so.$(TG_SOVERSION)
	ln -sf $(notdir $<) $@
$(BUILD)/tg: $(TOOL_OBJ) $(BUILD)/libtg.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/tg_tests: $(TEST_OBJ) $(BUILD)/libtg.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# the program test_dist starts under mpirun, one process per rank
$(BUILD)/tests/dist_worker: tests/dist/dist_worker.c $(BUILD)/libtg.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< -o $@ $(BUILD)/libtg.a $(LDLIBS)

# a stand-in for libnccl that records tg's calls (test_dist, no GPU needed)
$(BUILD)/tests/libfake_nccl.so: tests/dist/fake_nccl.c tests/dist/fake_nccl.h src/dist/dist_nccl.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -shared $< -o $@

test: all $(BUILD)/tests/tg_tests $(BUILD)/tests/dist_worker $(BUILD)/tests/libfake_nccl.so $(BUILD)/examples/fashion_mnist
	cd tests && TG_BIN=../$(BUILD)/tg LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp ../$(BUILD)/tests/tg_tests $(FILTER)

# Installing (docs/install.md): headers in $(PREFIX)/include, libtg.a and the
# libtg.so links in $(PREFIX)/lib, tg in $(PREFIX)/bin, and tg.pc for
# pkg-config (`cc prog.c $$(pkg-config --cflags --libs tg)`). DESTDIR stages
# the tree elsewhere (packaging); tg.pc still names $(PREFIX).
PREFIX     ?= /usr/local
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR     ?= $(PREFIX)/bin

$(BUILD)/tg.pc: tg.pc.in FORCE
	@sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|; s|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	  -e 's|@VERSION@|$(TG_VERSION)|; s|@LIBS_PRIVATE@|$(LDLIBS)|' $< > $@.tmp
	@cmp -s $@.tmp $@ && rm $@.tmp || mv $@.tmp $@

install: all $(BUILD)/tg.pc
	install -d $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(BINDIR)
	install -m 644 include/*.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 $(BUILD)/libtg.a $(DESTDIR)$(LIBDIR)/
	install -m 755 $(BUILD)/libtg.so.$(TG_VERSION) $(DESTDIR)$(LIBDIR)/
	ln -sf libtg.so.$(TG_VERSION) $(DESTDIR)$(LIBDIR)/libtg.so.$(TG_SOVERSION)
	ln -sf libtg.so.$(TG_SOVERSION) $(DESTDIR)$(LIBDIR)/libtg.so
	install -m 755 $(BUILD)/tg $(DESTDIR)$(BINDIR)/
	install -m 644 $(BUILD)/tg.pc $(DESTDIR)$(LIBDIR)/pkgconfig/

.PHONY: install

# Benchmarks (docs/benchmarks.md). Only bench_sgemm links OpenBLAS, and only
# when a program including cblas.h links with -lopenblas here (Debian:
# libopenblas-dev); otherwise it prints a "skipped" line. The stamp rebuilds it
# when that changes.
BENCH_CFLAGS   = -O3 -march=native -fopenmp -DBENCH_DIR='"$(CURDIR)/bench"' -DBENCH_BUILD='"$(BUILD)"'
BENCH_OPENBLAS = $(shell echo 'int main(void) { float x = 0; return (int)cblas_sdot(1, &x, 1, &x, 1); }' | \
                   $(CC) -include cblas.h -x c - -o /dev/null -lopenblas >/dev/null 2>&1 && echo yes)

$(BUILD)/bench/%: bench/%.c $(wildcard bench/*.h) $(BUILD)/libtg.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BENCH_CFLAGS) $< -o $@ $(BUILD)/libtg.a $(LDLIBS) -fopenmp

$(BUILD)/bench/openblas.stamp: FORCE
	@mkdir -p $(dir $@)
	@echo 'openblas=$(BENCH_OPENBLAS)' | cmp -s - $@ || echo 'openblas=$(BENCH_OPENBLAS)' > $@

$(BUILD)/bench/bench_sgemm: bench/bench_sgemm.c $(wildcard bench/*.h) $(BUILD)/libtg.a $(BUILD)/bench/openblas.stamp
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BENCH_CFLAGS) $(if $(BENCH_OPENBLAS),-DBENCH_HAVE_OPENBLAS) $< -o $@ $(BUILD)/libtg.a \
	  $(if $(BENCH_OPENBLAS),-lopenblas) $(LDLIBS) -fopenmp

# Every bench with tg's heuristic, then the ones where kernel search matters
# with BEAM=$(BENCH_BEAM) (0 leaves them out; a first search takes seconds
# per kernel, then the choice is cached). A library without BEAM
# search (no "BEAM" in it) gets a "beam=n/a" line instead.
BENCH_BEAM ?= 2
BENCH_HAS_BEAM = $(shell grep -qaw BEAM $(BUILD)/libtg.a 2>/dev/null && echo yes)
bench: all $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
	@$(MAKE) --no-print-directory $(BUILD)/examples/fashion_mnist >/dev/null 2>&1 || echo "(no zlib: bench_fmnist will skip)"
	@for b in $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%); do env -u BEAM $$b || exit 1; done
	@python3 bench/soak_serve.py $(BUILD)/tg || exit 1
	@python3 bench/bench_serve_parallel.py $(BUILD)/tg || exit 1
	@python3 bench/bench_ttft.py $(BUILD)/tg || exit 1
	@python3 bench/llm_types_agree.py $(BUILD)/tg || exit 1
	@python3 bench/llm_decode_cpu.py $(BUILD)/tg || exit 1
	@python3 bench/llm_families.py $(BUILD)/tg || exit 1
	@if [ "$(BENCH_BEAM)" = 0 ]; then :; \
	elif [ -z "$(BENCH_HAS_BEAM)" ]; then echo "bench beam skipped beam=n/a reason=tg_has_no_BEAM_search_yet"; \
	else for b in $(BENCH_BEAM_SRC:bench/%.c=$(BUILD)/bench/%); do BEAM=$(BENCH_BEAM) $$b || exit 1; done; fi

$(BUILD)/examples/%: examples/%.c $(BUILD)/libtg.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< -o $@ $(BUILD)/libtg.a $(LDLIBS) $(EXAMPLE_LIBS)

# the Fashion-MNIST example reads gzip files (zlib1g-dev)
$(BUILD)/examples/fashion_mnist: EXAMPLE_LIBS = -lz

examples: $(EX_SRC:examples/%.c=$(BUILD)/examples/%)

demo: all $(BUILD)/examples/demo
	./$(BUILD)/examples/demo

# Fuzzers (docs/security.md): one libFuzzer binary per fuzz/fuzz_*.c, over
# the library built by clang into $(FUZZ_BUILD) (needs clang's libFuzzer:
# Debian libclang-rt-14-dev or libclang-common-15-dev). `make fuzz` runs each
# for FUZZ_SECONDS over its corpus in fuzz/corpus/ (seeded on first use by
# fuzz/make_corpus.py from ../shared/testdata and tests/goldens); any crash,
# sanitizer report, leak, timeout or out-of-memory fails it. FUZZ_ONLY=
# "gguf npy" runs some of them; FUZZ_RUNS=N stops each after N executions too.
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_ONLY    ?=
FUZZ_RUNS    ?=
FUZZ_SRC     := $(sort $(wildcard fuzz/fuzz_*.c))

$(BUILD)/fuzz/%: fuzz/%.c fuzz/fuzz.h $(BUILD)/libtg.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itools -fsanitize=fuzzer $< $(filter %.o,$^) -o $@ $(BUILD)/libtg.a $(LDFLAGS) $(LDLIBS)
$(BUILD)/fuzz/fuzz_gguf: $(BUILD)/tools/cmd_gguf.o

fuzz-bins: $(FUZZ_SRC:fuzz/%.c=$(BUILD)/fuzz/%)
fuzz-build:
	$(MAKE) FUZZ=1 BUILD=$(FUZZ_BUILD) fuzz-bins
fuzz: fuzz-build
	FUZZ_RUNS=$(FUZZ_RUNS) fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_ONLY)

.PHONY: fuzz fuzz-build fuzz-bins

clean:
	rm -rf build build-san build-tsan build-fuzz

.PHONY: all test bench examples demo clean FORCE

# Regenerates the committed test goldens (needs numpy, ml_dtypes, torch from PyPI).
goldens:
	@for g in tests/gen/gen_*.py; do echo "python3 $$g"; python3 $$g || exit 1; done

.PHONY: goldens

# Trains the beautiful_mnist CNN on Fashion-MNIST (Debian's dataset-fashion-mnist),
# installing the dataset and zlib first when missing. STEPS=n sets the steps.
train:
	@test -d /usr/share/datasets/fashion-mnist -a -f /usr/include/zlib.h || { echo "installing dataset-fashion-mnist zlib1g-dev"; \
	  apt-get install -y dataset-fashion-mnist zlib1g-dev || sudo apt-get install -y dataset-fashion-mnist zlib1g-dev; }
	$(MAKE) all $(BUILD)/examples/fashion_mnist
	./$(BUILD)/examples/fashion_mnist $(STEPS)

.PHONY: train
