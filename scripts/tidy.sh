#!/usr/bin/env bash
# Static analysis: clang-tidy (checks in .clang-tidy) over the engine and apps sources, from the
# compile database of a build folder (default build/release, which scripts/test.sh configures
# with CMAKE_EXPORT_COMPILE_COMMANDS=ON). Any finding fails. Usage: scripts/tidy.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
if [ ! -f "$build/compile_commands.json" ]; then
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
          -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
fi
if run-clang-tidy-14 -p "$build" -j "$(nproc)" -quiet "$PWD/(engine|apps)/.*\.cpp$" \
        > "$build/clang-tidy.log" 2>&1; then
    echo "tidy: $(grep -c '^clang-tidy' "$build/clang-tidy.log") files clean"
else
    grep -v '^clang-tidy-14 ' "$build/clang-tidy.log" | sed 's/\x1b\[[0-9;]*m//g' | head -60
    echo "tidy: findings above (full log: $build/clang-tidy.log)"
    exit 1
fi
