// Counts calls of the global operator new in this test binary while an AllocationCounter is
// alive (the replacement operators live in alloc_counter.cpp).
#pragma once

#include <cstdint>

namespace qvl::test {

class AllocationCounter {
  public:
    AllocationCounter();
    ~AllocationCounter();
    std::int64_t allocations() const;

  private:
    std::int64_t start_;
};

}  // namespace qvl::test
