#!/usr/bin/env bash
# Configures and builds kiln into build/ (after installing dependencies).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -G Ninja -B build -S . -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build "$@"
