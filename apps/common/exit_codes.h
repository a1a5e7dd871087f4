// Process exit codes of qvl-run and qvl-serve, as fixed by their contracts (shared docs/cli.md,
// docs/serve.md). Scripts outside the project branch on these numbers, so they never change.
#pragma once

namespace qvl::app {

inline constexpr int kExitOk = 0;        // success (also --help, --version)
inline constexpr int kExitOther = 1;     // anything not listed below
inline constexpr int kExitUsage = 2;     // bad command line: unknown flag, bad value, conflict
inline constexpr int kExitModel = 3;     // model folder or weights missing or invalid
inline constexpr int kExitInput = 4;     // input (image, prompt file, messages file) invalid
inline constexpr int kExitResource = 5;  // resource limit: context or memory budget

}  // namespace qvl::app
