// The tiny Qwen3-VL checkpoint of tests/data, loaded once per test binary and shared (a Model is
// immutable). A load failure is reported as a test failure, then aborts the binary on use.
#pragma once

#include "model/model.h"

namespace qvl::test {

const model::Model& tiny_model();

}  // namespace qvl::test
