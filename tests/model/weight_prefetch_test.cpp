// WeightPrefetch: the order of the weights (vision tower first, lm_head last), that a file
// dropped from the page cache is read back by the background thread, and that a warm file
// costs no reads.
#include "model/weight_prefetch.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "io/mapped_file.h"
#include "model/config.h"
#include "model/weights.h"
#include "support/scratch_dir.h"

namespace qvl::model {
namespace {

const char* const kTinyDir = QVL_TEST_DATA_DIR "/tiny-qwen3vl";

TEST(WeightPrefetch, VisionTowerFirstTextLayersInOrderLmHeadLast) {
    const auto config = load_model_config(std::string(kTinyDir) + "/config.json");
    ASSERT_TRUE(config.ok()) << config.status().message();
    const auto w = ModelWeights::load(kTinyDir, config.value());
    ASSERT_TRUE(w.ok()) << w.status().message();
    const std::vector<ByteRange> order = weights_in_use_order(w.value());
    const VisionWeights& v = w->vision();
    const TextWeights& t = w->text();
    ASSERT_FALSE(order.empty());
    EXPECT_EQ(order.front().data, v.patch_embed.data);
    EXPECT_EQ(order.front().size, std::size_t(v.patch_embed.rows) * v.patch_embed.cols * 2);
    EXPECT_EQ(order.back().data, t.lm_head.data);
    // Positions of the first text matrix and of every vision block matrix.
    auto index_of = [&](const void* p) {
        for (std::size_t i = 0; i < order.size(); ++i) {
            if (order[i].data == p) return int(i);
        }
        return -1;
    };
    const int first_text = index_of(t.layers[0].q.data);
    ASSERT_GE(first_text, 0);
    for (const VisionBlockWeights& b : v.blocks) {
        EXPECT_GE(index_of(b.fc2.data), 0);
        EXPECT_LT(index_of(b.fc2.data), first_text);
    }
    EXPECT_LT(index_of(v.merger.fc2.data), first_text);
    for (std::size_t l = 1; l < t.layers.size(); ++l) {
        EXPECT_LT(index_of(t.layers[l - 1].down.data), index_of(t.layers[l].q.data));
    }
}

bool all_resident(const io::MappedFile& f) {
    std::vector<unsigned char> vec((f.size() + 4095) / 4096 + 1);
    void* p = const_cast<std::byte*>(f.bytes().data());
    if (mincore(p, f.size(), vec.data()) != 0) return false;
    const std::size_t pages =
        (f.size() + std::size_t(sysconf(_SC_PAGESIZE)) - 1) / std::size_t(sysconf(_SC_PAGESIZE));
    for (std::size_t i = 0; i < pages; ++i) {
        if ((vec[i] & 1) == 0) return false;
    }
    return true;
}

TEST(WeightPrefetch, ReadsAFileDroppedFromThePageCacheAndNothingWhenWarm) {
    const testing::ScratchDir dir;
    const std::size_t size = (std::size_t(24) << 20) + 12345;  // several chunks and a tail
    const auto path = dir.write("w.bin", std::string(size, '\x5a'));
    {
        // Written pages must reach the disk before the cache can drop them.
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(fdatasync(fd), 0);
        ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
        ::close(fd);
    }
    auto f = io::MappedFile::open_read_only(path);
    ASSERT_TRUE(f.ok()) << f.status().message();
    if (all_resident(f.value())) GTEST_SKIP() << "this file system keeps the file in memory";

    // Odd offsets: the ranges need not be page-aligned.
    const std::byte* base = f->bytes().data();
    {
        WeightPrefetch cold({{base + 3, size / 2}, {base + 3 + size / 2, size - 3 - size / 2}});
        cold.wait();
        EXPECT_GT(cold.cold_bytes(), 0u);
    }
    EXPECT_TRUE(all_resident(f.value()));
    WeightPrefetch warm({{base, size}});
    warm.wait();
    EXPECT_EQ(warm.cold_bytes(), 0u);
}

}  // namespace
}  // namespace qvl::model
