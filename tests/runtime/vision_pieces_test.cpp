// The vision tower in bounded pieces (Session::begin_encode_image / encode_image_next): the
// features are bit-identical to one encode whatever the pieces, the vision observer sees every
// node once, decode steps of another slot between the pieces change neither the features nor
// their logits, and a one-slot session (whose vision tower shares the activation arena) refuses
// to decode mid-encode instead of corrupting it.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "runtime/sampler.h"
#include "runtime/session.h"
#include "tiny_case.h"

namespace qvl::runtime {
namespace {

std::unique_ptr<Session> make_session(int slots, Precision precision = Precision::kF32) {
    SessionOptions so;
    so.threads = 2;
    so.ctx_size = 256;
    so.precision = precision;
    so.slots = slots;
    auto s = Session::create(test_util::tiny_model(), so);
    EXPECT_TRUE(s.ok()) << s.status().message();
    return s.ok() ? std::move(s).value() : nullptr;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class VisionPieces : public ::testing::TestWithParam<Precision> {};

TEST_P(VisionPieces, BitIdenticalToOneEncode) {
    const PreparedPrompt p = test_util::case_prompt("golden/img64_describe");
    ASSERT_EQ(p.images.size(), 1u);
    auto whole_session = make_session(2, GetParam());
    auto piece_session = make_session(2, GetParam());
    ASSERT_TRUE(whole_session && piece_session);
    std::vector<std::string> whole_names, piece_names;
    whole_session->set_vision_observer([&](const std::string& name, const float*, int, int,
                                           std::ptrdiff_t) { whole_names.push_back(name); });
    ASSERT_TRUE(whole_session->encode_image(p.images[0]).ok());
    const std::vector<float> whole = whole_session->image_feature_levels(0);
    ASSERT_FALSE(whole.empty());

    Session& s = *piece_session;
    s.set_vision_observer([&](const std::string& name, const float*, int, int, std::ptrdiff_t) {
        piece_names.push_back(name);
    });
    // Slot 1 holds another conversation that decodes between the pieces, through the
    // activation arena the text graphs share.
    const PreparedPrompt other = test_util::case_prompt("golden/text_only");
    ASSERT_TRUE(s.prefill(1, other.ids).ok());
    ASSERT_TRUE(s.begin_encode_image(p.images[0]).ok());
    EXPECT_TRUE(s.encoding_image());
    int pieces = 0;
    std::vector<std::int32_t> other_tokens;
    for (bool done = false; !done; ++pieces) {
        ASSERT_TRUE(s.encode_image_next(0.0, &done).ok());  // one node per piece
        const std::int32_t t = argmax(s.logits(1));
        other_tokens.push_back(t);
        const int slot = 1;
        ASSERT_TRUE(s.decode_batch({&slot, 1}, {&t, 1}).ok());
    }
    EXPECT_FALSE(s.encoding_image());
    EXPECT_EQ(std::size_t(pieces), whole_names.size());
    EXPECT_EQ(piece_names, whole_names) << "the vision observer saw decode nodes or missed some";
    EXPECT_TRUE(same_bits(s.image_feature_levels(0), whole)) << "features depend on the pieces";

    // The prompt then gives the same logits as after one encode.
    ASSERT_TRUE(whole_session->prefill(0, p.ids).ok());
    ASSERT_TRUE(s.prefill(0, p.ids).ok());
    const auto a = whole_session->logits(0), b = s.logits(0);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size_bytes()));

    // And slot 1's tokens are those of decoding it alone.
    auto alone = make_session(1, GetParam());
    ASSERT_TRUE(alone->prefill(other.ids).ok());
    for (std::int32_t t : other_tokens) {
        ASSERT_EQ(argmax(alone->logits()), t);
        ASSERT_TRUE(alone->decode(t).ok());
    }
}

INSTANTIATE_TEST_SUITE_P(Precisions, VisionPieces,
                         ::testing::Values(Precision::kF32, Precision::kBF16All),
                         [](const auto& info) {
                             return std::string(info.param == Precision::kF32 ? "f32" : "bf16_all");
                         });

TEST(VisionPieces, BudgetRunsSeveralNodesAndAbandonWorks) {
    const PreparedPrompt p = test_util::case_prompt("golden/img64_describe");
    auto session = make_session(2);
    ASSERT_NE(session, nullptr);
    Session& s = *session;
    EXPECT_GT(s.vision_arena_bytes(), 0u);
    bool done = false;
    EXPECT_FALSE(s.encode_image_next(1.0, &done).ok()) << "no encode in progress";
    // Abandoned half-way: nothing is left waiting, and the next encode starts clean.
    ASSERT_TRUE(s.begin_encode_image(p.images[0]).ok());
    ASSERT_TRUE(s.encode_image_next(0.0, &done).ok());
    EXPECT_FALSE(done);
    s.clear_images();
    EXPECT_FALSE(s.encoding_image());
    EXPECT_TRUE(s.image_feature_levels(0).empty());
    ASSERT_TRUE(s.begin_encode_image(p.images[0]).ok());
    ASSERT_TRUE(s.encode_image_next(std::numeric_limits<double>::infinity(), &done).ok());
    EXPECT_TRUE(done);
    EXPECT_FALSE(s.image_feature_levels(0).empty());
    EXPECT_TRUE(s.image_feature_levels(1).empty());
}

TEST(VisionPieces, OneSlotSessionRefusesToDecodeMidEncode) {
    const PreparedPrompt p = test_util::case_prompt("golden/img64_describe");
    auto session = make_session(1);
    ASSERT_NE(session, nullptr);
    Session& s = *session;
    EXPECT_EQ(s.vision_arena_bytes(), 0u);  // shares the activation arena: no extra memory
    ASSERT_TRUE(s.prefill(test_util::case_prompt("golden/text_only").ids).ok());
    ASSERT_TRUE(s.begin_encode_image(p.images[0]).ok());
    bool done = false;
    ASSERT_TRUE(s.encode_image_next(0.0, &done).ok());
    const base::Status st = s.decode(198);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("being encoded"), std::string::npos) << st.message();
    EXPECT_FALSE(s.prefill(p.ids).ok());
    while (!done) ASSERT_TRUE(s.encode_image_next(1e9, &done).ok());
    EXPECT_TRUE(s.decode(198).ok());
}

}  // namespace
}  // namespace qvl::runtime
