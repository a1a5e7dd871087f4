// ScratchDir: a fresh temporary directory for one test, removed with everything in it when the
// object goes away. write() puts exact bytes in a file (for hand-made corrupt inputs).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace qvl::testing {

class ScratchDir {
  public:
    ScratchDir();
    ~ScratchDir();
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;

    const std::filesystem::path& path() const { return path_; }
    // Writes `bytes` to path()/name (creating parent folders) and returns the full path.
    std::filesystem::path write(const std::string& name, std::string_view bytes) const;

  private:
    std::filesystem::path path_;
};

}  // namespace qvl::testing
