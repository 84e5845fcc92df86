#!/usr/bin/env bash
# kiln's NCCL checks on the GPU machine in one device call: the unit tests
# (Nccl*, ArrivalBoard*, Communicator*), the C API test, the Python tests and
# the all_reduce bandwidth benchmark against torch.distributed
# (docs/multi-gpu.md). NCCL is torch's (pip nvidia-nccl-cu13) unless
# KILN_NCCL_LIBRARY names one.
#
# Here:   scripts/build.sh && scripts/device/prepare.sh
# There:  source .device/env.sh && bash bench/nccl_gpu_check.sh
# Logs go to $OUT (or /tmp); the exit status is 1 when any part failed.
set -u
: "${KILN_PAYLOAD:?source .device/env.sh first}"
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" # scripts/device/python-ext.sh works from the repository root
out=${OUT:-/tmp}
if [ -z "${KILN_NCCL_LIBRARY:-}" ]; then
  KILN_NCCL_LIBRARY=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))')
fi
export KILN_NCCL_LIBRARY
export KILN_COMPILER_LIBRARY=$KILN_PAYLOAD/libkiln-compiler.so
export KILN_CPU_JIT_LIBRARY=$KILN_PAYLOAD/libkiln-cpu-jit.so
export LD_LIBRARY_PATH=$KILN_PAYLOAD:$LD_LIBRARY_PATH
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export KILN_PYTHONPATH=/tmp/kiln-python
export PYTHONPATH=$KILN_PYTHONPATH${PYTHONPATH:+:$PYTHONPATH}
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
KILN_CACHE_DIR=$(mktemp -d)
export KILN_CACHE_DIR
failed=""

step() { # name, command...: runs it (at most 4 minutes: a hang is a failure
  # too), keeps its log, prints its tail
  local name=$1
  shift
  echo "== $name"
  timeout -k 10 240 "$@" > "$out/nccl-$name.log" 2>&1
  local rc=$?
  tail -n 25 "$out/nccl-$name.log"
  [ $rc -eq 0 ] || failed="$failed $name"
}

echo "KILN_NCCL_LIBRARY=$KILN_NCCL_LIBRARY"
step python-ext bash "$root/scripts/device/python-ext.sh" "$KILN_PYTHONPATH"
step unit "$KILN_PAYLOAD/kiln-unit-tests" --gtest_filter='Nccl*:ArrivalBoard*:Communicator*'
step capi "$KILN_PAYLOAD/kiln-capi-test"
step python python3 -m pytest -q -rs "$root/tests/python/test_distributed.py"
step bandwidth python3 "$root/bench/nccl_bandwidth.py" --json "$out/nccl_bandwidth.json"
echo "== ${failed:+FAILED:$failed}${failed:-all passed}"
[ -z "$failed" ]
