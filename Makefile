# The front door: `make demo` and `make test`. Each installs missing Debian packages,
# configures and builds into build/, then runs.
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# ccache when present, looked up when the recipe runs (after `deps` may have installed it), so a
# first `make demo` and a later `make test` configure identically and share one build.
LAUNCHER = $$(command -v ccache >/dev/null && echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
# One ccache serves every checkout: paths under this one are hashed relative to it and the build
# folder's own path is not hashed, so a fresh clone in any folder (CI's) reuses what another
# checkout compiled instead of building three configurations cold.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

.PHONY: all deps configure build demo test sanitize fuzz bench install clean

all: build

deps:
	@bash cmake/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS) $(LAUNCHER) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	@cd $(BUILD_DIR) && ./apps/demo/tessera-demo   # its trace and program files land in build/

test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

# Every test again under AddressSanitizer + UndefinedBehaviorSanitizer, in a build of its own
# (benchmarks off). Tests trim their longest cases there (TESSERA_SANITIZED in test_support.h);
# ThreadSanitizer runs over the host thread pool in `make test` (Runtime.ThreadPoolUnderThreadSanitizer).
SANITIZE_DIR ?= build-sanitize
sanitize: deps
	@cmake -S . -B $(SANITIZE_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_SANITIZE=ON -DTESSERA_BUILD_BENCHMARKS=OFF \
	  $(CMAKE_FLAGS) $(LAUNCHER) >/dev/null
	@cmake --build $(SANITIZE_DIR) -j $(JOBS)
	@cd $(SANITIZE_DIR) && ctest --output-on-failure -j $(JOBS)

# The libFuzzer targets of tests/fuzz (see tests/fuzz/README.md), built with clang-14 in a build of
# their own and run FUZZ_SECONDS each from the committed corpus in tests/fuzz/corpus/<target>. New
# inputs go to $(FUZZ_DIR)/corpus/<target> (libFuzzer writes to its first corpus folder), so a run
# leaves the source tree clean; merge them in with -merge=1 as the README says.
FUZZ_DIR ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS = assembler binary target_json schedule_json npy op_words onnx_import sweep_spec tuning_db chip_artifact dispatch
fuzz: deps
	@CC=clang-14 CXX=clang++-14 cmake -S . -B $(FUZZ_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_FUZZ=ON \
	  -DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_BENCHMARKS=OFF $(CMAKE_FLAGS) $(LAUNCHER) >/dev/null
	@cmake --build $(FUZZ_DIR) -j $(JOBS) --target $(addprefix fuzz_,$(FUZZ_TARGETS))
	@for t in $(FUZZ_TARGETS); do \
	  echo "== fuzz_$$t ($(FUZZ_SECONDS) s)"; mkdir -p $(FUZZ_DIR)/corpus/$$t; \
	  $(FUZZ_DIR)/tests/fuzz/fuzz_$$t $(FUZZ_DIR)/corpus/$$t tests/fuzz/corpus/$$t -max_total_time=$(FUZZ_SECONDS) -timeout=30 -rss_limit_mb=4096 \
	    -artifact_prefix=$(FUZZ_DIR)/fuzz_$$t- -print_final_stats=1 >$(FUZZ_DIR)/fuzz_$$t.log 2>&1; rc=$$?; \
	  grep -E "^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units)" $(FUZZ_DIR)/fuzz_$$t.log; \
	  if [ $$rc -ne 0 ]; then tail -n 40 $(FUZZ_DIR)/fuzz_$$t.log; echo "fuzz_$$t failed (exit $$rc): full log $(FUZZ_DIR)/fuzz_$$t.log"; exit 1; fi; \
	done

bench: build
	@for b in $(BUILD_DIR)/tests/bench/bench_*; do [ -x "$$b" ] && "$$b"; done

install: build
	@cmake --install $(BUILD_DIR) --prefix $(or $(PREFIX),$(CURDIR)/install)

clean:
	@rm -rf $(BUILD_DIR)
