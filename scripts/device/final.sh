#!/bin/bash
# On the GPU machine, one call at a session's end (after scripts/device/prepare.sh
# here; carry [".device"]): `source .device/env.sh && bash .device/final.sh [BENCHES...]`.
# The conformance suites on CUDA and Vulkan and the unit tests side by side,
# then the named benchmarks one at a time (run-benches.sh names); logs in
# $OUT, a summary last. FINAL_TEST_SECONDS bounds the test phase.
export KILN_RUN=$KILN_PAYLOAD/kiln-run KILN_BIN=$KILN_PAYLOAD PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 PYTHONUNBUFFERED=1
export KILN_COMPILER_LIBRARY=$KILN_PAYLOAD/libkiln-compiler.so KILN_CPU_JIT_LIBRARY=$KILN_PAYLOAD/libkiln-cpu-jit.so KILN_CPU_RUNTIME_LIBRARY=$KILN_PAYLOAD/libkiln-cpu-runtime.so
export LD_LIBRARY_PATH=$KILN_PAYLOAD:$LD_LIBRARY_PATH
L=/tmp/kiln-logs; mkdir -p $L ${OUT:=/tmp/out}
t=${FINAL_TEST_SECONDS:-300}
fresh() { KILN_CACHE_DIR=$(mktemp -d) "$@"; }
(bash .device/python-ext.sh > $L/python-ext.log 2>&1; echo "rc $?" >> $L/python-ext.log) &
(fresh env KILN_DEVICE=cuda timeout $t python3 -m pytest -p xdist -n 8 -q -rs tests/conformance > $L/cuda.log 2>&1; echo "rc $?" >> $L/cuda.log) &
(fresh env KILN_DEVICE=vulkan timeout $t python3 -m pytest -p xdist -n 4 -q -rs tests/conformance/test_cpu_ops.py tests/conformance/test_conv_attention.py tests/conformance/test_dynamic_shapes.py > $L/vulkan.log 2>&1; echo "rc $?" >> $L/vulkan.log) &
fresh timeout $t $KILN_PAYLOAD/kiln-unit-tests > $L/unit.log 2>&1; echo "rc $?" >> $L/unit.log
wait
for f in $L/*.log; do echo "== $(basename $f): $(grep -E 'passed|failed|PASSED|FAILED  ' $f | tail -1) $(tail -1 $f)"; done
grep -h -E "^FAILED|^\[  FAILED" $L/*.log | head -20
tar czf $OUT/logs.tgz -C $L .
[ $# -gt 0 ] && bash .device/run-benches.sh "$@"
