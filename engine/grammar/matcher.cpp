#include "grammar/matcher.h"

#include <algorithm>
#include <cstring>

namespace qvl::grammar {

namespace {

constexpr std::size_t kMaxCachedMasks = 512;
// Set ids fit the int16 transition table; past this many sets (a long bounded string, deep
// nesting) the tables start over from the current state.
constexpr std::size_t kMaxSets = 16384;
constexpr std::int16_t kUnknown = -2;
constexpr std::int32_t kUnknownRun = -1;

std::int32_t pos_of(std::int64_t node) { return std::int32_t(node >> 32); }
std::int32_t parent_of(std::int64_t node) { return std::int32_t(node & 0xFFFFFFFF) - 1; }

void sort_unique(std::vector<std::int32_t>& v) {
    if (v.size() < 2) return;
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

Matcher::Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocab> vocab,
                 std::vector<std::int32_t> end_ids)
    : g_(std::move(grammar)), vocab_(std::move(vocab)), end_ids_(std::move(end_ids)) {
    levels_.resize(std::size_t(std::max(vocab_->max_depth(), 2)) + 1);
    std::vector<std::int32_t> start;
    const std::size_t root = std::size_t(g_->root);
    for (std::int32_t a = g_->rule_alts[root]; a < g_->rule_alts[root + 1]; ++a) {
        std::vector<std::int32_t> part;
        normalize(intern(g_->alts[std::size_t(a)], -1), part);
        start.insert(start.end(), part.begin(), part.end());
    }
    sort_unique(start);
    levels_[0].set = intern_set(start);
}

std::int32_t Matcher::intern_set(const std::vector<std::int32_t>& sorted_stacks) {
    std::string key(sorted_stacks.size() * sizeof(std::int32_t), '\0');
    if (!sorted_stacks.empty()) std::memcpy(key.data(), sorted_stacks.data(), key.size());
    const auto [it, added] = set_index_.emplace(std::move(key), std::int32_t(sets_.size()));
    if (added) {
        sets_.push_back(sorted_stacks);
        ascii_next_.emplace_back();
        ascii_next_.back().fill(kUnknown);
        wide_next_.emplace_back();
        plain_run_.push_back(kUnknownRun);
    }
    return it->second;
}

std::int32_t Matcher::next_set(std::int32_t set, std::uint32_t cp) {
    if (cp < 128) {
        const std::int16_t known = ascii_next_[std::size_t(set)][cp];
        if (known != kUnknown) return known;
        advance(sets_[std::size_t(set)], cp, scratch_);
        const std::int32_t next = scratch_.empty() ? -1 : intern_set(scratch_);
        ascii_next_[std::size_t(set)][cp] = std::int16_t(next);
        return next;
    }
    const std::vector<std::int32_t>& stacks = sets_[std::size_t(set)];
    if (stacks.size() > 64) {
        const std::uint64_t key = (std::uint64_t(set) << 21) | cp;
        if (auto it = wide_cp_next_.find(key); it != wide_cp_next_.end()) return it->second;
        advance(stacks, cp, scratch_);
        const std::int32_t next = scratch_.empty() ? -1 : intern_set(scratch_);
        wide_cp_next_.emplace(key, next);
        return next;
    }
    // The next set depends only on which stacks take cp.
    std::uint64_t takers = 0;
    for (std::size_t k = 0; k < stacks.size(); ++k) {
        const std::int32_t n = stacks[k];
        if (n >= 0 && g_->matches(g_->elems[std::size_t(pos_of(nodes_[std::size_t(n)]))], cp)) {
            takers |= std::uint64_t(1) << k;
        }
    }
    if (takers == 0) return -1;
    for (const auto& [mask, next] : wide_next_[std::size_t(set)]) {
        if (mask == takers) return next;
    }
    advance(stacks, cp, scratch_);
    const std::int32_t next = scratch_.empty() ? -1 : intern_set(scratch_);
    wide_next_[std::size_t(set)].emplace_back(takers, next);
    return next;
}

// Whether some stack of `set` takes a character in [lo, hi] (the characters a partial UTF-8
// sequence may still become); key names (set, partial bits) for the cache.
bool Matcher::may_start(std::int32_t set, std::uint32_t lo, std::uint32_t hi, std::uint64_t key) {
    if (auto it = partial_ok_.find(key); it != partial_ok_.end()) return it->second;
    bool ok = false;
    for (const std::int32_t n : sets_[std::size_t(set)]) {
        if (n < 0) continue;
        const Elem& e = g_->elems[std::size_t(pos_of(nodes_[std::size_t(n)]))];
        if (g_->may_match(e, lo, hi)) {
            ok = true;
            break;
        }
    }
    partial_ok_.emplace(key, ok);
    return ok;
}

std::int32_t Matcher::plain_next(std::int32_t set) {
    bool taken = false;
    for (const std::int32_t n : sets_[std::size_t(set)]) {
        if (n < 0) continue;
        const Elem& e = g_->elems[std::size_t(pos_of(nodes_[std::size_t(n)]))];
        bool all = true, none = true;
        for (const auto& [lo, hi] : Vocab::kPlainRanges) {
            all = all && g_->covers(e, lo, hi);
            none = none && !g_->may_match(e, lo, hi);
        }
        if (!all && !none) return -2;
        taken = taken || all;
    }
    // Every plain character leads where 'a' does: the same stacks take it.
    return taken ? next_set(set, 'a') : -1;
}

int Matcher::plain_run(std::int32_t set) {
    if (plain_run_[std::size_t(set)] != kUnknownRun) return plain_run_[std::size_t(set)];
    // Follow the chain of sets to a known run, a set that breaks it, or the cap (a string of
    // unbounded length cycles: the cap is more than any token holds).
    const int cap = vocab_->max_depth() + 1;
    run_chain_.clear();
    std::int32_t s = set;
    int run = 0;
    while (true) {
        if (plain_run_[std::size_t(s)] != kUnknownRun) {
            run = plain_run_[std::size_t(s)];
            break;
        }
        if (int(run_chain_.size()) == cap) {
            // Only the first set's run is known (at least the cap); the others stay unknown.
            plain_run_[std::size_t(set)] = cap;
            return cap;
        }
        const std::int32_t next = plain_next(s);
        if (next < 0) {
            plain_run_[std::size_t(s)] = 0;
            break;
        }
        run_chain_.push_back(s);
        s = next;
    }
    for (auto it = run_chain_.rbegin(); it != run_chain_.rend(); ++it) {
        run = std::min(run + 1, cap);
        plain_run_[std::size_t(*it)] = run;
    }
    return plain_run_[std::size_t(set)];
}

void Matcher::bound_tables() {
    if (sets_.size() < kMaxSets) return;
    std::vector<std::int32_t> current = sets_[std::size_t(levels_[0].set)];
    sets_.clear();
    set_index_.clear();
    ascii_next_.clear();
    wide_next_.clear();
    plain_run_.clear();
    wide_cp_next_.clear();
    partial_ok_.clear();
    cache_.clear();
    levels_[0].set = intern_set(current);
}

std::int32_t Matcher::intern(std::int32_t pos, std::int32_t parent) {
    const std::int64_t key = (std::int64_t(pos) << 32) | std::int64_t(std::uint32_t(parent + 1));
    const auto [it, added] = index_.emplace(key, std::int32_t(nodes_.size()));
    if (added) {
        nodes_.push_back(key);
        succ_begin_.push_back(-1);
        succ_end_.push_back(-1);
        seen_.push_back(0);
    }
    return it->second;
}

// Expands a stack until its top is a character class (or the stack is empty: -1, the grammar
// has ended), following rule references into every alternative and popping finished ones.
void Matcher::normalize(std::int32_t start, std::vector<std::int32_t>& out) {
    ++stamp_;
    bool ended = false;
    work_.clear();
    work_.push_back(start);
    while (!work_.empty()) {
        const std::int32_t n = work_.back();
        work_.pop_back();
        if (n < 0) {
            if (!ended) out.push_back(-1);
            ended = true;
            continue;
        }
        if (seen_[std::size_t(n)] == stamp_) continue;
        seen_[std::size_t(n)] = stamp_;
        const std::int32_t pos = pos_of(nodes_[std::size_t(n)]);
        const std::int32_t parent = parent_of(nodes_[std::size_t(n)]);
        const Elem& e = g_->elems[std::size_t(pos)];
        if (e.kind == Elem::Kind::kChars) {
            out.push_back(n);
        } else if (e.kind == Elem::Kind::kEnd) {
            work_.push_back(parent);
        } else {
            // A reference that ends its alternative returns straight to the parent (tail call).
            const bool tail = g_->elems[std::size_t(pos) + 1].kind == Elem::Kind::kEnd;
            const std::int32_t cont = tail ? parent : intern(pos + 1, parent);
            const std::size_t r = std::size_t(e.rule);
            for (std::int32_t a = g_->rule_alts[r]; a < g_->rule_alts[r + 1]; ++a) {
                work_.push_back(intern(g_->alts[std::size_t(a)], cont));
            }
        }
    }
}

std::span<const std::int32_t> Matcher::successors(std::int32_t node) {
    if (succ_begin_[std::size_t(node)] < 0) {
        std::vector<std::int32_t> next;
        const std::int64_t key = nodes_[std::size_t(node)];
        normalize(intern(pos_of(key) + 1, parent_of(key)), next);
        sort_unique(next);
        succ_begin_[std::size_t(node)] = std::int32_t(succ_pool_.size());
        succ_pool_.insert(succ_pool_.end(), next.begin(), next.end());
        succ_end_[std::size_t(node)] = std::int32_t(succ_pool_.size());
    }
    return {succ_pool_.data() + succ_begin_[std::size_t(node)],
            std::size_t(succ_end_[std::size_t(node)] - succ_begin_[std::size_t(node)])};
}

void Matcher::advance(std::span<const std::int32_t> stacks, std::uint32_t cp,
                      std::vector<std::int32_t>& out) {
    out.clear();
    for (const std::int32_t n : stacks) {
        if (n < 0) continue;
        const Elem& e = g_->elems[std::size_t(pos_of(nodes_[std::size_t(n)]))];
        if (!g_->matches(e, cp)) continue;
        const std::span<const std::int32_t> next = successors(n);
        out.insert(out.end(), next.begin(), next.end());
    }
    sort_unique(out);
}

bool Matcher::step(int from, int to, std::uint8_t byte) {
    const Level& f = levels_[std::size_t(from)];
    Level& t = levels_[std::size_t(to)];
    std::uint32_t cp = 0;
    int need = 0, len = 1;
    if (f.need == 0) {
        if (byte < 0x80) {
            t.set = next_set(f.set, byte);
            t.cp = 0;
            t.need = 0;
            t.len = 1;
            return t.set >= 0;
        }
        len = byte >= 0xC2 && byte <= 0xDF   ? 2
              : byte >= 0xE0 && byte <= 0xEF ? 3
              : byte >= 0xF0 && byte <= 0xF4 ? 4
                                             : 0;
        if (len == 0) return false;
        cp = byte & (0x7Fu >> len);
        need = len - 1;
    } else {
        if ((byte & 0xC0) != 0x80) return false;
        cp = (f.cp << 6) | (byte & 0x3Fu);
        need = f.need - 1;
        len = f.len;
    }
    t.cp = cp;
    t.need = need;
    t.len = len;
    // The smallest code point of each length (shorter forms are overlong, not UTF-8).
    const std::uint32_t least = len == 2 ? 0x80 : len == 3 ? 0x800 : len == 4 ? 0x10000 : 0;
    if (need > 0) {
        // A partial character: some stack must take a character that starts with these bytes.
        t.set = f.set;
        const std::uint32_t hi = (cp << (6 * need)) | ((1u << (6 * need)) - 1);
        const std::uint32_t lo = std::max(cp << (6 * need), least);
        if (lo > hi || lo > 0x10FFFF) return false;
        const std::uint64_t key = (std::uint64_t(f.set) << 32) | (std::uint64_t(len) << 28) |
                                  (std::uint64_t(need) << 24) | cp;
        return may_start(f.set, lo, hi, key);
    }
    if (cp < least || cp > 0x10FFFF) return false;
    t.set = next_set(f.set, cp);
    return t.set >= 0;
}

void Matcher::walk(std::vector<std::uint64_t>& bits) {
    const std::span<const Vocab::Node> trie = vocab_->nodes();
    const std::span<const std::int32_t> ids = vocab_->token_ids();
    for (std::size_t i = 1; i < trie.size();) {
        const Vocab::Node& node = trie[i];
        const int plain = plain_subtrees_ ? vocab_->plain_chars(i) : -1;
        const Level& from = levels_[std::size_t(node.depth - 1)];
        if (plain >= 0 && from.need == 0 && plain_run(from.set) >= plain) {
            // Inside a string: every token below continues it (Vocab::plain_chars), no walk.
            const auto [first, end] = vocab_->subtree_tokens(i);
            for (std::int32_t k = first; k < end; ++k) {
                const std::int32_t id = ids[std::size_t(k)];
                bits[std::size_t(id) >> 6] |= std::uint64_t(1) << (id & 63);
            }
            i = std::size_t(node.skip);
            continue;
        }
        if (!step(node.depth - 1, node.depth, node.byte)) {
            i = std::size_t(node.skip);
            continue;
        }
        for (std::int32_t k = 0; k < node.n_tokens; ++k) {
            const std::int32_t id = ids[std::size_t(node.tokens) + std::size_t(k)];
            bits[std::size_t(id) >> 6] |= std::uint64_t(1) << (id & 63);
        }
        ++i;
    }
    if (can_end()) {
        for (const std::int32_t id : end_ids_) {
            if (id >= 0 && id < vocab_->size())
                bits[std::size_t(id) >> 6] |= std::uint64_t(1) << (id & 63);
        }
    }
}

std::uint64_t Matcher::state_key() const {
    const Level& s = levels_[0];
    return (std::uint64_t(s.set) << 32) | (std::uint64_t(s.len) << 28) |
           (std::uint64_t(s.need) << 24) | s.cp;
}

std::span<const std::uint64_t> Matcher::mask() {
    bound_tables();
    const std::uint64_t key = state_key();
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    if (cache_.size() >= kMaxCachedMasks) cache_.clear();
    std::vector<std::uint64_t> bits((std::size_t(vocab_->size()) + 63) / 64, 0);
    if (!finished_) walk(bits);
    return cache_.emplace(key, std::move(bits)).first->second;
}

bool Matcher::accept(std::int32_t id) {
    if (finished_ || id < 0 || id >= vocab_->size()) return false;
    if (is_end(id)) {
        if (!can_end()) return false;
        finished_ = true;
        return true;
    }
    const std::string& bytes = vocab_->bytes(id);
    return !bytes.empty() && accept_bytes(bytes);
}

bool Matcher::accept_bytes(std::string_view bytes) {
    if (finished_) return false;
    bound_tables();
    const Level saved = levels_[0];
    for (const char c : bytes) {
        if (!step(0, 1, static_cast<std::uint8_t>(c))) {
            levels_[0] = saved;
            return false;
        }
        levels_[0] = levels_[1];
    }
    return true;
}

bool Matcher::is_end(std::int32_t id) const {
    return std::find(end_ids_.begin(), end_ids_.end(), id) != end_ids_.end();
}

bool Matcher::can_end() const {
    return !finished_ && levels_[0].need == 0 && !stacks().empty() && stacks()[0] == -1;
}

bool Matcher::must_end() const { return can_end() && stacks().size() == 1; }

}  // namespace qvl::grammar
