// Grammar-constrained decoding: which tokens may come next, and advancing by the chosen one.
//
// The state is a set of stacks (a pushdown automaton run on every parse at once, as llama.cpp's
// grammar sampler does): each stack is a position in an alternative (the next element, always a
// character class once expanded) plus where to return when the alternative ends. Stacks are
// interned nodes (position, parent) shared between states, so a state is a sorted list of node
// ids, and a tail position (a rule reference that ends its alternative) returns to the parent
// directly: repetitions leave the state unchanged instead of growing it.
//
// The token mask walks the vocabulary trie (grammar/vocab.h) byte by byte from the state,
// holding a partial UTF-8 character between bytes and pruning a subtree as soon as no stack can
// take its prefix; a character's successors per node are computed once. Masks are cached per
// state (the same state, e.g. inside a long string, gives the same mask without a walk).
// Everything is a function of the grammar, the vocabulary and the tokens accepted, so a
// sequence's mask does not depend on anything else (batch composition, threads).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/vocab.h"

namespace qvl::grammar {

class Matcher {
  public:
    // end_ids: the tokens that end generation (allowed only where the grammar may end).
    Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocab> vocab,
            std::vector<std::int32_t> end_ids);

    // Bit id of the mask (words of 64) is set when token id may come next: its bytes continue
    // the grammar, or it is an end token and the grammar may end here. Valid until the next
    // call on this matcher.
    std::span<const std::uint64_t> mask();
    bool allowed(std::span<const std::uint64_t> mask, std::int32_t id) const {
        return id >= 0 && id < vocab_->size() &&
               ((mask[std::size_t(id) >> 6] >> (id & 63)) & 1) != 0;
    }

    // Advances by one token; false (state unchanged) when the grammar does not allow it.
    bool accept(std::int32_t id);
    // Advances by raw bytes (tests, forced text); false (state unchanged) when not allowed.
    bool accept_bytes(std::string_view bytes);

    // The grammar may end here (end tokens allowed).
    bool can_end() const;
    // The grammar has ended here: nothing but the end may follow.
    bool must_end() const;
    // An end token was accepted.
    bool finished() const { return finished_; }

    // Tests turn the whole-subtree shortcut of plain text off to compare the two walks.
    void use_plain_subtrees(bool on) { plain_subtrees_ = on; }

    const Grammar& grammar() const { return *g_; }
    std::span<const std::int32_t> end_ids() const { return end_ids_; }
    bool is_end(std::int32_t id) const;

  private:
    // A walk position: a set of stacks (an id into sets_; for a partial UTF-8 character, the
    // set where the character started) plus the partial character's bits.
    struct Level {
        std::int32_t set = -1;
        std::uint32_t cp = 0;  // bits of the partial character so far
        int need = 0;          // continuation bytes still to come
        int len = 0;           // the partial character's length in bytes
    };

    std::int32_t intern(std::int32_t pos, std::int32_t parent);
    void normalize(std::int32_t start, std::vector<std::int32_t>& out);
    std::span<const std::int32_t> successors(std::int32_t node);
    void advance(std::span<const std::int32_t> stacks, std::uint32_t cp,
                 std::vector<std::int32_t>& out);
    // Stack sets are interned, and the set after a set and a character is computed once: the
    // mask walk visits every trie node, and most nodes repeat a transition already seen (inside
    // a string every plain character leads from one set to the next same way).
    std::int32_t intern_set(const std::vector<std::int32_t>& sorted_stacks);
    std::int32_t next_set(std::int32_t set, std::uint32_t cp);  // -1: no stack takes cp
    bool may_start(std::int32_t set, std::uint32_t lo, std::uint32_t hi, std::uint64_t key);
    // Plain text (Vocab::plain_chars) from a set: the set after any plain character when every
    // stack takes all of them or none (-2 when some stack takes only some, -1 when none does).
    std::int32_t plain_next(std::int32_t set);
    // How many plain characters in a row the set surely takes (capped past the longest token).
    int plain_run(std::int32_t set);
    // Drops the interned sets and caches past a size bound (keeping the current state).
    void bound_tables();
    // Level `to` from level `from` of levels_ plus one byte; false when no stack can take it.
    bool step(int from, int to, std::uint8_t byte);
    void walk(std::vector<std::uint64_t>& bits);
    std::uint64_t state_key() const;
    const std::vector<std::int32_t>& stacks() const { return sets_[std::size_t(levels_[0].set)]; }

    std::shared_ptr<const Grammar> g_;
    std::shared_ptr<const Vocab> vocab_;
    std::vector<std::int32_t> end_ids_;
    std::vector<std::int64_t> nodes_;  // pos << 32 | (parent + 1)
    std::unordered_map<std::int64_t, std::int32_t> index_;
    std::vector<std::int32_t> succ_begin_, succ_end_;  // -1: not yet computed
    std::vector<std::int32_t> succ_pool_;
    std::vector<std::uint32_t> seen_;  // normalize()'s visit stamps
    std::uint32_t stamp_ = 0;
    std::vector<std::int32_t> work_;
    std::vector<std::vector<std::int32_t>> sets_;  // interned sorted stack sets
    std::unordered_map<std::string, std::int32_t> set_index_;
    std::vector<std::array<std::int16_t, 128>> ascii_next_;  // per set: -2 unknown, -1 dead
    // Past ASCII, per set: (which of its stacks take the character, next set). Stacks are few
    // and classes wide, so thousands of code points share a handful of entries.
    std::vector<std::vector<std::pair<std::uint64_t, std::int32_t>>> wide_next_;
    std::unordered_map<std::uint64_t, std::int32_t> wide_cp_next_;  // sets of > 64 stacks
    std::unordered_map<std::uint64_t, bool> partial_ok_;            // a partial character's check
    std::vector<std::int32_t> scratch_;
    std::vector<std::int32_t> plain_run_;  // per set, kUnknownRun until computed
    std::vector<std::int32_t> run_chain_;
    bool plain_subtrees_ = true;
    std::vector<Level> levels_;  // [0] is the current state
    bool finished_ = false;
    std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> cache_;
};

}  // namespace qvl::grammar
