# mtrace -- plain Makefile.  See README.md.
#
#   make            build ./mtrace (release flavour)
#   make test       install missing packages, build, lint, run unit + integration tests
#   make asan       unit tests, fuzz regression and integration under ASan+UBSan
#   make ubsan      unit tests, fuzz regression and integration under UBSan alone
#   make tsan       unit + integration tests under TSan
#   make fuzz       libFuzzer targets (FUZZ_SECONDS each, default 600)
#   make bench      benchmarks (never part of `make test`)
#   make lint       clang-format check, banned functions, words of how the work was done
#   make install    PREFIX=/usr/local DESTDIR=
#   make deps       apt-get install what is missing (root)
#   make whatif     deps + build + the what-if workflow on traces/sample.zst (report/)

FLAVOUR ?= release
BUILD := build/$(FLAVOUR)
PREFIX ?= /usr/local
VERSION := 0.1.0

PKGS := libbson-1.0 libpcap libzstd zlib openssl libidn
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lsnappy
CMOCKA_LIBS := $(shell pkg-config --libs cmocka 2>/dev/null || echo -lcmocka)
MONGOC_CFLAGS := $(shell pkg-config --cflags libmongoc-1.0 2>/dev/null)
MONGOC_LIBS := $(shell pkg-config --libs libmongoc-1.0 2>/dev/null)

WARN := -Wall -Wextra -Wshadow -Wcast-qual -Wstrict-prototypes -Wswitch-enum \
        -Wvla -Wformat=2 -Wmissing-prototypes -Wno-unused-parameter
ifeq ($(CI),true)
WARN += -Werror
endif
ifneq ($(WERROR),)
WARN += -Werror
endif

OPT ?= -O2
CFLAGS_BASE := -std=gnu11 -g $(OPT) -fno-strict-aliasing -D_GNU_SOURCE \
               -DMT_VERSION=\"$(VERSION)\" -I. $(PKG_CFLAGS) $(WARN)
ifneq ($(DEBUG),)
CFLAGS_BASE += -DMT_DEBUG
endif

ifeq ($(FLAVOUR),asan)
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
else ifeq ($(FLAVOUR),ubsan)
SANFLAGS := -fsanitize=undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
else ifeq ($(FLAVOUR),tsan)
SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer
else ifeq ($(FLAVOUR),fuzz)
CC := clang
SANFLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
endif

ALL_CFLAGS := $(CFLAGS_BASE) $(SANFLAGS) $(CFLAGS)
LDLIBS_ALL := $(PKG_LIBS) -lpthread -lm

