#include "grammar/grammar.h"

#include <fmt/format.h>

#include <algorithm>

namespace qvl::grammar {

using base::ErrorCode;

bool Grammar::may_match(const Elem& e, std::uint32_t lo, std::uint32_t hi) const {
    if (!e.negated) {
        for (std::int32_t i = 0; i < e.n_ranges; ++i) {
            const auto& r = ranges[std::size_t(e.ranges) + std::size_t(i)];
            if (r.first <= hi && r.second >= lo) return true;
        }
        return false;
    }
    // Negated: some point of [lo, hi] outside every range. Walk lo upwards past covering ranges.
    std::uint32_t cur = lo;
    for (bool moved = true; moved && cur <= hi;) {
        moved = false;
        for (std::int32_t i = 0; i < e.n_ranges; ++i) {
            const auto& r = ranges[std::size_t(e.ranges) + std::size_t(i)];
            if (r.first <= cur && r.second >= cur) {
                if (r.second >= hi) return false;
                cur = r.second + 1;
                moved = true;
            }
        }
    }
    return cur <= hi;
}

bool Grammar::covers(const Elem& e, std::uint32_t lo, std::uint32_t hi) const {
    if (e.negated) {
        for (std::int32_t i = 0; i < e.n_ranges; ++i) {
            const auto& r = ranges[std::size_t(e.ranges) + std::size_t(i)];
            if (r.first <= hi && r.second >= lo) return false;
        }
        return true;
    }
    // Some point of [lo, hi] outside every range is exactly may_match of the negated class.
    Elem complement = e;
    complement.negated = true;
    return !may_match(complement, lo, hi);
}

std::int32_t GrammarBuilder::rule(std::string_view name) {
    const auto [it, added] = index_.emplace(std::string(name), std::int32_t(names_.size()));
    if (!added) return it->second;
    names_.emplace_back(name);
    rules_.emplace_back();
    defined_.push_back(0);
    return std::int32_t(names_.size() - 1);
}

std::int32_t GrammarBuilder::fresh_rule(std::string_view base) {
    names_.push_back(fmt::format("{}#{}", base, names_.size()));
    rules_.emplace_back();
    defined_.push_back(1);
    return std::int32_t(names_.size() - 1);
}

Elem GrammarBuilder::chars(std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges,
                           bool negated) {
    Elem e{Elem::Kind::kChars, negated, -1, std::int32_t(ranges_.size()),
           std::int32_t(ranges.size())};
    ranges_.insert(ranges_.end(), ranges.begin(), ranges.end());
    return e;
}

base::Status GrammarBuilder::check_size() const {
    if (n_elems_ + ranges_.size() > kMaxElems) {
        return base::error(ErrorCode::kOutOfRange,
                           "grammar too large: more than {} elements after expanding repetitions",
                           kMaxElems);
    }
    return {};
}

base::Status GrammarBuilder::add_alt(std::int32_t rule, const Seq& seq) {
    rules_[std::size_t(rule)].push_back(seq);
    n_elems_ += seq.size() + 1;
    return check_size();
}

base::Status GrammarBuilder::repeat(Seq& seq, const Elem& x, int min, int max) {
    if (min < 0 || min > kMaxRepeat || max > kMaxRepeat || (max >= 0 && max < min)) {
        return base::error(ErrorCode::kInvalidArgument,
                           "repetition {{{},{}}} out of range (0 <= min <= max <= {})", min, max,
                           kMaxRepeat);
    }
    for (int i = 0; i < min; ++i) seq.push_back(x);
    n_elems_ += std::size_t(min);
    if (max < 0) {
        const std::int32_t star = fresh_rule("star");
        QVL_TRY(add_alt(star, {x, ref(star)}));
        QVL_TRY(add_alt(star, {}));
        seq.push_back(ref(star));
        return {};
    }
    std::int32_t inner = -1;
    for (int i = 0; i < max - min; ++i) {
        const std::int32_t opt = fresh_rule("opt");
        QVL_TRY(inner < 0 ? add_alt(opt, {x}) : add_alt(opt, {x, ref(inner)}));
        QVL_TRY(add_alt(opt, {}));
        inner = opt;
    }
    if (inner >= 0) seq.push_back(ref(inner));
    return check_size();
}

namespace {

// Rules that can match the empty string (fixpoint).
std::vector<std::uint8_t> nullable_rules(
    const std::vector<std::vector<GrammarBuilder::Seq>>& rules) {
    std::vector<std::uint8_t> nullable(rules.size(), 0);
    for (bool changed = true; changed;) {
        changed = false;
        for (std::size_t r = 0; r < rules.size(); ++r) {
            if (nullable[r] != 0) continue;
            for (const auto& alt : rules[r]) {
                const bool all = std::all_of(alt.begin(), alt.end(), [&](const Elem& e) {
                    return e.kind == Elem::Kind::kRule && nullable[std::size_t(e.rule)] != 0;
                });
                if (all) {
                    nullable[r] = 1;
                    changed = true;
                    break;
                }
            }
        }
    }
    return nullable;
}

}  // namespace

base::Result<Grammar> GrammarBuilder::finish(std::string_view root_name) {
    for (std::size_t r = 0; r < names_.size(); ++r) {
        if (defined_[r] == 0) {
            return base::error(ErrorCode::kInvalidArgument,
                               "grammar: rule '{}' is used but not defined", names_[r]);
        }
    }
    Grammar g;
    for (std::size_t r = 0; r < names_.size() && g.root < 0; ++r) {
        if (names_[r] == root_name) g.root = std::int32_t(r);
    }
    if (g.root < 0) {
        return base::error(ErrorCode::kInvalidArgument, "grammar: no rule named '{}'", root_name);
    }
    // Left recursion: edges r -> s where s can start r (after nullable elements only).
    const std::vector<std::uint8_t> nullable = nullable_rules(rules_);
    std::vector<std::vector<std::int32_t>> leads(rules_.size());
    for (std::size_t r = 0; r < rules_.size(); ++r) {
        for (const auto& alt : rules_[r]) {
            for (const Elem& e : alt) {
                if (e.kind != Elem::Kind::kRule) break;
                leads[r].push_back(e.rule);
                if (nullable[std::size_t(e.rule)] == 0) break;
            }
        }
    }
    // Iterative DFS with colours: 1 on the path, 2 done.
    std::vector<std::uint8_t> colour(rules_.size(), 0);
    std::vector<std::pair<std::int32_t, std::size_t>> path;
    for (std::size_t start = 0; start < rules_.size(); ++start) {
        if (colour[start] != 0) continue;
        path.emplace_back(std::int32_t(start), 0);
        colour[start] = 1;
        while (!path.empty()) {
            auto& [r, next] = path.back();
            if (next == leads[std::size_t(r)].size()) {
                colour[std::size_t(r)] = 2;
                path.pop_back();
                continue;
            }
            const std::int32_t s = leads[std::size_t(r)][next++];
            if (colour[std::size_t(s)] == 1) {
                const std::string& name = names_[std::size_t(s)];
                // Generated rules (name#n) come from repetitions: say what the user wrote.
                const char* hint = name.find('#') != std::string::npos
                                       ? " (a repetition of something that can match empty text)"
                                       : "";
                return base::error(ErrorCode::kInvalidArgument,
                                   "grammar: rule '{}' is left-recursive{}", name, hint);
            }
            if (colour[std::size_t(s)] == 0) {
                colour[std::size_t(s)] = 1;
                path.emplace_back(s, 0);
            }
        }
    }
    g.rule_names = names_;
    g.ranges = ranges_;
    for (const auto& alts : rules_) {
        g.rule_alts.push_back(std::int32_t(g.alts.size()));
        for (const auto& alt : alts) {
            g.alts.push_back(std::int32_t(g.elems.size()));
            g.elems.insert(g.elems.end(), alt.begin(), alt.end());
            g.elems.push_back(Elem{});
        }
    }
    g.rule_alts.push_back(std::int32_t(g.alts.size()));
    return g;
}

}  // namespace qvl::grammar
