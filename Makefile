# tg: one `make` builds build/libtg.a, build/libtg.so and build/tg.
# `make test` builds and runs the suite; `make test SAN=1` runs it under ASan+UBSan.
CC      ?= cc
BUILD   ?= build
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -fPIC -Iinclude -Isrc -pthread
LDLIBS  += -lm -ldl -pthread
ifeq ($(SAN),1)
  BUILD   := build-san
  CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
  LDFLAGS += -fsanitize=address,undefined
endif

LIB_SRC   := $(sort $(wildcard src/*/*.c))
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o)
TEST_SRC  := $(sort $(wildcard tests/*.c))
TEST_OBJ  := $(TEST_SRC:%.c=$(BUILD)/%.o)
BENCH_SRC := $(sort $(wildcard bench/*.c))
EX_SRC    := $(sort $(wildcard examples/*.c))

all: $(BUILD)/libtg.a $(BUILD)/libtg.so $(BUILD)/tg

$(BUILD)/%.o: %.c $(wildcard include/*.h src/*/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# The float-conversion helpers are compiled into the library and also pasted,
# as text, into generated kernels: one source for both.
$(BUILD)/gen/kernel_prelude.c: src/dtype/fpconv.h
	@mkdir -p $(dir $@)
	@{ echo 'const char tg_kernel_prelude_fpconv[] = {'; od -An -v -tx1 $< | sed 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; echo '0};'; } > $@
$(BUILD)/gen/kernel_prelude.o: $(BUILD)/gen/kernel_prelude.c
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libtg.a: $(LIB_OBJ) $(BUILD)/gen/kernel_prelude.o
	@rm -f $@
	ar rcs $@ $^
$(BUILD)/libtg.so: $(LIB_OBJ) $(BUILD)/gen/kernel_prelude.o
	$(CC) -shared $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/tg: $(BUILD)/tools/tg.o $(BUILD)/libtg.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/tg_tests: $(TEST_OBJ) $(BUILD)/libtg.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

test: all $(BUILD)/tests/tg_tests
	cd tests && ../$(BUILD)/tests/tg_tests

$(BUILD)/bench/%: bench/%.c $(wildcard bench/*.h) $(BUILD)/libtg.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -O3 -march=native -fopenmp $< -o $@ $(BUILD)/libtg.a $(LDLIBS) -fopenmp

bench: all $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
	@for b in $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%); do $$b || exit 1; done

$(BUILD)/examples/%: examples/%.c $(BUILD)/libtg.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< -o $@ $(BUILD)/libtg.a $(LDLIBS)

examples: $(EX_SRC:examples/%.c=$(BUILD)/examples/%)

demo: all $(BUILD)/examples/demo
	./$(BUILD)/examples/demo

clean:
	rm -rf build build-san

.PHONY: all test bench examples demo clean

# Regenerates the committed test goldens (needs numpy, ml_dtypes, torch from PyPI).
goldens:
	@for g in tests/gen/gen_*.py; do echo "python3 $$g"; python3 $$g || exit 1; done

.PHONY: goldens