LIB_SRC := $(sort $(wildcard core/*.c capture/*.c replay/*.c play/*.c sim/*.c tools/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB := $(BUILD)/libmtrace.a

UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
HELPER_SRC := $(sort $(wildcard tests/helpers/*.c))
HELPER_BIN := $(HELPER_SRC:tests/helpers/%.c=$(BUILD)/helpers/%)
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_REGRESS := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/tests/%_regress)
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=build/fuzz/%)
BENCH_SRC := $(sort $(wildcard bench/*.c))
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

.PHONY: all test unit integration asan ubsan tsan fuzz fuzz-build bench lint \
        install clean deps check-deps regress helpers soak format whatif FORCE \
        san-integration

# ./mtrace is the release build: `make FLAVOUR=asan` builds build/asan/mtrace
# and leaves ./mtrace alone (scripts and benchmarks run ./mtrace).
ifeq ($(FLAVOUR),release)
all: mtrace
else
all: $(BUILD)/mtrace
endif

mtrace: $(BUILD)/mtrace
	cp $< $@.tmp && mv -f $@.tmp $@

$(BUILD)/mtrace: $(BUILD)/mtrace.o $(LIB)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS_ALL)

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/tests/test_%: tests/unit/test_%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -o $@ $< $(LIB) $(CMOCKA_LIBS) $(LDLIBS_ALL)

$(BUILD)/helpers/%: tests/helpers/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(MONGOC_CFLAGS) -MMD -MP -o $@ $< $(LIB) $(MONGOC_LIBS) $(LDLIBS_ALL) -lpcap

$(BUILD)/tests/%_regress: tests/fuzz/%.c tests/fuzz/regression_driver.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -o $@ $< tests/fuzz/regression_driver.c $(LIB) $(LDLIBS_ALL)

# libFuzzer binaries: built in the fuzz flavour so they relink when the
# fuzz-flavour library changes.
ifeq ($(FLAVOUR),fuzz)
build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(LIB)
	clang $(CFLAGS_BASE) -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -o $@ $< $(LIB) $(LDLIBS_ALL)
else
build/fuzz/fuzz_%: FORCE
	$(MAKE) FLAVOUR=fuzz $@
endif
FORCE:

$(BUILD)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(MONGOC_CFLAGS) -MMD -MP -o $@ $< $(LIB) $(MONGOC_LIBS) $(LDLIBS_ALL)

helpers: $(HELPER_BIN)

# ---- tests ----

check-deps:
	@tools/deps.sh --check-or-install

unit: $(UNIT_BIN)
	@tests/run_unit.sh $(UNIT_BIN)

regress: $(FUZZ_REGRESS)
	@tests/run_regress.sh $(FUZZ_REGRESS)

integration: mtrace $(HELPER_BIN)
	@BUILD=$(BUILD) tests/integration/run.sh

test: check-deps
	$(MAKE) all $(UNIT_BIN) $(FUZZ_REGRESS) $(HELPER_BIN)
	@$(MAKE) -s lint
	@BUILD=$(BUILD) tests/run_all.sh "$(UNIT_BIN)" "$(FUZZ_REGRESS)"

# The integration suite against this flavour's binaries (never copied to
# ./mtrace); sanitizer reports fail the test they appear in (run.sh).
san-integration: $(BUILD)/mtrace $(HELPER_BIN)
	@MTRACE=$(CURDIR)/$(BUILD)/mtrace BUILD=$(BUILD) MT_SANITIZE=$(FLAVOUR) \
		tests/integration/run.sh

asan:
	$(MAKE) FLAVOUR=asan unit regress san-integration

ubsan:
	$(MAKE) FLAVOUR=ubsan unit regress san-integration

tsan:
	$(MAKE) FLAVOUR=tsan unit san-integration

FUZZ_SECONDS ?= 600
fuzz-build: $(FUZZ_BIN)

fuzz: fuzz-build
	@FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run.sh $(FUZZ_BIN)

bench: all $(BENCH_BIN) $(HELPER_BIN)
	@BUILD=$(BUILD) bench/run.sh

soak: all $(HELPER_BIN)
	@BUILD=$(BUILD) tests/soak/run.sh

whatif: check-deps
	$(MAKE) all
	tools/whatif.sh $(WHATIF_ARGS)

# ---- housekeeping ----

deps:
	tools/deps.sh --install

LINT_SRC := $(shell find core capture replay play sim tools tests bench -name node_modules -prune -o -name '*.[ch]' -print 2>/dev/null) mtrace.c
lint:
	@clang-format --dry-run -Werror $(LINT_SRC)
	@! grep -nE '\b(atoi|atol|sprintf|vsprintf|strcpy|strcat|gets)\s*\(' $(LINT_SRC) || \
	    { echo "lint: banned function (use strtol/snprintf/memcpy with a length)"; exit 1; }
	@tools/lint_words.sh
	@echo "lint: ok"

format:
	clang-format -i $(LINT_SRC)

install: mtrace
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0755 mtrace $(DESTDIR)$(PREFIX)/bin/mtrace
	install -m 0644 docs/mtrace.1 $(DESTDIR)$(PREFIX)/share/man/man1/mtrace.1
	install -d $(DESTDIR)$(PREFIX)/share/mtrace
	install -m 0644 sim/calibrate/gil_pingpong.py sim/calibrate/lock_contend.py $(DESTDIR)$(PREFIX)/share/mtrace/

clean:
	rm -rf build mtrace

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
