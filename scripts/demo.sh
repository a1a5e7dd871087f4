#!/usr/bin/env bash
# Builds qvl-run and asks it about the bundled sample photo (assets/sample.jpg).
# With internet it first downloads Qwen3-VL-2B-Instruct from the Hugging Face hub into
# models/Qwen3-VL-2B-Instruct (resumable: run it again after an interruption). Offline it
# falls back to the tiny random test checkpoint, whose answer is meaningless.
# Usage: scripts/demo.sh ["your question"]
set -euo pipefail
cd "$(dirname "$0")/.."
question=${1:-"Describe this photo in one sentence. What does the sign say?"}

cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DQVL_BUILD_TESTS=OFF \
      -DQVL_BUILD_BENCH=OFF >/dev/null
cmake --build build/release --target qvl-run

repo=Qwen/Qwen3-VL-2B-Instruct
dest=models/Qwen3-VL-2B-Instruct
files="config.json generation_config.json preprocessor_config.json tokenizer.json tokenizer_config.json chat_template.json model.safetensors"
model=""
if curl -sfI --connect-timeout 5 --max-time 15 "https://huggingface.co/$repo/resolve/main/config.json" >/dev/null 2>&1; then
    mkdir -p "$dest"
    ok=1
    for f in $files; do
        echo "demo: fetching $repo/$f"
        # -C - resumes a partial download; --fail keeps error pages out of the file.
        curl -L --fail --retry 3 -C - -o "$dest/$f" "https://huggingface.co/$repo/resolve/main/$f" || ok=0
    done
    [ "$ok" = 1 ] && model=$dest
fi
if [ -z "$model" ]; then
    echo "demo: the Hugging Face hub is not reachable; using the bundled TINY RANDOM test model."
    echo "demo: its weights are random, so the answer below is meaningless gibberish."
    model=tests/data/tiny-qwen3vl
fi
build/release/apps/qvl-run -m "$model" -i assets/sample.jpg -p "$question" -n 64
