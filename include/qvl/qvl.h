// qvl: Qwen3-VL inference on CPUs. This header (with qvl/status.h, which it includes) is the whole
// API of qvl::engine (standard library types only; qvl-run and qvl-serve use it alone): load a
// Model, then open a Session (one conversation, generate() blocks) or an Engine (many requests:
// submit, stream, cancel). Errors never throw: a Status or Result<T> names the file or value and
// the problem. A Model is immutable and shared across threads, a Session used by one thread at a
// time, an Engine thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "qvl/status.h"  // ErrorCode, Status, Result<T>

namespace qvl {

// ---- Model -----------------------------------------------------------------------------------
// The text decoder's weights, quantized at load (README, "Int8 weights", "4-bit weights"). kQ8:
// int8, a scale per 64 values (half bf16's bytes per step); kQ4: 4-bit groups of 32, half scales,
// lm_head int8 (about a third, larger logits error).
enum class Weights { kBF16, kQ8, kQ4 };

// The vision tower's linear weights. kQ8 (opt-in): int8, one scale per output channel, on the
// int8 kernels (README, "Int8 vision tower"); the patch embedding and the norms stay as stored.
enum class VisionWeights { kBF16, kQ8 };

struct ModelOptions {
    Weights weights = Weights::kBF16;
    VisionWeights vision_weights = VisionWeights::kBF16;
    // Greedy and top-k steps compute only the logits that can win (same tokens); off: all.
    bool logits_screen = true;
    // false: weights mapped but not read ahead or rearranged, for a program that only prepares
    // prompts or estimates a run; such a model must not generate.
    bool for_generation = true;
};

inline constexpr int kMaxLogprobs = 20;  // most alternatives one token reports (OpenAI's)

// Sampling settings (Hugging Face's order: penalties, then temperature, top-k, top-p).
struct Sampling {
    float temperature = 0.0f;  // 0: greedy
    int top_k = 0;             // 0: off
    float top_p = 1.0f;        // 1: off
    std::uint64_t seed = 0;
    float repetition_penalty = 1.0f;  // Hugging Face's, over prompt and output ids; 1: off
    float presence_penalty = 0.0f;    // OpenAI's, in [-2, 2] over output ids; 0: off
    float frequency_penalty = 0.0f;   // OpenAI's, in [-2, 2] over output ids; 0: off
    // OpenAI's logit_bias: (token id, bias in [-100, 100]), added before the penalties.
    std::vector<std::pair<std::int32_t, float>> logit_bias;
    // OpenAI's logprobs: -1 off; 0..kMaxLogprobs: each token's log-probability (log-softmax of
    // the raw logits) and this many alternatives, in Generation::logprobs.
    int logprobs = -1;
};

// What a user asked for; unset fields come from the model (Model::sampling).
struct SamplingOverrides {
    std::optional<float> temperature, top_p;
    std::optional<int> top_k;
    std::optional<std::uint64_t> seed;
    std::optional<float> repetition_penalty, presence_penalty, frequency_penalty;
};

class Prompt;
struct Message;
struct SessionOptions;

// A Hugging Face Qwen3-VL folder: config.json, model.safetensors (or shards), tokenizer.json,
// optional generation_config.json and preprocessor_config.json. Weights are memory-mapped.
// Copies share the same loaded model.
class Model {
  public:
    static Result<Model> load(const std::string& dir, const ModelOptions& options = {});

    const std::string& dir() const;
    int vocab_size() const;
    Weights weights() const;
    int hidden_size() const;    // the text decoder's width (image features' columns)
    int vision_blocks() const;  // transformer blocks of the vision tower
    // The bytes a token id stands for (a piece of UTF-8, or raw bytes); empty for an id outside
    // the vocabulary.
    std::string_view token_bytes(std::int32_t id) const;
    // Ids to text, special tokens included (Hugging Face's decode); non-UTF-8 bytes as U+FFFD.
    Result<std::string> detokenize(std::span<const std::int32_t> ids) const;
    // The one rule for sampling defaults: generation_config.json (temperature, top-k, top-p when
    // do_sample, else greedy; repetition_penalty always, as Hugging Face), then each override
    // that is set. An unset seed is drawn at random.
    Sampling sampling(const SamplingOverrides& overrides = {}) const;

