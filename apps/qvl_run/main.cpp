// qvl-run: answers a prompt about images with a Qwen3-VL model (skeleton; see the CLI contract).
#include <cstdio>

#include "base/version.h"

int main(int argc, char** argv) {
    std::printf("qvl-run %s\n", qvl::base::version());
    return 0;
}
