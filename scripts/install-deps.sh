#!/usr/bin/env bash
# Installs everything qvl needs to build, test and benchmark, from Debian 12 packages only.
# Idempotent: packages already present are left alone. Run as root (or with sudo available).
#
# Opt-in: `--peers` (or QVL_INSTALL_PEERS=1) also installs oneDNN and OpenBLAS for the benchmark's
# peer rows (cmake -DQVL_BENCH_PEERS=ON, see bench/README.md); the product never needs them.
# Opt-in: `--browser` (or QVL_INSTALL_BROWSER=1) installs chromium, chromium-driver and
# python3-selenium (several hundred MB) for the chat page's browser test (ctest -R serve_browser;
# CI passes it, .ci/run, where a skip fails the run); python3-venv is always installed for the
# PyPI test tools (scripts/install-test-tools.sh).
set -euo pipefail

peers="${QVL_INSTALL_PEERS:-0}"
browser="${QVL_INSTALL_BROWSER:-0}"
for arg in "$@"; do
    case "$arg" in
        --peers) peers=1 ;;
        --browser) browser=1 ;;
        -h | --help)
            echo "usage: $0 [--peers] [--browser]   (--peers: libdnnl-dev libopenblas-dev for bench"
            echo "       peers; --browser: chromium chromium-driver python3-selenium for the chat page test)"
            exit 0
            ;;
        *)
            echo "install-deps: unknown argument '$arg' (usage: $0 [--peers] [--browser])" >&2
            exit 2
            ;;
    esac
done

packages=(
    build-essential cmake ninja-build pkg-config git curl ca-certificates
    libxsimd-dev libspng-dev libjpeg62-turbo-dev libwebp-dev libgif-dev
    libavformat-dev libavcodec-dev libswscale-dev libavutil-dev  # video input (io/video.h)
    libgtest-dev libgmock-dev libbenchmark-dev
    libsimdjson-dev libfmt-dev libpcre2-dev libutf8proc-dev libcli11-dev
    libboost-dev  # qvl-serve's HTTP transport: Boost.Asio and Beast (header-only)
    libcurl4-openssl-dev  # qvl-serve --allowed-media-hosts: image URLs fetched
    clang clang-format-14 clang-tidy-14 libclang-rt-14-dev
    python3 python3-numpy python3-pil python3-venv
)
if [ "$peers" = 1 ]; then
    packages+=(libdnnl-dev libopenblas-dev)
fi
if [ "$browser" = 1 ]; then
    packages+=(chromium chromium-driver python3-selenium)
fi

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#packages[@]} packages present"
    exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
