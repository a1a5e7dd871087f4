// Background read-ahead of the weights in the order the model uses them, so that a run whose
// weights are not in the page cache (first run after the file was written or pushed out) reads
// the text decoder's weights from disk while the image is decoded and the vision tower runs,
// instead of page-faulting them in one by one during prefill.
//
// One thread walks the matrices (vision tower first, then the text layers in order, the
// embedding / lm_head last) in chunks: it asks the kernel to read the next chunks that are not
// resident (mincore, then MADV_WILLNEED: large asynchronous reads) and maps the pages of the
// current one into the process (MADV_POPULATE_READ, which waits for the disk; touching one byte
// per page where that is unsupported). Mapping them there also spares the compute threads the
// page faults of a warm run (their kernel time halved in a whole-run profile). Compute threads
// that reach a page first simply fault it in themselves, so the order only decides what is
// likely to be ready; results never depend on it.
#pragma once

#include <atomic>
#include <cstddef>
#include <span>
#include <thread>
#include <vector>

#include "model/weights.h"

namespace qvl::model {

struct ByteRange {
    const std::byte* data = nullptr;
    std::size_t size = 0;
};

// The matrices of `weights` in the order of use (see above); empty matrices are left out, and
// lm_head when !lm_head (a logits screen reads a few of its rows, model/logits_screen.h).
std::vector<ByteRange> weights_in_use_order(const ModelWeights& weights, bool lm_head = true);

class WeightPrefetch {
  public:
    // Starts the thread over `ranges` (the bytes they point to must stay mapped until the object
    // is destroyed).
    explicit WeightPrefetch(const std::vector<ByteRange>& ranges);
    // Stops after the chunk in progress (at most a few MB) and joins.
    ~WeightPrefetch();
    WeightPrefetch(const WeightPrefetch&) = delete;
    WeightPrefetch& operator=(const WeightPrefetch&) = delete;

    // Blocks until every range was walked (tests).
    void wait() const;
    // Bytes of chunks that were not resident when the thread reached them (read from disk or
    // waited for); 0 on a warm run.
    std::size_t cold_bytes() const { return cold_bytes_.load(std::memory_order_relaxed); }

  private:
    void run();

    std::vector<ByteRange> chunks_;  // the ranges cut into read-ahead chunks, in order
    std::vector<char> cold_;         // per chunk: not resident when first looked at
    std::atomic<bool> stop_{false};
    std::atomic<bool> done_{false};
    std::atomic<std::size_t> cold_bytes_{0};
    std::thread thread_;
};

}  // namespace qvl::model
