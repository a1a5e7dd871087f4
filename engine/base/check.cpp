#include "base/check.h"

#include <cstdio>
#include <cstdlib>

namespace qvl::base {

void check_failed(const char* file, int line, const char* expr, const char* msg) {
    std::fprintf(stderr, "qvl: internal error at %s:%d: %s (%s)\n", file, line, msg, expr);
    std::abort();
}

}  // namespace qvl::base
