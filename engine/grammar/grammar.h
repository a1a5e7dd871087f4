// A context-free grammar over Unicode code points, in the flat form the matcher walks
// (grammar/matcher.h). Built from GBNF text (grammar/gbnf.h) or from a JSON schema
// (grammar/json_schema.h), which compiles to GBNF.
//
// Every rule is a list of alternatives; every alternative is a run of elements in `elems`
// ending with a kEnd element. An element is a character class (code-point ranges, maybe
// negated) or a reference to a rule. Repetitions and groups of the text form are already
// expanded into helper rules (right-recursive, so the matcher's stacks do not grow with the
// number of repetitions: it drops a return position that is the end of an alternative).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"

namespace qvl::grammar {

struct Elem {
    enum class Kind : std::uint8_t { kEnd, kChars, kRule };
    Kind kind = Kind::kEnd;
    bool negated = false;       // kChars: matches the code points outside the ranges
    std::int32_t rule = -1;     // kRule: the rule referenced
    std::int32_t ranges = 0;    // kChars: first range in Grammar::ranges
    std::int32_t n_ranges = 0;  // kChars: number of ranges
};

struct Grammar {
    std::vector<std::string> rule_names;
    // Rule r's alternatives are alts[rule_alts[r], rule_alts[r + 1]); each is an index into elems.
    std::vector<std::int32_t> rule_alts;
    std::vector<std::int32_t> alts;
    std::vector<Elem> elems;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges;  // inclusive [first, last]
    std::int32_t root = -1;

    bool matches(const Elem& e, std::uint32_t cp) const {
        bool in = false;
        for (std::int32_t i = 0; i < e.n_ranges && !in; ++i) {
            const auto& r = ranges[std::size_t(e.ranges + i)];
            in = cp >= r.first && cp <= r.second;
        }
        return in != e.negated;
    }
    // Whether some code point in [lo, hi] may match e (exact for plain classes; negated classes
    // are answered by whether the ranges leave any of [lo, hi] uncovered).
    bool may_match(const Elem& e, std::uint32_t lo, std::uint32_t hi) const;
    // Whether every code point in [lo, hi] matches kChars element e.
    bool covers(const Elem& e, std::uint32_t lo, std::uint32_t hi) const;
};

// Limits that keep every input's cost bounded (the parser and the schema compiler refuse past
// them with an error naming the limit).
inline constexpr std::size_t kMaxElems = std::size_t(1) << 21;
inline constexpr int kMaxRepeat = 10000;
inline constexpr int kMaxNesting = 256;

// Incremental construction: rules are declared by name (forward references allowed), then
// their alternatives are added. finish() checks that every referenced rule is defined, that
// `root` exists and that no rule is left-recursive (the matcher could not expand it).
class GrammarBuilder {
  public:
    std::int32_t rule(std::string_view name);        // finds or declares
    std::int32_t fresh_rule(std::string_view base);  // a new helper rule "base-N"
    bool defined(std::int32_t rule) const { return defined_[std::size_t(rule)] != 0; }

    // An element list under construction; add_alt copies it into the grammar.
    using Seq = std::vector<Elem>;
    Elem chars(std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges, bool negated);
    static Elem ref(std::int32_t rule) { return Elem{Elem::Kind::kRule, false, rule, 0, 0}; }
    base::Status add_alt(std::int32_t rule, const Seq& seq);
    void mark_defined(std::int32_t rule) { defined_[std::size_t(rule)] = 1; }

    // x{min,max} (max < 0: unbounded) appended to seq as helper rules.
    base::Status repeat(Seq& seq, const Elem& x, int min, int max);

    base::Result<Grammar> finish(std::string_view root_name);

  private:
    base::Status check_size() const;
    std::vector<std::string> names_;
    std::unordered_map<std::string, std::int32_t> index_;
    std::vector<std::vector<Seq>> rules_;
    std::vector<std::uint8_t> defined_;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges_;
    std::size_t n_elems_ = 0;
};

}  // namespace qvl::grammar
