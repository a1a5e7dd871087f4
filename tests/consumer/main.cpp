// Links qvl::engine from an installed prefix through the one public header, and checks that a
// bad model folder is an error value (with the engine's code), not an exception or a crash.
#include <qvl/qvl.h>

#include <cstdio>

int main() {
    std::printf("qvl %s\n", qvl::version());
    const qvl::Result<qvl::Model> model = qvl::Model::load("/nonexistent/qvl-model");
    if (model.ok() || model.status().code() != qvl::ErrorCode::kNotFound) {
        std::fprintf(stderr, "expected kNotFound, got: %s\n", model.status().message().c_str());
        return 1;
    }
    return 0;
}