    // Prompts without a Session or Engine (qvl-run --tokenize, --dry-run): as Engine::prepare
    // with the image budget of `options`, default image limits and file:// URLs only.
    Result<Prompt> prepare(const std::vector<Message>& messages, const SessionOptions& options,
                           bool keep_pixel_values = false) const;
    Result<Prompt> prepare_raw(std::string_view text) const;

    struct Impl;  // opaque: defined inside the library
    explicit Model(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
    const std::shared_ptr<const Impl>& impl() const { return impl_; }

  private:
    std::shared_ptr<const Impl> impl_;
};

// ---- Prompts ---------------------------------------------------------------------------------
// One piece of a chat message: text; an image given as a file path, as encoded bytes (JPEG,
// PNG, WebP or GIF) or as decoded 8-bit RGB pixels (HWC, rgb.size() == width * height * 3); a
// video (MP4, WebM, animated GIF) as a file path or bytes; or a URL that the Engine's media
// resolver turns into a part of the same medium (EngineOptions::resolve_media).
struct ContentPart {
    // clang-format off
    enum class Kind { kText, kImageFile, kImageBytes, kImageRgb, kImageUrl,
                      kVideoFile, kVideoBytes, kVideoUrl } kind = Kind::kText;
    // clang-format on
    std::string text;                // kText
    std::string path;                // k*File (also names the other kinds in errors)
    std::vector<std::uint8_t> data;  // k*Bytes: the file's bytes; kImageRgb: the pixels
    int width = 0, height = 0;       // kImageRgb
    std::string url;                 // k*Url
    // kVideo*: frames sampled per second and at most (Qwen3VLVideoProcessor's fps, max_frames);
    // 0: the model's video_preprocessor_config.json.
    double video_fps = 0;
    int video_max_frames = 0;

    static ContentPart from_text(std::string text);
    static ContentPart image_file(std::string path);
    static ContentPart image_bytes(std::vector<std::uint8_t> bytes, std::string name = "image");
    static ContentPart image_rgb(int width, int height, std::vector<std::uint8_t> rgb,
                                 std::string name = "image");
    static ContentPart image_url(std::string url, std::string name);
    static ContentPart video_file(std::string path);
    static ContentPart video_bytes(std::vector<std::uint8_t> bytes, std::string name = "video");
    static ContentPart video_url(std::string url, std::string name);
    bool is_video() const { return kind >= Kind::kVideoFile; }
};

// A function call the assistant made (OpenAI's tool_calls): in the history, and parsed out of an
// answer (ToolCallParser).
struct ToolCall {
    std::string id;  // "call_" + 24 random letters and digits (the template ignores it)
    std::string name;
    std::string arguments;  // a JSON object's text
};

// role: "system" (first message only), "user", "assistant" (text only, and the calls it made)
// or "tool" (a call's result, text only; a run of them is one user turn in the template).
struct Message {
    std::string role;
    std::vector<ContentPart> content;
    std::vector<ToolCall> tool_calls;  // assistant only
};

// The --messages format of qvl-run (a JSON array of {"role", "content"}, content a string or a
// list of {"type": "text", "text"}, {"type": "image", "image": PATH} and {"type": "video",
// "video": PATH} parts): relative paths resolve against the file's folder. Errors name the file
// and the element.
Result<std::vector<Message>> load_messages_file(const std::string& path);

// An image or a video of the prompt (Prompt::images, in prompt order).
struct ImageInfo {
    std::string name;  // the path, or the name given with the bytes or pixels
    int width = 0, height = 0;
    int resized_width = 0, resized_height = 0;
    int tokens = 0;      // visual tokens in the prompt
    bool video = false;  // a video: frames sampled, the stream's rate and length, the sampling
    int frames = 0, max_frames = 0;
    double fps = 0, duration_s = 0, sample_fps = 0;
};

// A prompt ready to generate from: the chat template applied, images and videos decoded and
// preprocessed under the session's image budget, one <|image_pad|> per visual token (a video:
// timestamps and <|video_pad|>s per frame pair, as Qwen3VLProcessor writes them).
class Prompt {
  public:
    Prompt();                     // empty: no tokens
    Prompt(const Prompt& other);  // holds its own images' pixels (Engine::submit_group)
    Prompt& operator=(const Prompt& other);
    Prompt(Prompt&&) noexcept;
    Prompt& operator=(Prompt&&) noexcept;
    ~Prompt();

