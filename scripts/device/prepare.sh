#!/bin/bash
# Fills .device/ for a run on the GPU machine (../shared/device/README.md):
# the binaries and kiln's libraries, plus what scripts/device/python-ext.sh
# needs to build the Python extension there (static libraries, dlpack.h).
# Usage, from the repository root after scripts/build.sh: scripts/device/prepare.sh [more files]
set -euo pipefail
B=$PWD/build
../shared/device/prepare $B/bin/kiln-run $B/bin/kiln-unit-tests $B/bin/kiln-capi-test \
  $B/bin/kiln-tune $B/bin/kiln-cache $B/bin/kiln-bench-cuda \
  $B/lib/libkiln-compiler.so $B/lib/libkiln-cpu-jit.so $B/lib/libkiln-cpu-runtime.so "$@"
mkdir -p .device/python-ext/include/dlpack
cp $B/backend/libKilnBackend.a $B/runtime/libKilnRuntime.a .device/python-ext/
cp /usr/include/dlpack/dlpack.h .device/python-ext/include/dlpack/
cp scripts/device/run-tests.sh scripts/device/run-benches.sh scripts/device/final.sh scripts/device/python-ext.sh .device/
du -sh .device
