// QVL_CHECK: invariants that only a bug can break. Never used to validate input (that is
// Status, status.h). On failure prints file:line and the message, then aborts.
#pragma once

namespace qvl::base {
[[noreturn]] void check_failed(const char* file, int line, const char* expr, const char* msg);
}

#define QVL_CHECK(cond, msg)                                                    \
    do {                                                                        \
        if (!(cond)) ::qvl::base::check_failed(__FILE__, __LINE__, #cond, msg); \
    } while (0)

#ifdef NDEBUG
#define QVL_DCHECK(cond, msg) \
    do {                      \
    } while (0)
#else
#define QVL_DCHECK(cond, msg) QVL_CHECK(cond, msg)
#endif

#define QVL_UNREACHABLE(msg) ::qvl::base::check_failed(__FILE__, __LINE__, "unreachable", msg)