    const std::vector<std::int32_t>& token_ids() const;
    const std::vector<ImageInfo>& images() const;
    double image_decode_ms() const;
    double preprocess_ms() const;
    // images()[i]'s normalized patches as the reference processor gives them (rows x cols,
    // row-major; a video's pixel_values_videos), when the engine was asked for them
    // (EngineOptions::keep_pixel_values, always for videos); else empty.
    std::span<const float> pixel_values(int image, int* rows, int* cols) const;

    struct Impl;  // opaque: defined inside the library
    explicit Prompt(std::unique_ptr<Impl> impl);
    const Impl& impl() const { return *impl_; }
    Impl& impl() { return *impl_; }

  private:
    std::unique_ptr<Impl> impl_;
};

// ---- Session ---------------------------------------------------------------------------------
// How products round: kF32 within 2e-5 of the float64 reference; kF32KvBF16 with a bf16 KV
// cache; kBF16 rounds activations to bf16 (about 2x faster with AVX512_BF16), bf16 KV; kBF16All
// also attention in bf16. kAuto: kBF16All or kBF16 with AVX512_BF16, else kF32KvBF16.
enum class Precision { kAuto, kF32, kBF16, kBF16All, kF32KvBF16 };

// "f32", "f32-kv-bf16", "bf16", "bf16-all", "auto"; nullopt for any other spelling.
std::optional<Precision> precision_from_name(std::string_view name);
const char* precision_name(Precision precision);
std::string precision_choices();  // "f32, f32-kv-bf16, bf16, bf16-all", for messages

// The kernel tier a session asking for `requested` runs on this CPU ("avx2", ...; empty: the
// best). kInvalidArgument for a name that is not a tier (scalar, avx2, avx512, avx512bf16).
Result<std::string> kernel_tier(std::string_view requested = {});

struct SessionOptions {
    int threads = 0;      // 0: one per physical core
    int ctx_size = 4096;  // tokens the session holds (prompt and generated), allocated up front
    // Per-image visual-token budget; 0 keeps the model's (the maximum capped at 4096).
    int min_image_tokens = 0, max_image_tokens = 0;
    Precision precision = Precision::kAuto;
    // Highest kernel tier (scalar, avx2, avx512, avx512bf16), lowered to the CPU's; empty: best.
    std::string isa;
    bool profile = false;   // time per op kind and layer, see Session::profile_report
    std::string trace_dir;  // non-empty: every intermediate tensor written there as .npy
};

// A generated token's log-probability and the likeliest alternatives there, likeliest first.
struct TokenLogprob {
    std::int32_t token = -1;
    double logprob = 0.0;
    std::vector<std::pair<std::int32_t, double>> top;
};

struct GenerateOptions {
    int n_predict = 128;      // most new tokens
    bool ignore_eos = false;  // keep going past an end-of-turn token
    // Unset: the model's generation_config.json (greedy when it does not sample), seed 0.
    std::optional<Sampling> sampling;
    // Constrained output (at most one), as OutputConstraint: a JSON Schema document, a GBNF
    // grammar (start rule `root`), or any JSON object.
    std::string json_schema;
    std::string grammar;
    bool json_object = false;
    // Called with each piece of text as it is produced (whole UTF-8 characters).
    std::function<void(std::string_view)> on_text;
    // Set and true (another thread, a signal handler): stops after this token, "interrupted".
    const std::atomic<bool>* cancel = nullptr;
};

struct Timings {  // milliseconds, from submission (Session: from the call to generate)
    double queue_ms = 0, image_decode_ms = 0, vision_ms = 0, prefill_ms = 0, decode_ms = 0;
    double ttft_ms = 0;  // to the first new token
    double total_ms = 0;
    int prompt_tokens = 0, decoded_steps = 0;
    int cached_prompt_tokens = 0;  // prompt tokens reused from the KV cache (prefix reuse)
    int image_cache_hits = 0;      // images whose features came from the image cache
};

// One generation: of Session::generate, or of an Engine request.
struct Generation {
    std::vector<std::int32_t> tokens;
    std::string text;
    // "stop" | "length" | "interrupted" (Session) | "cancelled" | "error" (Engine)
    std::string finish_reason;
    Status error;       // finish_reason "error": why
    Sampling sampling;  // the values used (the model's defaults resolved)
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

