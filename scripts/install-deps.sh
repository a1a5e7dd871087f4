#!/usr/bin/env bash
# Installs everything qvl needs to build, test and benchmark, from Debian 12 packages only.
# Idempotent: packages already present are left alone. Run as root (or with sudo available).
set -euo pipefail

packages=(
    build-essential cmake ninja-build pkg-config git curl ca-certificates
    libxsimd-dev libspng-dev libjpeg62-turbo-dev
    libgtest-dev libgmock-dev libbenchmark-dev
    libsimdjson-dev libfmt-dev libpcre2-dev libutf8proc-dev libcli11-dev
    clang clang-format-14 clang-tidy-14 libclang-rt-14-dev
    python3 python3-numpy python3-pil
)

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
