// OpenAI `stop` strings over streamed text: generation ends before the first occurrence of any
// stop string, and no byte of the match (nor of a possible match still being written) reaches
// the client. Text that could be the start of a stop string is held back until the next piece
// decides it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace qvl::serve {

class StopMatcher {
  public:
    explicit StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}

    // Adds a piece; returns the text now safe to emit (possibly empty). After a match, returns
    // the text before it and matched() is true; later pieces are ignored.
    std::string push(std::string_view piece);
    // Generation ended without a match: the held-back text.
    std::string finish();
    bool matched() const { return matched_; }

  private:
    std::vector<std::string> stops_;
    std::string pending_;
    bool matched_ = false;
};

}  // namespace qvl::serve