    // Applies the chat template (Qwen3-VL Instruct) and prepares every image and video under
    // this session's image budget. Their errors name them.
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

    struct Impl;  // opaque: defined inside the library
    explicit Session(std::unique_ptr<Impl> impl);

  private:
    std::unique_ptr<Impl> impl_;
};

// ---- Engine ----------------------------------------------------------------------------------
// Videos: a frame's pixels at most min(max_pixels, 4096^2), frames sampled at most twice the
// context (one token per frame pair at least), their RGB at most 2 GiB.
struct ImageLimits {
    std::uint64_t max_pixels = 16384ull * 16384;  // per decoded image, checked before decoding
    std::uint64_t max_file_bytes = 512ull << 20;  // per image or video file or buffer
};

// Turns a kImageUrl (kVideoUrl) part into an image (video) part of another kind (a server's
// file:// policy, data-URI or remote fetch). Its errors are returned as they are; errors loading
// what it returns are prefixed with the URL part's name unless the returned part carries it.
using MediaResolver = std::function<Result<ContentPart>(const ContentPart& url_part)>;

struct EngineOptions {
    SessionOptions session;  // threads, ctx_size (per slot), image budget, precision, isa, ...
    int slots = 1;           // sequences decoded together, each with its own KV region
    int max_queue = 64;      // requests waiting for a slot; submit() past that: kResourceExhausted
    std::size_t image_cache_mb = 256;  // features of recent images and video frames; 0: off
    // While others decode, admitting a new request (vision, prefill) runs in pieces of about
    // this long between their decode steps; 0: whole images and 512-token chunks.
    double admission_budget_ms = 500;
    ImageLimits image_limits;
    MediaResolver resolve_media;     // unset: file:// URLs only (data and remote URLs refused)
    bool keep_pixel_values = false;  // Prompt::pixel_values (a debugging aid: memory)
};

class JsonValue;

// A compiled constraint on the answer: every token one it allows, the end only where it may
// end. Immutable, shared by copies; default: none. Unsupported features are errors naming them.
class OutputConstraint {
  public:
    OutputConstraint();
    static Result<OutputConstraint> json_object();  // any JSON object
    // JSON valid against a JSON Schema document, as text or parsed.
    static Result<OutputConstraint> json_schema(std::string_view schema_json);
    static Result<OutputConstraint> json_schema(const JsonValue& schema);
    // A GBNF grammar (llama.cpp's format, start rule `root`).
    static Result<OutputConstraint> gbnf(std::string_view grammar);
    bool empty() const { return impl_ == nullptr; }
    bool triggered() const;  // free text until a trigger token (Tools' "auto"), then the grammar

    struct Impl;  // opaque: defined inside the library
    explicit OutputConstraint(std::shared_ptr<const Impl> impl);
    const std::shared_ptr<const Impl>& impl() const { return impl_; }

  private:
    std::shared_ptr<const Impl> impl_;
};

// The functions a request offers (OpenAI's tools, tool_choice, parallel_tool_calls), rendered
// by Engine::prepare as the chat template does (Hugging Face's ids). constraint(): "required"
// and a named function allow valid calls only, "auto" valid calls once one opens; "none" keeps
// the tools in the prompt but bans the <tool_call> token; parallel_tool_calls false: one.
struct Tools {
    static Result<Tools> parse(const JsonValue& tools, const JsonValue* tool_choice = nullptr,
                               const JsonValue* parallel_tool_calls = nullptr);
    bool calls_allowed() const;
    Result<OutputConstraint> constraint() const;  // empty for "auto" and "none"
    struct Impl;
    std::shared_ptr<const Impl> impl;  // null: no tools
};

// Reads an answer for calls as it streams (any cut of the text gives the same events): content,
// and each call once its <tool_call> block closes with JSON naming a tool; anything else (a
// block never closed, bad JSON, an unknown name) stays content, verbatim.
class ToolCallParser {
  public:
    explicit ToolCallParser(const Tools& tools);
    struct Event {  // a piece of content, or (call >= 0) calls()[call] is complete
        std::string content;
        int call = -1;
    };
    void push(std::string_view text, std::vector<Event>& out);
    void finish(std::vector<Event>& out);  // the end: what was held back comes out
    const std::vector<ToolCall>& calls() const;
    const std::string& content() const;  // all content so far
    struct Impl;

