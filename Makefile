# farmem: the two commands of the README.
#   make run   - install dependencies, build, run the op-rate benchmark on a local memory node
#   make test  - install dependencies, check formatting and commit messages, build with warnings
#                as errors, run clang-tidy, run every test (release; the runtime and client unit
#                tests repeated under load; the fuzz target; ASan+UBSan of everything; TSan of the
#                unit tests). CI runs exactly this.
# Other targets: build, unit, integration, asan, tsan, stress, format-check, format, tidy,
# commit-check, bench-compare, clean.

BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
JOBS ?= 2
CTEST_FLAGS ?= --output-on-failure --no-tests=error
STRESS_REPEAT ?= 50
STRESS_LOAD ?= 4
WERROR ?= OFF

.PHONY: run test deps build unit integration asan tsan stress format-check format tidy \
	commit-check bench-compare clean

deps:
	./scripts/install-deps

build: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DFARMEM_WERROR=$(WERROR)
	cmake --build $(BUILD) -j $(JOBS)

run: build
	./scripts/run-local.sh

unit: build
	ctest --test-dir $(BUILD) -L unit -j $(JOBS) $(CTEST_FLAGS)

# JOBS at a time; tests that change what the machine shares (huge pages, network namespaces) run
# alone (RUN_SERIAL, tests/CMakeLists.txt).
integration: build
	ctest --test-dir $(BUILD) -L integration -j $(JOBS) $(CTEST_FLAGS)

# ASan + UBSan build of the whole suite, unit tests first, then the rest as in `integration`.
# Sanitizer builds carry line tables only (-g1): reports keep file:line, builds take a sixth less.
SANITIZER_DEBUG_FLAGS ?= -g1
asan: deps
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DFARMEM_SANITIZE=ON \
	  -DCMAKE_CXX_FLAGS_DEBUG="$(SANITIZER_DEBUG_FLAGS)" -DFARMEM_WERROR=$(WERROR)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	ASAN_OPTIONS=$${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir $(ASAN_BUILD) -L unit -j $(JOBS) $(CTEST_FLAGS)
	ASAN_OPTIONS=$${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir $(ASAN_BUILD) -LE unit -j $(JOBS) $(CTEST_FLAGS)

# ThreadSanitizer on the unit tests (runtime, allocators, workload generators, the far service
# handlers, prefetcher and manager, the graph framework's thread pool and algorithms, the agent's
# cache; no UCX traffic). Every binary labelled unit must be built here.
# UCX's memory hooks (libucm) are switched off: they intercept madvise inside TSan's thread exit.
tsan: deps
	cmake -S . -B $(TSAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DFARMEM_TSAN=ON \
	  -DCMAKE_CXX_FLAGS_DEBUG="$(SANITIZER_DEBUG_FLAGS)" -DFARMEM_WERROR=$(WERROR)
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target farmem_unit_tests farmem_far_unit_tests \
	  farmem_txn_unit_tests farmem_paged_unit_tests farmem_graph_unit_tests \
	  farmem_agent_unit_tests farmem_fuzz_server_input
	TSAN_OPTIONS=halt_on_error=1 UCX_MEM_MMAP_HOOK_MODE=none UCX_MEM_EVENTS=no \
	  ctest --test-dir $(TSAN_BUILD) -L unit -j $(JOBS) $(CTEST_FLAGS)

# The runtime and client unit tests STRESS_REPEAT times in a row under STRESS_LOAD busy loops;
# fails if any repetition fails (scripts/stress-unit.sh).
stress: build
	REPEAT=$(STRESS_REPEAT) LOAD=$(STRESS_LOAD) UNIT_TESTS=$(BUILD)/tests/farmem_unit_tests \
	  LOG=$(BUILD)/stress-unit.log ./scripts/stress-unit.sh

format-check: deps
	./scripts/check-format

format: deps
	./scripts/check-format --fix

# clang-tidy on src/ and apps/ (.clang-tidy: functions of at most 80 lines, bugprone-*,
# performance-*), against the release build's compile commands.
tidy: build
	JOBS=$(JOBS) ./scripts/check-tidy $(BUILD)

# Commit subjects of at most 72 characters, each commit with a body that says why.
commit-check:
	./scripts/check-commits

# CI: nothing may skip (FARMEM_CI), warnings are errors, each step's time is printed.
test: export FARMEM_CI = 1
test: deps
	@start=$$(date +%s); step() { echo "== make test: $$1 done after $$(( $$(date +%s) - start )) s"; }; \
	$(MAKE) --no-print-directory format-check && step format-check && \
	$(MAKE) --no-print-directory commit-check && step commit-check && \
	$(MAKE) --no-print-directory build WERROR=ON && step build && \
	JOBS=$(JOBS) ./scripts/check-tidy $(BUILD) && step tidy && \
	ctest --test-dir $(BUILD) -L unit -j $(JOBS) $(CTEST_FLAGS) && step unit && \
	ctest --test-dir $(BUILD) -L integration -j $(JOBS) $(CTEST_FLAGS) && step integration && \
	$(MAKE) --no-print-directory stress WERROR=ON && step stress && \
	$(MAKE) --no-print-directory asan WERROR=ON && step asan && \
	$(MAKE) --no-print-directory tsan WERROR=ON && step tsan

bench-compare: build
	./bench/compare_perftest.sh

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
