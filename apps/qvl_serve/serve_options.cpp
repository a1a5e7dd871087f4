// qvl-serve's flags in three groups (the model and engine, HTTP and its limits, media fetching);
// CLI11 checks ranges and choices, so a usage error names the flag and its allowed values.
#include "serve_options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace qvl::serve {
namespace {

// Flags parsed into text or counts first and turned into ServeOptions fields after parsing.
struct FlagTexts {
    std::string weights = "bf16";
    std::string vision_weights = "bf16";
    int verbose = 0, quiet = 0;
};

// The model, its weights and the engine's slots and budgets.
void add_engine_options(CLI::App& app, ServeOptions* o, FlagTexts* t) {
    app.add_option("-m,--model", o->model_dir, "Hugging Face model folder")->type_name("DIR");
    app.add_option("--parallel", o->parallel, "Conversations served at once (slots)")
        ->check(CLI::Range(1, 256))
        ->capture_default_str();
    app.add_option("-c,--ctx-size", o->ctx_size, "KV tokens per slot")
        ->check(CLI::Range(16, 1 << 20))
        ->capture_default_str();
    app.add_option("-t,--threads", o->threads, "Compute threads (0: physical cores)")
        ->check(CLI::Range(0, 1024))
        ->capture_default_str();
    app.add_option("--image-max-tokens", o->image_max_tokens,
                   "Per-image visual-token budget (0: the model's)")
        ->check(CLI::Range(0, 1 << 20));
    app.add_option("--weights", t->weights,
                   "Text decoder weights: bf16 (as stored), q8 (int8) or q4 (4-bit groups), "
                   "quantized at load: less memory, faster decode; as qvl-run --weights")
        ->check(CLI::IsMember({"bf16", "q8", "q4"}))
        ->capture_default_str();
    app.add_option("--vision-weights", t->vision_weights,
                   "Vision tower weights: bf16 (as stored) or q8 (int8, quantized at load; as "
                   "qvl-run --vision-weights)")
        ->check(CLI::IsMember({"bf16", "q8"}))
        ->capture_default_str();
    app.add_option("--admission-budget-ms", o->admission_budget_ms,
                   "While others stream, admit a new request (image, prompt) in pieces of about "
                   "this long between their tokens (0: whole images and 512-token chunks)")
        ->check(CLI::Range(0.0, 1e6))
        ->capture_default_str();
}

// Listening, authorisation and the limits on requests, connections and their timing.
void add_http_options(CLI::App& app, ServeOptions* o) {
    app.add_option("--host", o->host, "Address to listen on")->capture_default_str();
    app.add_option("--port", o->port, "Port (0: any free port, printed when ready)")
        ->check(CLI::Range(0, 65535))
        ->capture_default_str();
    app.add_option("--max-queue", o->max_queue, "Requests waiting for a slot before 503")
        ->check(CLI::Range(0, 1 << 20))
        ->capture_default_str();
    app.add_option("--api-key", o->api_key,
                   "Require 'Authorization: Bearer KEY' on /v1/* (default: $QVL_API_KEY)");
    app.add_option("--max-body-mb", o->max_body_mb,
                   "Request body limit in MiB, for every framing (Content-Length, chunked): 413 "
                   "as soon as it is passed")
        ->check(CLI::Range(1, 4096))
        ->capture_default_str();
    app.add_option("--http-threads", o->http_threads,
                   "Requests handled at once (worker threads; at least --max-queue plus "
                   "--parallel plus a few are started). Connections cost no thread: one I/O "
                   "thread reads them all")
        ->check(CLI::Range(4, 4096))
        ->capture_default_str();
    app.add_option("--max-connections", o->max_connections,
                   "Open connections in total; when full, the oldest connection that is only "
                   "waiting (idle, or still sending its request) is closed for the new one")
        ->check(CLI::Range(1, 1 << 20))
        ->capture_default_str();
    app.add_option("--max-connections-per-client", o->max_connections_per_client,
                   "Open connections per client address, over it closed at once (0: no cap, as "
                   "behind a reverse proxy or ingress where every connection has its address)")
        ->check(CLI::Range(0, 1 << 20))
        ->capture_default_str();
    app.add_option("--header-timeout-s", o->header_timeout_s,
                   "A request's line and headers must arrive within this long in total, from "
                   "its first byte; then its body at 16 KiB/s or more")
        ->check(CLI::Range(0.1, 3600.0))
        ->capture_default_str();
    app.add_option("--sse-keepalive-s", o->sse_keepalive_s,
                   "A streamed answer gets ': keep-alive' whenever this long passes without a "
                   "byte (queued, image decode, vision, prefill, slow tokens; 0: off)")
        ->check(CLI::Range(0.0, 3600.0))
        ->capture_default_str();
    app.add_option("--shutdown-grace-s", o->shutdown_grace_s,
                   "On SIGINT/SIGTERM, how long running requests may still take; an answer cut "
                   "then ends with an error")
        ->check(CLI::Range(0.0, 3600.0))
        ->capture_default_str();
}

// Which image URLs may be read, and how large an image may be.
void add_media_options(CLI::App& app, ServeOptions* o) {
    app.add_option("--allowed-media-dir", o->allowed_media_dir,
                   "Allow file:// image and video URLs under DIR (default: refused)")
        ->type_name("DIR")
        ->check(CLI::ExistingDirectory);
    app.add_option(
           "--allowed-media-hosts", o->allowed_media_hosts,
           "Allow http(s) image and video URLs from these hosts only, fetched within the body "
           "limit and --media-fetch-timeout-s, redirects only to the same host (default: "
           "none)")
        ->type_name("H1,H2")
        ->delimiter(',')
        ->transform([](std::string h) {
            std::transform(h.begin(), h.end(), h.begin(),
                           [](unsigned char c) { return char(std::tolower(c)); });
            return h;
        });
    app.add_option("--media-fetch-timeout-s", o->media_fetch_timeout_s,
                   "Longest fetch of one image URL, redirects included")
        ->check(CLI::Range(0.1, 600.0))
        ->capture_default_str();
    app.add_option("--max-images", o->max_images, "Images and videos per request")
        ->check(CLI::Range(1, 4096))
        ->capture_default_str();
    app.add_option("--max-image-pixels", o->max_image_pixels,
                   "Largest decoded image, width*height (larger: 400)")
        ->check(CLI::Range(std::uint64_t(1), std::uint64_t(1) << 32))
        ->capture_default_str();
}

}  // namespace

