#!/usr/bin/env bash
# The end-to-end benchmark: builds qvl (Release, in build/), writes the full-size synthetic
# Qwen3-VL-2B checkpoint into models/ if missing (4.3 GB, about 40 s), then runs
# bench/e2e_bench.py (448x448 and 1280x720 JPEGs, 64 tokens, 1 and 2 threads) and prints each
# phase against its floor. Extra arguments go to e2e_bench.py (e.g. --quick, --threads 2).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target qvl-run qvl-synth qvl-bench-kernels
exec /usr/bin/python3 bench/e2e_bench.py "$@"
