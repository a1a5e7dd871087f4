// The engine's version string ("0.1.0"), from the CMake project version.
#pragma once

namespace qvl::base {
const char* version();
}
