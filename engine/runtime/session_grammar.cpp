// Session's grammar pieces: the model's vocabulary as byte strings for constrained decoding.
#include "grammar/vocab.h"
#include "runtime/session.h"

namespace qvl::runtime {

std::shared_ptr<const grammar::Vocab> Session::grammar_vocab() const {
    std::call_once(grammar_vocab_once_, [this] {
        grammar_vocab_ =
            grammar::vocab_from_tokenizer(model_->tokenizer(), model_->config().text.vocab_size);
    });
    return grammar_vocab_;
}

std::unique_ptr<grammar::Matcher> Session::grammar_matcher(
    std::shared_ptr<const grammar::Grammar> grammar, std::vector<std::int32_t> end_ids) const {
    return std::make_unique<grammar::Matcher>(std::move(grammar), grammar_vocab(),
                                              std::move(end_ids));
}

}  // namespace qvl::runtime
