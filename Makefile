# headroom — build with `make`; `make check` runs every test (unit, ASan/UBSan, CLI).
CC      ?= cc
# MHD=0 builds without libmicrohttpd (watch --prometheus then says so): for machines
# without its headers, such as the GPU machine.
MHD     ?= 1
PKGS    := jansson sqlite3
ifeq ($(MHD),1)
PKGS    += libmicrohttpd
else
NO_MHD  := -DHEADROOM_NO_MHD
endif
CFLAGS  ?= -O2 -g
WARN    := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wstrict-prototypes \
           -Wmissing-prototypes -Wformat=2 -Wno-format-nonliteral
ifeq ($(WERROR),1)
WARN    += -Werror
endif
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
PKG_LIBS   := $(shell pkg-config --libs $(PKGS))
ALL_CFLAGS  = $(WARN) $(NO_MHD) $(CFLAGS) $(PKG_CFLAGS) -Isrc -MMD -MP
LDLIBS      = $(PKG_LIBS) -lm -ldl -lpthread

BUILD   ?= build
LIB_SRC := $(wildcard src/util/*.c src/sys/*.c src/govern/*.c src/store/*.c src/plan/*.c src/watch/*.c src/cmd/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

all: headroom tools/memhog $(BUILD)/nvml-double/libnvidia-ml.so.1

# The NVML test double (tests/nvml-double): found through LD_LIBRARY_PATH by the tests.
$(BUILD)/nvml-double/libnvidia-ml.so.1: tests/nvml-double/nvml_double.c
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) -fPIC -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ $<

headroom: $(BUILD)/headroom
	cp $< $@.tmp && mv -f $@.tmp $@

$(BUILD)/headroom: $(LIB_OBJ) $(BUILD)/src/main.o
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

# Replays a recorded allocator history through the simulation (bench/gpu-measure.py TRACE).
bench/alloc-replay: bench/alloc-replay.c $(LIB_OBJ)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

tools/memhog: tools/memhog.c
	$(CC) $(WARN) $(CFLAGS) -o $@ $< -lm

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS) -lcmocka

unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t; done

# The same unit tests under AddressSanitizer and UndefinedBehaviorSanitizer.
asan:
	$(MAKE) BUILD=build-asan WERROR=1 \
	  CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	  LDFLAGS="-fsanitize=address,undefined" unit build-asan/headroom

cli: all
	bats tests/cli

check: all
	tests/run-all

clean:
	rm -rf build build-asan headroom tools/memhog bench/alloc-replay

.PHONY: all unit asan cli check clean
-include $(LIB_OBJ:.o=.d) $(BUILD)/src/main.d
