// qvl: Qwen3-VL inference on CPUs. This header is the whole API a program links against
// (qvl::engine, installed by `cmake --install`): load a Model, open a Session on it, prepare a
// prompt from chat messages (text and images), generate. It uses only the standard library;
// graph, kernels, runtime and model internals stay behind the implementation.
//
// Errors never throw: every call that can fail returns a Status or a Result<T> whose message
// names the file or the value and the problem. A Model is immutable and can be shared by
// sessions on several threads; a Session is one conversation, used by one thread at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace qvl {

// The kinds of failure (the same values as the engine's own).
enum class ErrorCode {
    kOk = 0,
    kInvalidArgument,    // a value out of its allowed range
    kNotFound,           // a file, tensor or key that must exist does not
    kIo,                 // the operating system refused (open, read, mmap)
    kCorruptFile,        // bytes that do not follow their format
    kUnsupported,        // well-formed but outside what qvl implements
    kOutOfRange,         // does not fit a configured limit (context, pixels, image budget)
    kResourceExhausted,  // memory could not be had
    kInternal,           // a safety net; should not happen
};

class [[nodiscard]] Status {
  public:
    Status() = default;
    Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
    bool ok() const { return code_ == ErrorCode::kOk; }
    ErrorCode code() const { return code_; }
    const std::string& message() const { return message_; }

  private:
    ErrorCode code_ = ErrorCode::kOk;
    std::string message_;
};

