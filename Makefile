# The front door: `make demo` and `make test`. Each installs missing Debian packages,
# configures and builds into build/, then runs.
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# ccache when present, looked up when the recipe runs (after `deps` may have installed it), so a
# first `make demo` and a later `make test` configure identically and share one build.
LAUNCHER = $$(command -v ccache >/dev/null && echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)

.PHONY: all deps configure build demo test sanitize bench install clean

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

# The scheduler's illegal-schedule table and random-schedule differential suite (ctest label
# `sanitize`) under AddressSanitizer + UndefinedBehaviorSanitizer, in a build of their own.
SANITIZE_DIR ?= build-sanitize
sanitize: deps
	@cmake -S . -B $(SANITIZE_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_SANITIZE=ON $(CMAKE_FLAGS) $(LAUNCHER) >/dev/null
	@cmake --build $(SANITIZE_DIR) -j $(JOBS) --target test_scheduler_tables
	@cd $(SANITIZE_DIR) && ctest --output-on-failure -j $(JOBS) -L sanitize

bench: build
	@for b in $(BUILD_DIR)/tests/bench/bench_*; do [ -x "$$b" ] && "$$b"; done

install: build
	@cmake --install $(BUILD_DIR) --prefix $(or $(PREFIX),$(CURDIR)/install)

clean:
	@rm -rf $(BUILD_DIR)
