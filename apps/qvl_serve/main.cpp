// qvl-serve: an OpenAI-compatible HTTP server and chat page for a Qwen3-VL model folder. The
// contract (flags, endpoints, errors, readiness line, exit codes) is the shared docs/serve.md.
#include <malloc.h>
#include <pthread.h>
#include <qvl/qvl.h>
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>

#include "common/exit_codes.h"
#include "common/status.h"
#include "engine_request.h"
#include "http_server.h"
#include "media_fetch.h"
#include "serve_options.h"

namespace qvl::serve {
namespace {

using app::kExitModel;
using app::kExitOk;
using app::kExitOther;
using app::kExitResource;

// --max-connections sockets need as many descriptors: raise the soft limit towards the hard one
// (often 1024 soft, 512K hard), as servers do.
void raise_open_file_limit(int connections) {
    rlimit r{};
    if (getrlimit(RLIMIT_NOFILE, &r) != 0) return;
    const rlim_t want = rlim_t(connections) + 256;  // model files, pipes, listeners
    if (r.rlim_cur >= want) return;
    r.rlim_cur = r.rlim_max == RLIM_INFINITY ? want : std::min(want, r.rlim_max);
    setrlimit(RLIMIT_NOFILE, &r);
    if (r.rlim_cur < want) {
        std::fprintf(stderr,
                     "qvl-serve: warning: open files limited to %llu (ulimit -n), below "
                     "--max-connections %d\n",
                     static_cast<unsigned long long>(r.rlim_cur), connections);
    }
}

int fail(int code, const std::string& message) {
    std::fprintf(stderr, "qvl-serve: error: %s\n", message.c_str());
    return code;
}

// QVL_PRECISION as qvl-run reads it; an unknown value is a usage error naming the variable.
Result<Precision> precision_from_env() {
    const char* p = std::getenv("QVL_PRECISION");
    if (p == nullptr || *p == '\0') return Precision::kAuto;
    const std::optional<Precision> precision = precision_from_name(p);
    if (!precision) {
        return app::error(ErrorCode::kInvalidArgument,
                          "QVL_PRECISION: unknown value '{}' (expected {})", p,
                          precision_choices());
    }
    return *precision;
}

std::string folder_name(const std::string& dir) {
    std::filesystem::path p(dir);
    while (!p.empty() && p.filename().empty()) p = p.parent_path();
    return p.filename().empty() ? dir : p.filename().string();
}

// The multi-sequence Engine: slots, batched decode, chunked prefill, prefix and image caches.
// Its own queue bound is `slots` above --max-queue (ServerConfig::max_queue says why).
EngineOptions engine_options(const ServeOptions& o, Precision precision,
                             const std::filesystem::path& media_dir) {
    EngineOptions eo;
    eo.session.threads = o.threads;
    eo.session.ctx_size = o.ctx_size;
    eo.session.max_image_tokens = o.image_max_tokens;
    eo.session.precision = precision;
    eo.slots = o.parallel;
    eo.max_queue = o.max_queue + o.parallel;
    eo.admission_budget_ms = o.admission_budget_ms;
    eo.image_limits.max_pixels = o.max_image_pixels;
    eo.image_limits.max_file_bytes = std::uint64_t(o.max_body_mb) << 20;
    eo.resolve_media = media_resolver(media_dir, {.max_bytes = std::size_t(o.max_body_mb) << 20,
                                                  .timeout_s = o.media_fetch_timeout_s});
    return eo;
}

ServerConfig server_config(const ServeOptions& o, const Model& m) {
    ServerConfig config;
    config.model_id = folder_name(o.model_dir);
    config.api_key = o.api_key;
    config.max_body_bytes = std::size_t(o.max_body_mb) << 20;
    // Every request a slot or the queue can hold gets a handler thread, plus a few for the
    // quick endpoints and the 503s: a queued request never waits for a thread first.
    config.http_threads = std::max(o.http_threads, o.max_queue + o.parallel + 8);
    config.max_connections = o.max_connections;
    config.max_connections_per_client = o.max_connections_per_client;
    config.header_timeout_s = o.header_timeout_s;
    config.sse_keepalive_s = o.sse_keepalive_s;
    config.log_requests = o.verbosity > 0;
    config.parse_limits.max_images = o.max_images;
    config.parse_limits.allow_file_urls = !o.allowed_media_dir.empty();
    config.parse_limits.vocab_size = m.vocab_size();
    config.parse_limits.allowed_media_hosts = o.allowed_media_hosts;
    // n choices share one prefill when --parallel slots are free for them; more wait.
    config.parse_limits.max_n = 16;
    config.max_queue = o.max_queue;
    return config;
}

// After SIGINT or SIGTERM: running requests get --shutdown-grace-s to finish, then are cut.
int drain_and_stop(const ServeOptions& o, HttpServer& server, int sig) {
    server.begin_drain();  // first, so that the line below is already true when it is read
    std::fprintf(stderr, "qvl-serve: %s: finishing running requests\n",
                 sig == SIGTERM ? "SIGTERM" : "SIGINT");
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(o.shutdown_grace_s));
    while (server.in_flight() > 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (server.in_flight() > 0) {
        server.cancel_all();
        const auto cancel_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        while (server.in_flight() > 0 && std::chrono::steady_clock::now() < cancel_deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }
    const int cut = server.answers_cut();
    server.stop();
    return cut;
}

int serve(const ServeOptions& o) {
    // glibc gives each thread that allocates its own heap arena (up to 8 per core), and with
    // dozens of handler threads the RSS crept up by a few MB per new arena through a soak (165
    // -> 190 MB in 60 s on the tiny model); two arenas kept it flat (109.5 -> 110.9 MB). The
    // model's weights and KV are mapped, not malloc'd. MALLOC_ARENA_MAX still overrides this.
    if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 2);
    if (o.verbosity < 0) set_log_level(LogLevel::kError);
    if (o.verbosity > 0) set_log_level(LogLevel::kInfo);
    // Signals are taken by sigwait in this thread only: every thread started below inherits
    // the mask, so a signal never interrupts a worker.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    signal(SIGPIPE, SIG_IGN);  // a client that goes away is an error return, not a signal

    const Result<Precision> precision = precision_from_env();
    if (!precision.ok()) return fail(app::kExitUsage, precision.status().message());
    Result<Model> loaded = Model::load(
        o.model_dir, {.weights = o.weights_q4   ? Weights::kQ4
                                 : o.weights_q8 ? Weights::kQ8
                                                : Weights::kBF16,
                      .vision_weights = o.vision_q8 ? VisionWeights::kQ8 : VisionWeights::kBF16});
    if (!loaded.ok()) return fail(kExitModel, loaded.status().message());
    const Model& m = loaded.value();
    std::filesystem::path media_dir;
    if (!o.allowed_media_dir.empty()) {
        std::error_code ec;
        media_dir = std::filesystem::canonical(o.allowed_media_dir, ec);
        if (ec) return fail(app::kExitUsage, "--allowed-media-dir: " + ec.message());
    }
    Result<Engine> created = Engine::create(m, engine_options(o, precision.value(), media_dir));
    if (!created.ok()) {
        const bool budget = created.status().code() == ErrorCode::kResourceExhausted;
        return fail(budget ? kExitResource : kExitOther,
                    created.status().message() +
                        (budget ? " (lower -c/--ctx-size, --parallel or --image-max-tokens)" : ""));
    }
    auto engine = std::make_unique<Engine>(std::move(created).value());

    std::string threads_reason = "--threads";
    if (o.threads <= 0) default_threads(&threads_reason);
    raise_open_file_limit(o.max_connections);
    auto server = std::make_unique<HttpServer>(*engine, m, server_config(o, m));
    Result<int> port = server->bind(o.host, o.port);
    if (!port.ok()) return fail(kExitOther, port.status().message());
    std::thread listener([&] { server->run(); });
    const bool ipv6 = o.host.find(':') != std::string::npos;
    std::fprintf(stderr, "qvl-serve: %d compute threads (%s)\n", engine->threads(),
                 threads_reason.c_str());
    std::fprintf(stderr, "qvl-serve: listening on http://%s%s%s:%d\n", ipv6 ? "[" : "",
                 o.host.c_str(), ipv6 ? "]" : "", port.value());
    std::fflush(stderr);

    int sig = 0;
    sigwait(&signals, &sig);
    const int cut = drain_and_stop(o, *server, sig);
    listener.join();
    engine.reset();  // ends anything left; its callbacks still reach the server
    server.reset();
    std::fprintf(stderr, "qvl-serve: stopped (%d answers cut at the deadline)\n", cut);
    return kExitOk;
}

}  // namespace
}  // namespace qvl::serve

int main(int argc, char** argv) try {
    qvl::serve::ServeOptions options;
    const int parsed = qvl::serve::parse_serve_args(argc, argv, &options, stdout, stderr);
    if (parsed >= 0) return parsed;
    qvl::serve::media_fetch_init();
    if (options.version) {
        std::printf("qvl-serve %s (isa %s)\n", qvl::version(), qvl::kernel_tier().value().c_str());
        return 0;
    }
    return qvl::serve::serve(options);
} catch (const std::exception& e) {
    std::fprintf(stderr, "qvl-serve: error: %s\n", e.what());
    return 1;
}
