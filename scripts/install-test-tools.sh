#!/usr/bin/env bash
# Installs the test-only Python tools from PyPI into a venv under the build folder (never into
# the system): the official openai client (tests/serve/api_test.py) and kubernetes-validate (the
# deploy manifests' schema check). The venv is the one tests/serve/serve_util.py re-executes
# the API test in (its .qvl-ready marker says it is complete). CI runs this before the tests,
# so no test skips for want of these packages. Idempotent.
# Usage: scripts/install-test-tools.sh [venv-dir (default build/release/serve-venv)]
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-build/release/serve-venv}
packages=(openai kubernetes-validate)
python="$venv/bin/python"
if [ -f "$venv/.qvl-ready" ] && "$python" -c "import openai, kubernetes_validate" 2>/dev/null; then
    echo "install-test-tools: ${packages[*]} present in $venv"
    exit 0
fi
mkdir -p "$(dirname "$venv")"
/usr/bin/python3 -m venv --system-site-packages "$venv"
"$python" -m pip install -q --disable-pip-version-check "${packages[@]}"
"$python" -c "import openai, kubernetes_validate"
touch "$venv/.qvl-ready"
echo "install-test-tools: installed ${packages[*]} into $venv"
