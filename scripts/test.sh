#!/usr/bin/env bash
# Builds kiln and runs every test suite: lit (dialect, passes, tools),
# GoogleTest (runtime, backend), the conformance suite on the CPU (pytest),
# and the same op cases on Vulkan (lavapipe where there is no GPU); a case
# the device cannot run is listed as skipped with its reason (-rs).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
# A fresh disk kernel cache for this run (docs/caches.md): later suites hit
# what earlier ones compiled, none reads a cache left by another run.
export KILN_CACHE_DIR="$(mktemp -d)"
trap 'rm -rf "$KILN_CACHE_DIR"' EXIT
# Tests run as many at a time as there are cores (pytest-xdist, ctest -j):
# each case compiles on one core, so two cores halve CI's test time
# (docs/testing.md, "CI time").
jobs=$(nproc)
# Debian's python3 has numpy and pytest; a pyenv python3 on PATH may not.
pytest=(/usr/bin/python3 -m pytest -p xdist -n "$jobs")
ninja -C build check-lit
(cd build && ctest -j "$jobs" --output-on-failure)
"${pytest[@]}" -q tests/conformance
# The kernels hosts with narrower vectors get, on this one: AVX2's 8 lanes
# and SSE's 4 (KILN_CPU_FEATURES, docs/testing.md), where most lowering
# depends on the lanes.
KILN_CPU_FEATURES=-avx512f "${pytest[@]}" -q tests/conformance/test_conv_attention.py tests/conformance/test_lowering_cases.py
KILN_CPU_FEATURES=-avx512f "${pytest[@]}" -q tests/conformance/test_cpu_ops.py -k "matmul or softmax or norm or sum or transpose or conv"
KILN_CPU_FEATURES=-avx "${pytest[@]}" -q tests/conformance/test_conv_attention.py
KILN_DEVICE=vulkan "${pytest[@]}" -q -rs tests/conformance/test_split_shapes.py tests/conformance/test_lowering_cases.py tests/conformance/test_dynamic_shapes.py
KILN_DEVICE=vulkan "${pytest[@]}" -q -rs tests/conformance/test_cpu_ops.py tests/conformance/test_conv_attention.py
# The Python package (build/python): every op against NumPy, DLPack with
# NumPy and torch, errors, backend services, kiln.torch.backend; the
# device-generic cases again on Vulkan.
"${pytest[@]}" -q tests/python
KILN_DEVICE=vulkan "${pytest[@]}" -q -rs tests/python/test_ops.py tests/python/test_backend.py
# Random programs on the CPU and Vulkan against each other and a float64
# NumPy reference (tests/differential, docs/testing.md).
/usr/bin/python3 tests/differential/run_differential.py --seed 1 --count 300
