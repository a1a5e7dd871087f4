// Probes of operating-system features, made directly on a scratch mapping and kept apart from
// the code under test: a test skips for a feature the kernel lacks only when this probe says
// so, never because the engine's own call failed (that is the defect the test exists to catch).
#pragma once

namespace qvl::test {

// Whether madvise(MADV_POPULATE_WRITE) works here (Linux 5.14+).
bool kernel_has_populate_write();

}  // namespace qvl::test