// A value or the Status saying why there is none. value() on an error is a bug.
template <class T>
class [[nodiscard]] Result {
  public:
    Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
    Result(Status status) : v_(std::move(status)) {}  // NOLINT: implicit by design
    bool ok() const { return std::holds_alternative<T>(v_); }
    Status status() const { return ok() ? Status() : std::get<Status>(v_); }
    T& value() & { return std::get<T>(v_); }
    const T& value() const& { return std::get<T>(v_); }
    T&& value() && { return std::get<T>(std::move(v_)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

  private:
    std::variant<T, Status> v_;
};

// ---- Model -----------------------------------------------------------------------------------

// How the text decoder's weights are held. kQ8: int8 with one scale per 64 values, quantized at
// load (no file written; the bf16 pages are released): about half the bytes per decode step,
// logits cosine >= 0.999 against the reference. kQ4: 4-bit groups of 32 with half scales (the
// output projection int8), quantized at load the same way: about a third of bf16's bytes per
// decode step, at a larger logits error (README, "4-bit weights"). The vision tower always stays
// bf16.
enum class Weights { kBF16, kQ8, kQ4 };

// How the vision tower's linear weights are held. kQ8 (opt-in): int8 with one scale per output
// channel, activations quantized per row on the fly, products on the int8 kernels (README,
// "Int8 vision tower"); the patch embedding and the norms stay as stored.
enum class VisionWeights { kBF16, kQ8 };

struct ModelOptions {
    Weights weights = Weights::kBF16;
    VisionWeights vision_weights = VisionWeights::kBF16;
};

// A Hugging Face Qwen3-VL folder: config.json, model.safetensors (or shards), tokenizer.json,
// optional generation_config.json and preprocessor_config.json. Weights are memory-mapped.
// Copies share the same loaded model.
class Model {
  public:
    static Result<Model> load(const std::string& dir, const ModelOptions& options = {});

    const std::string& dir() const;
    int vocab_size() const;

    // Opaque: defined inside the library.
    struct Impl;
    explicit Model(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
    const std::shared_ptr<const Impl>& impl() const { return impl_; }

  private:
    std::shared_ptr<const Impl> impl_;
};

// ---- Prompts ---------------------------------------------------------------------------------

// One piece of a chat message: text, or an image given as a file path, as encoded bytes (JPEG,
// PNG, WebP or GIF) or as decoded 8-bit RGB pixels (HWC, rgb.size() == width * height * 3).
struct ContentPart {
    enum class Kind { kText, kImageFile, kImageBytes, kImageRgb } kind = Kind::kText;
    std::string text;                // kText
    std::string path;                // kImageFile (also names the other image kinds in errors)
    std::vector<std::uint8_t> data;  // kImageBytes: the file's bytes; kImageRgb: the pixels
    int width = 0, height = 0;       // kImageRgb

    static ContentPart from_text(std::string text);
    static ContentPart image_file(std::string path);
    static ContentPart image_bytes(std::vector<std::uint8_t> bytes, std::string name = "image");
    static ContentPart image_rgb(int width, int height, std::vector<std::uint8_t> rgb,
                                 std::string name = "image");
};

// role: "system" (first message only), "user" or "assistant" (text only).
struct Message {
    std::string role;
    std::vector<ContentPart> content;
};

struct ImageInfo {
    std::string name;  // the path, or the name given with the bytes or pixels
    int width = 0, height = 0;
    int resized_width = 0, resized_height = 0;
    int tokens = 0;  // visual tokens in the prompt
};

// A prompt ready to generate from: the chat template applied, images decoded and preprocessed
// under the session's image budget, one <|image_pad|> per visual token.
class Prompt {
  public:
    Prompt(Prompt&&) noexcept;
    Prompt& operator=(Prompt&&) noexcept;
    ~Prompt();

    const std::vector<std::int32_t>& token_ids() const;
    const std::vector<ImageInfo>& images() const;
    double image_decode_ms() const;
    double preprocess_ms() const;

    // Opaque: defined inside the library.
    struct Impl;
    explicit Prompt(std::unique_ptr<Impl> impl);
    const Impl& impl() const { return *impl_; }

  private:
    std::unique_ptr<Impl> impl_;
};

// ---- Session ---------------------------------------------------------------------------------

// How the matrix products round their operands: kF32 stays within 2e-5 of the float64
// reference; kF32KvBF16 is kF32 with the KV cache in bf16 (half the bytes, faster decode over
// long contexts); kBF16 rounds activations to bf16 (about twice as fast where the CPU has
// AVX512_BF16) and keeps a bf16 KV cache; kBF16All also runs attention in bf16. kAuto: kBF16All
// or kBF16 where AVX512_BF16 exists, kF32KvBF16 elsewhere (Session::precision says which).
enum class Precision { kAuto, kF32, kBF16, kBF16All, kF32KvBF16 };

struct SessionOptions {
    int threads = 0;      // 0: one per physical core
    int ctx_size = 4096;  // tokens the session holds (prompt and generated), allocated up front
    // Per-image visual-token budget; 0 keeps the model's (the maximum capped at 4096).
    int min_image_tokens = 0, max_image_tokens = 0;
    Precision precision = Precision::kAuto;
    // Highest kernel tier: "scalar", "avx2", "avx512" or "avx512bf16"; lowered to what the CPU
    // supports. Empty: the best the CPU supports.
    std::string isa;
    bool profile = false;   // time per op kind and layer, see Session::profile_report
    std::string trace_dir;  // non-empty: every intermediate tensor written there as .npy
};

struct Sampling {
    float temperature = 0.0f;  // 0: greedy
    int top_k = 0;             // 0: off
    float top_p = 1.0f;        // 1: off
    std::uint64_t seed = 0;
    float repetition_penalty = 1.0f;  // Hugging Face's; 1: off
    float presence_penalty = 0.0f;    // OpenAI's; 0: off
    // OpenAI's logit_bias: (token id, bias in [-100, 100]) pairs added to those logits before
    // the penalties and the sampling; +100 all but forces a token, -100 all but bans it.
    std::vector<std::pair<std::int32_t, float>> logit_bias;
    // OpenAI's logprobs: -1 off; 0..20: Generation::logprobs gets each token's log-probability
    // and this many most likely alternatives (the log-softmax of the model's logits, before
    // the settings above).
    int logprobs = -1;
};

// One generated token's log-probability and the most likely alternatives at its position,
// most likely first.
struct TokenLogprob {
    std::int32_t token = -1;
    double logprob = 0.0;
    std::vector<std::pair<std::int32_t, double>> top;
};

struct GenerateOptions {
    int n_predict = 128;      // most new tokens
    bool ignore_eos = false;  // keep going past an end-of-turn token
    // Unset: the model's generation_config.json (greedy when it does not sample).
    std::optional<Sampling> sampling;
    // Constrained output (at most one): the answer is JSON that validates against json_schema
    // (a JSON Schema document), or follows grammar (GBNF, llama.cpp's format, start rule
    // `root`), or is any JSON object. It ends (finish_reason "stop") only where the constraint
    // may end. A schema feature or grammar the engine does not support is an error naming it.
    std::string json_schema;
    std::string grammar;
    bool json_object = false;
    // Called with each piece of text as it is produced (whole UTF-8 characters).
    std::function<void(std::string_view)> on_text;
    // When set and it becomes true (another thread, a signal handler), generation stops after
    // the current token with finish_reason "interrupted".
    const std::atomic<bool>* cancel = nullptr;
};

struct Timings {
    double vision_ms = 0, prefill_ms = 0, decode_ms = 0;
    double ttft_ms = 0;  // from the start of generate to the first new token
    int prompt_tokens = 0, decoded_steps = 0;
};

struct Generation {
    std::vector<std::int32_t> tokens;
    std::string text;
    std::string finish_reason;  // "stop" | "length" | "interrupted"
    Sampling sampling;          // the values used (the model's defaults resolved)
    Timings timings;
    std::vector<TokenLogprob> logprobs;  // one per token when Sampling::logprobs >= 0
};

// One conversation over a Model: the KV cache and work memory are allocated at create (an
// error names the numbers if they do not fit the machine), and generate() continues after what
// the session already holds; reset() starts over.
class Session {
  public:
    static Result<Session> create(const Model& model, const SessionOptions& options = {});
    Session(Session&&) noexcept;
    Session& operator=(Session&&) noexcept;
    ~Session();

    // Applies the chat template (Qwen3-VL Instruct) and prepares every image under this
    // session's image budget. Image errors name the image.
    Result<Prompt> prepare(const std::vector<Message>& messages) const;
    // Raw text, no template and no images; special tokens written in it are recognised.
    Result<Prompt> prepare_raw(std::string_view text) const;

    Result<Generation> generate(const Prompt& prompt, const GenerateOptions& options = {});
    void reset();

    int context_used() const;
    int context_size() const;
    int threads() const;
    std::string isa() const;             // the kernel tier in use
    Precision precision() const;         // kAuto resolved
    std::string profile_report() const;  // empty unless SessionOptions::profile

    // Opaque: defined inside the library.
    struct Impl;
    explicit Session(std::unique_ptr<Impl> impl);

  private:
    std::unique_ptr<Impl> impl_;
};

const char* version();

}  // namespace qvl
