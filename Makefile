# headroom — build with `make`; `make check` runs every test (unit, ASan/UBSan, CLI).
CC      ?= cc
# MHD=0 builds without libmicrohttpd's header (watch --prometheus then says so): for
# machines without it (the GPU machine has it in .devdeps: tools/make-devdeps). The
# library itself is never linked: watch --prometheus loads it (src/watch/prom.c says why).
MHD     ?= 1
PKGS    := jansson sqlite3 inih yaml-0.1 libpcre2-8
ifeq ($(MHD),1)
MHD_CFLAGS := $(shell pkg-config --cflags libmicrohttpd)
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
ALL_CFLAGS  = -Isrc $(CPPFLAGS) $(WARN) $(NO_MHD) $(CFLAGS) $(PKG_CFLAGS) $(MHD_CFLAGS) -MMD -MP
LDLIBS      = $(PKG_LIBS) -lm -ldl -lpthread
AR      ?= ar

BUILD   ?= build
# libheadroom.a is every room but the commands; the unit tests link against it alone, so
# that no library code can lean on a command (tools/check-layers checks the includes).
LIB_SRC := $(filter-out src/cmd/%,$(wildcard src/*/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB     := $(BUILD)/libheadroom.a
CMD_SRC := $(wildcard src/cmd/*.c) src/main.c
CMD_OBJ := $(CMD_SRC:%.c=$(BUILD)/%.o)
# headroom-exec, the launcher alone (src/exec_main.c says why), is linked statically:
# LAUNCHER_STATIC= links it like headroom (the sanitizers need that).
LAUNCHER_OBJ := $(BUILD)/src/exec_main.o $(BUILD)/src/cmd/exec.o
LAUNCHER_STATIC ?= -static
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/fuzz/%)
# The fuzz targets are built with clang's libFuzzer (Debian: clang, libclang-rt-14-dev);
# make check runs each FUZZ_SECONDS, bench/fuzz longer.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 5

all: headroom headroom-exec tools/memhog $(BUILD)/nvml-double/libnvidia-ml.so.1

# The NVML test double (tests/nvml-double): found through LD_LIBRARY_PATH by the tests.
$(BUILD)/nvml-double/libnvidia-ml.so.1: tests/nvml-double/nvml_double.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) $(LDFLAGS) -fPIC -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ $<

headroom: $(BUILD)/headroom
	cp $< $@.tmp && mv -f $@.tmp $@

headroom-exec: $(BUILD)/headroom-exec
	cp $< $@.tmp && mv -f $@.tmp $@

$(LIB): $(LIB_OBJ)
	rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/headroom: $(CMD_OBJ) $(LIB)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/headroom-exec: $(LAUNCHER_OBJ) $(LIB)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $(LAUNCHER_STATIC) -o $@ $^ $(LDLIBS)

# Replays a recorded allocator history through the simulation (bench/gpu/gpu-measure.py TRACE).
bench/plan/alloc-replay: bench/plan/alloc-replay.c $(LIB)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# headroom with the plan's allocations written out (bench/plan/plan-trace.c says how).
bench/plan/plan-trace: bench/plan/plan-trace.c $(CMD_OBJ) $(LIB)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -Wl,--wrap=alloc_sim_malloc_on,--wrap=alloc_sim_release,--wrap=sim_train,--wrap=sim_infer -o $@ $^ $(LDLIBS)

bench/build/simulate: bench/build/simulate.c $(LIB)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

tools/memhog: tools/memhog.c
	$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) $(LDFLAGS) -o $@ $< -lm

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS) -lcmocka

$(BUILD)/fuzz/%: tests/fuzz/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer $(LDFLAGS) -o $@ $^ $(LDLIBS)

fuzz-bins: $(FUZZ_BIN)

# The library and the targets under libFuzzer, ASan and UBSan, in build-fuzz.
fuzz:
	$(MAKE) BUILD=build-fuzz CC=$(FUZZ_CC) \
	  CFLAGS="-O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	  LDFLAGS="-fsanitize=address,undefined" fuzz-bins

# The smoke run of make check: each target FUZZ_SECONDS from its committed corpus.
fuzz-smoke: fuzz
	tests/fuzz/run build-fuzz $(FUZZ_SECONDS)

# test_proto runs the launcher as build tools do: this build's headroom exec.
unit: $(UNIT_BIN) $(BUILD)/headroom $(BUILD)/headroom-exec
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; HEADROOM_BIN=$(BUILD)/headroom $$t; done

# The same unit tests under AddressSanitizer and UndefinedBehaviorSanitizer.
asan:
	$(MAKE) BUILD=build-asan WERROR=1 LAUNCHER_STATIC= \
	  CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	  LDFLAGS="-fsanitize=address,undefined" unit

cli: all
	bats tests/cli

# The planner's golden file: every fixture case planned as the committed file has it
# (tests/golden/check, a step of make check); `make golden` rewrites it after a change
# meant to move plans (commit it with the change).
golden-check: $(BUILD)/headroom
	HEADROOM_BIN=$(BUILD)/headroom tests/golden/check

golden: $(BUILD)/headroom
	HEADROOM_BIN=$(BUILD)/headroom bench/plan/plan-snapshot tests/golden/plan-snapshot.txt

check: all
	tests/run-all

# make install [PREFIX=/usr/local] [DESTDIR=staging root]: the two programs, the man page
# and the shell completions (debian/rules installs with PREFIX=/usr).
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
MANDIR  ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR  ?= $(PREFIX)/share/zsh/vendor-completions

install: headroom headroom-exec
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR)
	install -m 755 headroom headroom-exec $(DESTDIR)$(BINDIR)/
	install -m 644 docs/headroom.1 $(DESTDIR)$(MANDIR)/man1/headroom.1
	install -m 644 completion/headroom.bash $(DESTDIR)$(BASHCOMPDIR)/headroom
	install -m 644 completion/_headroom $(DESTDIR)$(ZSHCOMPDIR)/_headroom

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/headroom $(DESTDIR)$(BINDIR)/headroom-exec $(DESTDIR)$(MANDIR)/man1/headroom.1 \
	  $(DESTDIR)$(BASHCOMPDIR)/headroom $(DESTDIR)$(ZSHCOMPDIR)/_headroom

clean:
	rm -rf build build-asan build-fuzz headroom headroom-exec tools/memhog bench/plan/alloc-replay bench/build/simulate bench/plan/plan-trace

.PHONY: all unit asan fuzz fuzz-bins fuzz-smoke cli golden golden-check check clean install uninstall
-include $(LIB_OBJ:.o=.d) $(CMD_OBJ:.o=.d) $(BUILD)/src/exec_main.d
