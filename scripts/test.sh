#!/usr/bin/env bash
# Builds qvl (Release) and runs the whole test suite, then builds and runs the tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer, runs every libFuzzer target for a bounded
# time, then checks formatting and runs clang-tidy. Exit 0 = all green.
# Usage: scripts/test.sh [--quick]   (--quick: Release tests only)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
# Each phase's heading carries the seconds since the start, so a CI log shows where time goes.
phase() { echo "== $* (at ${SECONDS}s)"; }

phase "Release build"
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
cmake --build build/release -j "$jobs"
phase "Release tests"
(cd build/release && ctest -j "$jobs" --output-on-failure --timeout 900)

if [ "${1:-}" = "--quick" ]; then exit 0; fi

phase "ASan+UBSan build (tests only)"
# -O1 with line tables (-g1) is what ASan's own docs advise, and it compiles in half the time of
# RelWithDebInfo's -O2 -g (the intrinsics-heavy kernel files: 85 s -> 39 s each on a Zen 1);
# reports still name file and line.
cmake -S . -B build/sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQVL_SANITIZE=ON \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
      -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DQVL_BUILD_BENCH=OFF >/dev/null
cmake --build build/sanitize -j "$jobs"
phase "ASan+UBSan tests"
(cd build/sanitize && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allocator_may_return_null=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest -j "$jobs" --output-on-failure --timeout 1800 -LE slow)

phase "Fuzz (libFuzzer, bounded: ${QVL_FUZZ_SECONDS:-20} s per target)"
bash scripts/fuzz.sh "${QVL_FUZZ_SECONDS:-20}"

phase "Format"
bash scripts/format.sh --check
phase "Sizes (files <= 600 lines, functions <= ~80; tests/<layer>/*_test.cpp excepted)"
python3 scripts/check_sizes.py --baseline scripts/size_baseline.txt
phase "clang-tidy"
bash scripts/tidy.sh build/release
echo "== all green (${SECONDS}s)"
