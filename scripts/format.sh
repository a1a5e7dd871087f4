#!/usr/bin/env bash
# Formats every C++ file of the project with clang-format 14 (.clang-format), or with --check
# lists the files that are not formatted and fails.
set -euo pipefail
cd "$(dirname "$0")/.."
fmt=$(command -v clang-format-14 || command -v clang-format)
mapfile -t files < <(git ls-files '*.h' '*.cpp' | grep -v '^tests/data/')
if [ "${1:-}" = "--check" ]; then
    "$fmt" --dry-run --Werror "${files[@]}"
    echo "format: ${#files[@]} files ok"
else
    "$fmt" -i "${files[@]}"
fi
