#!/usr/bin/env python3
"""The deliberate defects of issue 52's closing note ("a mutation that the old suite missed and
the new one catches"), each a one-line change to engine, app or build code, applied to and
reverted from a scratch checkout. Never commit a tree with a mutation applied: use a separate
worktree (git worktree add --detach /tmp/mut HEAD), build there, run the command printed.

  mutations.py list                 the mutations, what each breaks and the command that shows it
  mutations.py apply NAME [TREE]    applies one (TREE defaults to the current directory)
  mutations.py revert NAME [TREE]   undoes it

apply fails when the line to change is not found exactly once, so a mutation cannot silently
apply to nothing after the code moved."""
import os
import sys

B = "build/release"
SERVE = (f"python3 tests/serve/{{}} --serve {B}/apps/qvl-serve --run {B}/apps/qvl-run "
         "--model tests/data/tiny-qwen3vl --images tests/data/images")

# name: (issue item, file, text, mutated text, what it breaks, command that catches it)
MUTATIONS = {
    "tier-ignored": (
        1, "engine/runtime/session.cpp",
        "    return kernels::kernels_for(tier_for(options.isa));",
        "    return kernels::kernels_for(tier_for(std::nullopt));",
        "SessionOptions::isa is ignored: every session runs the best tier",
        f"{B}/tests/qvl_test_runtime --gtest_filter='Cases/GoldenTest.*:TiersAndPrecisions/GoldenTiers.*'"),
    "populate-unaligned": (
        5, "engine/base/aligned_buffer.cpp",
        "        std::max((start + offset) / page * page, (start + page - 1) / page * page);",
        "        std::max(start + offset, (start + page - 1) / page * page);",
        "populate() passes madvise an unaligned start: EINVAL, nothing populated",
        f"{B}/tests/qvl_test_base --gtest_filter='AlignedBuffer.Populate*' && "
        f"{B}/tests/qvl_test_runtime --gtest_filter='KvCache.Populate*'"),
    "engine-error-200": (
        6, "apps/qvl_serve/http_server.cpp",
        "    return {.status = 500,",
        "    return {.status = 200,",
        "an engine failure of a non-streamed answer is a 200 with an error body",
        SERVE.format("hardening_test.py") + " --only test_engine_error_after_start"),
    "unstreamed-client-gone": (
        6, "apps/qvl_serve/http_server.cpp",
        "        } else if (reply.client_gone()) {",
        "        } else if (false && reply.client_gone()) {",
        "a non-streamed answer whose client left is generated to the end",
        SERVE.format("reliability_test.py") + " --soak-seconds 12"),
    "queued-cancel-dropped": (
        6, "engine/runtime/engine.cpp",
        "                    dropped.push_back(std::move(*it));",
        "                    // dropped.push_back(std::move(*it));",
        "a request cancelled while queued is erased without its on_done: its caller waits forever",
        f"{B}/tests/qvl_test_runtime --gtest_filter='EngineAdmission.CancelWhileQueued*'"),
    "isa-objects-renamed": (
        8, "engine/CMakeLists.txt",
        "set(QVL_ENGINE_SOURCES \"\")",
        "set(QVL_ENGINE_SOURCES \"\")\nset(CMAKE_CXX_OUTPUT_EXTENSION_REPLACE ON)",
        "objects are named x.o: isa_symbols.py no longer sees any tier's objects",
        f"python3 tests/tools/isa_symbols.py nm {B}/engine/libqvl_engine.a"),
    "utf8-f3-refused": (
        8, "engine/text/utf8.cpp",
        "    if (b < 0xF4) return {4, 0x80, 0xBF};",
        "    if (b < 0xF3) return {4, 0x80, 0xBF};",
        "valid UTF-8 with an F3 lead (U+C0000..U+FFFFF) is refused as invalid",
        "scripts/fuzz.sh 20 tokenizer_encode (the seed corpus/tokenizer_encode/planes.txt)"),
    "pixels-truncated": (
        2, "engine/kernels/x86/avx512_util.h",
        "    const __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb);",
        "    const __m512i r = _mm512_add_epi32(u, _mm512_and_si512(lsb, _mm512_setzero_si512()));",
        "AVX-512 rounds to bf16 by truncation (GEMM A panels, patch embedding pixels)",
        f"{B}/tests/qvl_test_kernels --gtest_filter='*PatchEmbed*Matches*'"),
}


def edit(name, tree, forward):
    _, path, old, new, _, _ = MUTATIONS[name]
    full = os.path.join(tree, path)
    with open(full) as f:
        text = f.read()
    src, dst = (old, new) if forward else (new, old)
    if text.count(src) != 1:
        print(f"mutations: {path}: the text to replace is found {text.count(src)} times, not once")
        return 1
    with open(full, "w") as f:
        f.write(text.replace(src, dst))
    print(f"mutations: {'applied' if forward else 'reverted'} {name} in {path}")
    return 0


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("list", "apply", "revert"):
        print(__doc__)
        return 2
    if sys.argv[1] == "list":
        for name, (item, path, _, _, what, cmd) in MUTATIONS.items():
            print(f"{name} (item {item}, {path}): {what}\n    {cmd}")
        return 0
    if len(sys.argv) < 3 or sys.argv[2] not in MUTATIONS:
        print(f"mutations: name one of {', '.join(MUTATIONS)}")
        return 2
    return edit(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else ".", sys.argv[1] == "apply")


if __name__ == "__main__":
    sys.exit(main())
