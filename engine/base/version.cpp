#include "base/version.h"

namespace qvl::base {
const char* version() { return QVL_VERSION_STRING; }
}  // namespace qvl::base
