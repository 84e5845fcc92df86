#!/usr/bin/env bash
# Builds kiln and runs every test suite: lit (dialect, passes, tools),
# GoogleTest (runtime, backend) and the CPU conformance suite (pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ninja -C build check-lit
(cd build && ctest --output-on-failure)
# Debian's python3 has numpy and pytest; a pyenv python3 on PATH may not.
/usr/bin/python3 -m pytest -q tests/conformance
