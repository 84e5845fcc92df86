#!/usr/bin/env bash
# Configures and builds the sanitizer build into build-san/: clang with
# ASan+UBSan and libFuzzer's coverage hooks (-DKILN_SANITIZE=ON), for
# scripts/test-sanitizers.sh and scripts/fuzz.sh. Arguments: ninja targets.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -G Ninja -B build-san -S . -DCMAKE_BUILD_TYPE=Release -DKILN_SANITIZE=ON \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 >/dev/null
ninja -C build-san "$@"
