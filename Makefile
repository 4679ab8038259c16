# kiln — the two commands of the README, and the GPU visit.
#   make test      install what is missing, build, run every test (then again under ASan+UBSan)
#   make bench     build and run tools/kiln-bench (on the GPU when there is one)
#   make test-gpu  on a machine with an NVIDIA GPU: build for sm_90a, run the suite with the
#                  CUDA backend, again under compute-sanitizer, print a table (logs in $OUT)
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BUILD ?= build
ASAN_BUILD ?= build-asan
CMAKE_ARGS ?=

.PHONY: all deps configure build test test-asan test-gpu bench clean format

all: build

deps:
	@./tools/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DKILN_WERROR=ON $(CMAKE_ARGS) >$(BUILD).configure.log 2>&1 || { cat $(BUILD).configure.log; exit 1; }
	@grep '^-- kiln:' $(BUILD).configure.log || true

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	@BUILD=$(BUILD) ./tools/python-test.sh
	@$(MAKE) --no-print-directory test-asan

test-asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DKILN_WERROR=ON -DKILN_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug $(CMAKE_ARGS) >$(ASAN_BUILD).configure.log 2>&1 || { cat $(ASAN_BUILD).configure.log; exit 1; }
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	@cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
		ctest --output-on-failure -j $(JOBS)

test-gpu:
	@./tools/test-gpu.sh

bench: build
	@./$(BUILD)/kiln-bench

format:
	@clang-format -i include/*.h src/*/*.[ch] src/*.h tests/*.[ch] tools/*.c

clean:
	@rm -rf $(BUILD) $(ASAN_BUILD) $(BUILD).configure.log $(ASAN_BUILD).configure.log
