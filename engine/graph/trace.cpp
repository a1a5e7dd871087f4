#include "graph/trace.h"

#include <filesystem>
#include <memory>
#include <vector>

#include "base/log.h"
#include "base/npy.h"

namespace qvl::graph {

Observer make_trace_observer(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    auto failed = std::make_shared<bool>(false);
    return [dir, failed](const std::string& name, const float* data, int rows, int cols,
                         std::ptrdiff_t stride) {
        std::vector<float> packed;
        packed.reserve(std::size_t(rows) * cols);
        for (int r = 0; r < rows; ++r) {
            packed.insert(packed.end(), data + r * stride, data + r * stride + cols);
        }
        const std::string err =
            base::write_npy_f32(dir + "/" + name + ".npy", packed, {rows, cols});
        if (!err.empty() && !*failed) {
            *failed = true;
            base::log(base::LogLevel::kWarning, "QVL_TRACE: {}", err);
        }
    };
}

}  // namespace qvl::graph
