// qvl-serve's command line (shared docs/serve.md): flag names follow qvl-run and llama-server.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace qvl::serve {

struct ServeOptions {
    std::string model_dir;           // -m, --model
    std::string host = "127.0.0.1";  // --host
    int port = 8080;                 // --port (0: any free port)
    int parallel = 1;                // --parallel: slots
    int ctx_size = 4096;             // -c, --ctx-size: KV tokens per slot
    int threads = 0;                 // -t, --threads (0: physical cores)
    int image_max_tokens = 0;        // --image-max-tokens (0: the model's default budget)
    bool weights_q8 = false;         // --weights q8: int8 text-decoder weights, as in qvl-run
    bool weights_q4 = false;         // --weights q4: 4-bit text-decoder weights, as in qvl-run
    bool vision_q8 = false;          // --vision-weights q8: int8 vision tower, as in qvl-run
    int max_queue = 64;              // --max-queue
    // --admission-budget-ms: longest stretch of admitting a new request between two decode
    // steps of the running ones (runtime::EngineOptions::admission_budget_ms; 0: unbounded).
    double admission_budget_ms = 500;
    std::string api_key;                              // --api-key, else QVL_API_KEY
    std::string allowed_media_dir;                    // --allowed-media-dir
    std::vector<std::string> allowed_media_hosts;     // --allowed-media-hosts H1,H2 (lower case)
    double media_fetch_timeout_s = 10;                // --media-fetch-timeout-s
    int max_body_mb = 64;                             // --max-body-mb
    int max_images = 64;                              // --max-images: image parts per request
    std::uint64_t max_image_pixels = 8192ull * 8192;  // --max-image-pixels: per decoded image
    int http_threads = 64;                            // --http-threads: handler threads
    int max_connections = 1024;                       // --max-connections
    int max_connections_per_client = 64;              // --max-connections-per-client (0: off)
    double header_timeout_s = 10;                     // --header-timeout-s
    double sse_keepalive_s = 15;                      // --sse-keepalive-s (0: off)
    double shutdown_grace_s = 25;                     // --shutdown-grace-s
    int verbosity = 0;                                // -v / -q
    bool version = false;
};

// Parses argv into *o. Returns -1 to continue, 0 after --help, 2 on a usage error (one line
// "qvl-serve: error: ..." on err).
int parse_serve_args(int argc, const char* const* argv, ServeOptions* o, std::FILE* out,
                     std::FILE* err);

}  // namespace qvl::serve
