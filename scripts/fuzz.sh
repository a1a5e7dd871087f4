#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan, build/fuzz) and runs each for a bounded time
# from its seed corpus (tests/fuzz/corpus/<target>). Any crash, leak, timeout, out-of-memory or
# invariant failure fails the script; the reproducer is left in build/fuzz/artifacts/.
# Usage: scripts/fuzz.sh [seconds-per-target (default 60)] [target...]
#   CI (scripts/test.sh): 20 s per target   longer hunts: scripts/fuzz.sh 3600 image
#   QVL_FUZZ_JOBS: builds and fuzz runs at once (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
all_targets=(safetensors json config generation_config preprocessor_config tokenizer_load
             tokenizer_encode messages image video serve_request grammar json_schema)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")
jobs=${QVL_FUZZ_JOBS:-2}
build=build/fuzz

echo "== fuzz build (clang, ASan+UBSan+libFuzzer)"
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DQVL_FUZZ=ON -DQVL_BUILD_TESTS=OFF -DQVL_BUILD_BENCH=OFF -DQVL_BUILD_APPS=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target $(printf 'qvl_fuzz_%s ' "${targets[@]}")

mkdir -p "$build/artifacts" "$build/logs"
# One target's run; its verdict goes to $build/logs/<target>.verdict. The targets run $jobs at a
# time: each libFuzzer process uses one core, so one at a time left the other core idle.
fuzz_one() {
    local t=$1 work="$build/corpus/$1" log="$build/logs/$1.log" dict=()
    rm -f "$build/logs/$t.verdict"
    mkdir -p "$work"  # new inputs go here; the checked-in seeds stay untouched
    case "$t" in image | video | tokenizer_encode | grammar) ;; *) dict=(-dict=tests/fuzz/json.dict) ;; esac
    if ASAN_OPTIONS=detect_leaks=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "$build/tests/fuzz/qvl_fuzz_$t" -max_total_time="$seconds" -rss_limit_mb=2048 \
        -timeout=10 -print_final_stats=1 "${dict[@]}" \
        -artifact_prefix="$build/artifacts/$t-" "$work" "tests/fuzz/corpus/$t" >"$log" 2>&1; then
        execs=$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}' || true)
        echo "   ok: ${execs:-?} executions"
    else
        echo "   FINDING in $t (log: $log)"
        grep -E 'ERROR|runtime error|invariant|Test unit written' "$log" | head -20 || true
    fi >"$build/logs/$t.verdict"
}
echo "== fuzz ${#targets[@]} targets, ${seconds}s each, $jobs at a time"
for t in "${targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    fuzz_one "$t" &
done
wait
failed=()
for t in "${targets[@]}"; do
    echo "== fuzz $t"
    cat "$build/logs/$t.verdict"
    grep -q '^   ok:' "$build/logs/$t.verdict" || failed+=("$t")
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: findings in: ${failed[*]}"
    exit 1
fi
echo "fuzz: all ${#targets[@]} targets clean"
