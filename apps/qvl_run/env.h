// The QVL_* environment variables of qvl-run (shared docs/cli.md). The engine reads no
// environment: this is the one place that does, and it maps each variable onto a session
// option. A value the CLI does not know is a usage error naming the variable, never ignored.
#pragma once

#include <qvl/qvl.h>

#include <cstdio>
#include <functional>
#include <optional>
#include <string>

#include "args.h"

namespace qvl::app {

struct EnvOptions {
    std::optional<Precision> precision;  // QVL_PRECISION=f32|f32-kv-bf16|bf16|bf16-all
    std::string isa;                     // QVL_ISA=scalar|avx2|avx512|avx512bf16 ("": best)
    bool profile = false;                // QVL_PROFILE=0|1
    std::string trace_dir;               // QVL_TRACE=DIR
    bool logits_screen = true;           // QVL_LOGITS_SCREEN=0|1 (a load option)
};

// How a variable is looked up: returns nullptr when unset. Tests pass their own.
using EnvLookup = std::function<const char*(const char* name)>;

// Reads the variables through `lookup` (std::getenv by default) into *out. An unset or
// empty variable keeps the default. An unknown value prints one line
//   qvl-run: error: QVL_PRECISION: unknown value 'bogus' (expected f32, f32-kv-bf16, bf16,
//   bf16-all)
// to err and returns 2 (the usage exit code); otherwise returns -1 (continue).
int read_env_options(EnvOptions* out, std::FILE* err, const EnvLookup& lookup = {});

// Applies the options to a session's settings.
void apply_env_options(const EnvOptions& env, SessionOptions* session);

// The session's settings: the flags (-t, -c, --image-min/max-tokens), then the QVL_*
// environment. One SessionOptions serves both the images' preprocessing and the session, so the
// two agree.
SessionOptions session_options(const RunOptions& o, const EnvOptions& env);

}  // namespace qvl::app