int parse_serve_args(int argc, const char* const* argv, ServeOptions* o, std::FILE* out,
                     std::FILE* err) {
    CLI::App app(
        "qvl-serve: an OpenAI-compatible HTTP server and chat page for a Qwen3-VL "
        "model folder",
        "qvl-serve");
    app.footer(
        "Exit codes: 0 stopped by SIGINT/SIGTERM, 1 other error, 2 usage error, 3 model folder "
        "invalid, 5 memory budget.");
    FlagTexts t;
    add_engine_options(app, o, &t);
    add_http_options(app, o);
    add_media_options(app, o);
    app.add_flag("--version", o->version, "Print the version and exit");
    app.add_flag("-v,--verbose", t.verbose, "Log every request");
    app.add_flag("-q,--quiet", t.quiet, "Errors only");
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        std::fputs(app.help().c_str(), out);
        return 0;
    } catch (const CLI::ParseError& e) {
        std::fprintf(err, "qvl-serve: error: %s\n", e.what());
        return 2;
    }
    if (o->model_dir.empty() && !o->version) {
        std::fprintf(err, "qvl-serve: error: -m/--model DIR is required (a Hugging Face folder)\n");
        return 2;
    }
    o->verbosity = t.verbose > 0 ? 1 : (t.quiet > 0 ? -1 : 0);
    o->weights_q8 = t.weights == "q8";
    o->weights_q4 = t.weights == "q4";
    o->vision_q8 = t.vision_weights == "q8";
    if (o->api_key.empty()) {
        if (const char* k = std::getenv("QVL_API_KEY"); k != nullptr) o->api_key = k;
    }
    return -1;
}

}  // namespace qvl::serve