  private:
    std::shared_ptr<Impl> impl_;
};

// One streamed piece: whole UTF-8 characters (a stop string's possible start is held back until
// it is decided) and the id of the token that completed it.
struct Piece {
    std::string_view text;
    std::int32_t token = -1;
};

struct Request {
    Prompt prompt;  // from Engine::prepare (Session prompts work too)
    int max_tokens = 128;
    bool ignore_eos = false;
    Sampling sampling;              // Model::sampling(overrides) gives the model's defaults
    std::vector<std::string> stop;  // generation ends before the first match of any of these
    OutputConstraint constraint;    // empty: free text
    // Called on the engine's thread: quick, never calling into the Engine except cancel().
    std::function<void(const Piece&)> on_piece;
    std::function<void(const Generation&)> on_done;  // exactly once, last
    // With sampling.logprobs >= 0: each generated token's log-probabilities as soon as it is
    // sampled (its text may still be held back).
    std::function<void(const TokenLogprob&)> on_logprob;
    // When set and it becomes true, the request ends "cancelled" before its next token.
    const std::atomic<bool>* cancel = nullptr;
    // Views for tools (qvl-run's progress, --dump-*) on the engine's thread: vision blocks done,
    // the first image's merged features (a video's: all frame pairs'), the last token's logits.
    std::function<void(int done, int total)> on_vision_progress;
    std::function<void(std::span<const float> features, int rows, int cols)> on_image_features;
    std::function<void(std::span<const float> logits)> on_prompt_logits;
};

using RequestId = std::uint64_t;

// Many requests over one Model: `slots` sequences in one batched pass (tokens never depend on
// what runs beside them), a queue, chunked admission, prefix reuse and an image-feature cache.
class Engine {
  public:
    static Result<Engine> create(const Model& model, const EngineOptions& options = {});
    Engine(Engine&&) noexcept;
    Engine& operator=(Engine&&) noexcept;
    ~Engine();  // pending requests finish "cancelled" (their on_done runs)

    // Thread-safe. As Session::prepare, with this engine's image budget, limits and resolver.
    // With tools offered; add_generation_prompt false: the assistant turn is not opened.
    Result<Prompt> prepare(const std::vector<Message>& messages, const Tools& tools = {},
                           bool add_generation_prompt = true) const;
    Result<Prompt> prepare_raw(std::string_view text) const;

    // Thread-safe. Queues the request: kResourceExhausted when the queue is full, kOutOfRange
    // when the prompt cannot fit a slot's context, kInvalidArgument for bad sampling values.
    Result<RequestId> submit(Request request);
    // Thread-safe. Choices of one prompt (OpenAI's n), queued all or none: the others start from
    // a bit-exact copy of the first one's prefill where a slot is free. Ids in the order given.
    Result<std::vector<RequestId>> submit_group(std::vector<Request> requests);
    // Thread-safe, idempotent: the request ends "cancelled" within one step.
    void cancel(RequestId id);
    // Submits and waits: the result, or why it was refused or failed. *interrupt (may be null)
    // true cancels it (text kept, "cancelled"). request.on_done is not called.
    Result<Generation> generate(Request request, const std::atomic<bool>* interrupt = nullptr);

    struct Stats {  // for /metrics
        int slots = 0, slots_busy = 0, queue_length = 0;
        // Since create: requests queued, refused by submit (each of a refused group), and
        // finished by finish_reason (stop, length, cancelled, error).
        std::uint64_t submitted = 0, refused = 0;
        std::uint64_t stopped = 0, length = 0, cancelled = 0, failed = 0;
        // Over finished requests: prompt tokens (a submit_group's prompt once), those reused from
        // a slot's KV (Timings::cached_prompt_tokens), generated tokens, image-cache hits.
        std::uint64_t prompt_tokens = 0, cached_prompt_tokens = 0, generated_tokens = 0;
        std::uint64_t image_cache_hits = 0;
    };
    // Thread-safe; a request's counts are in before its on_done runs.
    Stats stats() const;
    // Forgets what the free slots' KV holds, so a new conversation reuses nothing of an old one.
    void forget_prefixes();

    int slots() const;
    int context_size() const;  // per slot
    int threads() const;
    std::string isa() const;
    Precision precision() const;
    std::string profile_report() const;  // SessionOptions::profile; read while no request runs

