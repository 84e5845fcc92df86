#!/usr/bin/env bash
# Builds kiln and runs every test suite: lit (dialect, passes, tools) and
# GoogleTest (runtime, backend, CPU conformance).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ninja -C build check-lit
