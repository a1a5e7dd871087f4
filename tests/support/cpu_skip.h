// The one kind of skip a test may take: this CPU lacks the kernel tier the test is for. The
// message carries the tag "[cpu-feature TIER]", from which tests/tools/skip_report.py counts the
// skipped tiers after ctest (and fails a run when the tagged tier is one /proc/cpuinfo says
// this CPU has, or, in CI, on any untagged skip).
#pragma once

#include <gtest/gtest.h>

#include "kernels/isa.h"

#define QVL_SKIP_UNLESS_CPU(isa)                                             \
    do {                                                                     \
        if (!::qvl::kernels::isa_supported(isa)) {                           \
            GTEST_SKIP() << "[cpu-feature " << ::qvl::kernels::isa_name(isa) \
                         << "] this CPU cannot run the tier";                \
        }                                                                    \
    } while (0)