    struct Impl;
    explicit Engine(std::unique_ptr<Impl> impl);

  private:
    std::unique_ptr<Impl> impl_;
};

// What a run would cost (qvl-run --dry-run): memory, and times from a FLOP/byte model probed here.
struct RunEstimate {
    double weights_mb = 0, kv_mb = 0, activations_mb = 0;
    double available_mb = 0;  // anonymous memory the system has now (0: unknown)
    double vision_ms = 0, prefill_ms = 0, ttft_ms = 0, decode_ms_per_token = 0;
    double vision_gflop = 0, prefill_gflop = 0, decode_gbytes_per_token = 0;
    double matmul_gflops = 0, weights_gbps = 0;  // the probe's rates
};
Result<RunEstimate> estimate_run(const Model& model, const Prompt& prompt, int n_predict,
                                 const SessionOptions& options);

// ---- Utilities programs share with the engine ------------------------------------------------
// A small read-only JSON document (the engine's). Objects keep members in order and duplicates.
class JsonValue {
  public:
    enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
    using Member = std::pair<std::string, JsonValue>;

    Type type() const { return type_; }
    bool is_null() const { return type_ == Type::kNull; }
    bool is_bool() const { return type_ == Type::kBool; }
    bool is_number() const { return type_ == Type::kNumber; }
    bool is_string() const { return type_ == Type::kString; }
    bool is_array() const { return type_ == Type::kArray; }
    bool is_object() const { return type_ == Type::kObject; }
    // A number written without fraction or exponent that fits int64 (one up to 2^64-1 is a double
    // whose exact digits as_string() gives).
    bool is_integer() const { return type_ == Type::kNumber && is_integer_; }

    bool as_bool() const { return bool_; }
    double as_double() const { return number_; }
    std::int64_t as_int() const { return integer_; }
    const std::string& as_string() const { return string_; }
    const std::vector<JsonValue>& items() const { return items_; }
    const std::vector<Member>& members() const { return members_; }

    // First member named key, or nullptr (also for non-objects).
    const JsonValue* find(std::string_view key) const;
    static const char* type_name(Type type);

  private:
    friend class JsonBuilder;
    Type type_ = Type::kNull;
    bool bool_ = false, is_integer_ = false;
    double number_ = 0.0;
    std::int64_t integer_ = 0;
    std::string string_;
    std::vector<JsonValue> items_;
    std::vector<Member> members_;
};

// `what` (a file name, "request body") prefixes errors (kCorruptFile).
Result<JsonValue> parse_json(std::string_view text, std::string_view what);
// A parsed --messages document (label prefixes errors; relative paths resolve against image_dir).
Result<std::vector<Message>> parse_messages(const JsonValue& messages, const std::string& label,
                                            const std::string& image_dir);
// `s` as a quoted JSON string: control characters escaped, invalid UTF-8 as U+FFFD.
std::string json_quote(std::string_view s);
// A finite double as JSON (NaN and infinities become 0).
std::string json_number(double v);
// A whole file (kNotFound, kIo, or kOutOfRange past max_bytes, each naming the path).
Result<std::string> read_text_file(const std::string& path,
                                   std::uint64_t max_bytes = std::uint64_t(1) << 30);
// kInvalidArgument naming the first byte that is not UTF-8.
Status check_utf8(std::string_view text);

// An 8-bit RGB image (HWC): what a ContentPart decodes to.
struct RgbImage {
    int width = 0, height = 0;
    std::vector<std::uint8_t> rgb;
};
Result<RgbImage> decode_image(const ContentPart& image, const ImageLimits& limits = {});
Status write_png(const std::string& path, const RgbImage& image);
// A float32 array as a NumPy .npy file (C order).
Status write_npy(const std::string& path, std::span<const float> data,
                 const std::vector<std::int64_t>& shape);

// The compute threads `threads = 0` means: the physical cores among the CPUs this process may
// run on, within its cgroup CPU quota; *reason (may be null) says so in words.
int default_threads(std::string* reason = nullptr);

enum class LogLevel { kDebug, kInfo, kWarning, kError, kSilent };
void set_log_level(LogLevel level);  // the engine's messages on stderr; default kWarning

const char* version();

}  // namespace qvl
