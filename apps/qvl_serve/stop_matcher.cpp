#include "stop_matcher.h"

#include <algorithm>

namespace qvl::serve {

std::string StopMatcher::push(std::string_view piece) {
    if (matched_) return {};
    pending_.append(piece);
    std::size_t first = std::string::npos;
    for (const std::string& s : stops_) first = std::min(first, pending_.find(s));
    if (first != std::string::npos) {
        matched_ = true;
        std::string out = pending_.substr(0, first);
        pending_.clear();
        return out;
    }
    // Hold back the longest suffix that is a proper prefix of some stop string. A stop string
    // is valid UTF-8, so that suffix starts on a character boundary.
    std::size_t hold = 0;
    for (const std::string& s : stops_) {
        const std::size_t max_len = std::min(s.size() - 1, pending_.size());
        for (std::size_t len = max_len; len > hold; --len) {
            if (std::string_view(pending_).substr(pending_.size() - len) ==
                std::string_view(s).substr(0, len)) {
                hold = len;
                break;
            }
        }
    }
    std::string out = pending_.substr(0, pending_.size() - hold);
    pending_.erase(0, pending_.size() - hold);
    return out;
}

std::string StopMatcher::finish() {
    std::string out;
    out.swap(pending_);
    return matched_ ? std::string() : out;
}

}  // namespace qvl::serve
