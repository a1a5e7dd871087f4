// Small files first, weights last: a checkpoint folder is only complete (model.safetensors under
// its final name) when everything else is already in place.
#include "synth_checkpoint.h"

#include <fstream>
#include <string>
#include <system_error>

#include "random_weights.h"

namespace qvl::synth {
namespace {

namespace fs = std::filesystem;

base::Status write_text(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(text.data(), std::streamsize(text.size()));
    out.close();
    if (!out) return base::error(base::ErrorCode::kIo, "{}: cannot write", path.string());
    return base::Status();
}

base::Status copy_into(const fs::path& from, const fs::path& to) {
    std::error_code ec;
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    if (ec) {
        return base::error(base::ErrorCode::kIo, "cannot copy {} to {}: {}", from.string(),
                           to.string(), ec.message());
    }
    return base::Status();
}

}  // namespace

base::Status write_synthetic_checkpoint(const SynthOptions& options) {
    const fs::path& out = options.out_dir;
    const fs::path& tok = options.tokenizer_dir;
    std::error_code ec;
    for (const char* required : {"tokenizer.json", "tokenizer_config.json"}) {
        if (!fs::is_regular_file(tok / required, ec)) {
            return base::error(base::ErrorCode::kNotFound, "{}: no such file",
                               (tok / required).string());
        }
    }
    fs::create_directories(out, ec);
    if (ec || !fs::is_directory(out, ec)) {
        return base::error(base::ErrorCode::kIo, "{}: cannot create the folder: {}", out.string(),
                           ec ? ec.message() : "not a directory");
    }

    QVL_TRY(write_text(out / "config.json", config_json(options.dims)));
    QVL_TRY(write_text(out / "generation_config.json", generation_config_json()));
    QVL_TRY(write_text(out / "preprocessor_config.json", preprocessor_config_json(options.dims)));
    for (const char* name : {"tokenizer.json", "tokenizer_config.json", "chat_template.json"}) {
        if (!fs::exists(tok / name, ec)) continue;  // chat_template.json is optional
        QVL_TRY(copy_into(tok / name, out / name));
    }

    const fs::path final_path = out / "model.safetensors";
    const fs::path temp_path = out / "model.safetensors.partial";
    fs::remove(final_path, ec);
    WriteOptions write;
    write.seed = options.seed;
    write.n_threads = options.n_threads;
    base::Status status =
        write_random_safetensors(temp_path, checkpoint_tensors(options.dims), write);
    if (!status.ok()) {
        fs::remove(temp_path, ec);
        return status;
    }
    fs::rename(temp_path, final_path, ec);
    if (ec) {
        return base::error(base::ErrorCode::kIo, "cannot rename {} to {}: {}", temp_path.string(),
                           final_path.string(), ec.message());
    }
    return base::Status();
}

}  // namespace qvl::synth
