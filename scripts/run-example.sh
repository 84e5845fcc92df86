#!/usr/bin/env bash
# Builds kiln and runs the main job: kiln-run on an example program on the CPU.
# Usage: scripts/run-example.sh [PROGRAM.mlir] [kiln-run options...]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh kiln-run >/dev/null
program=${1:-examples/mlp.mlir}
shift || true
exec build/bin/kiln-run "$program" --print --bench 10 --output-dir build/results "$@"
