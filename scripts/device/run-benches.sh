#!/bin/bash
# On the GPU machine, after run-tests.sh in the same lease (it built the
# Python extension into /tmp/kiln-python): the benchmarks, one at a time,
# each bounded; logs in $OUT/benches.tgz, the tables last. Arguments name
# the benchmarks to run (default: all), e.g. `run-benches.sh kernels dispatch`.
export KILN_RUN=$KILN_PAYLOAD/kiln-run KILN_BIN=$KILN_PAYLOAD PYTHONUNBUFFERED=1
export KILN_COMPILER_LIBRARY=$KILN_PAYLOAD/libkiln-compiler.so KILN_CPU_JIT_LIBRARY=$KILN_PAYLOAD/libkiln-cpu-jit.so KILN_CPU_RUNTIME_LIBRARY=$KILN_PAYLOAD/libkiln-cpu-runtime.so
export LD_LIBRARY_PATH=$KILN_PAYLOAD:$LD_LIBRARY_PATH
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export KILN_PYTHONPATH=/tmp/kiln-python PYTHONPATH=/tmp/kiln-python
: "${KILN_NCCL_LIBRARY:=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)}"
export KILN_NCCL_LIBRARY
L=/tmp/kiln-benches; mkdir -p $L ${OUT:=/tmp/out}
[ -d /tmp/kiln-python/kiln ] || bash scripts/device/python-ext.sh > $L/python-ext.log 2>&1
only=" $* "
bench() { # name seconds command...
  local name=$1 seconds=$2; shift 2
  [ "$only" = "  " ] || [[ "$only" == *" $name "* ]] || return 0
  KILN_CACHE_DIR=$(mktemp -d) timeout $seconds "$@" > $L/$name.log 2>&1; echo "rc $?" >> $L/$name.log
}
bench kernels 240 $KILN_PAYLOAD/kiln-bench-cuda 20
bench torch-kernels 120 python3 bench/torch_reference.py
bench reductions 120 python3 bench/reductions.py --device cuda
bench conv-attention 300 python3 bench/conv_attention.py --device cuda --dtypes f16 --runs 10
bench autotune ${AUTOTUNE_SECONDS:-500} python3 bench/autotune.py --device cuda --repeats 3 --budget-ms 500 --dtypes ${AUTOTUNE_DTYPES:-bf16} --only ${AUTOTUNE_ONLY:-matmul}
bench dispatch 60 python3 bench/python_dispatch.py --device cuda
bench dispatch-cpu 60 python3 bench/python_dispatch.py --device cpu
bench run-bench-cuda 30 $KILN_PAYLOAD/kiln-run examples/mlp.mlir --device cuda --bench 20
bench run-bench-vulkan 30 $KILN_PAYLOAD/kiln-run examples/mlp.mlir --device vulkan --bench 20
bench start-cuda-mlp 90 python3 bench/disk_cache_start.py cuda examples/mlp.mlir 5
bench start-cuda-add 60 python3 bench/disk_cache_start.py cuda examples/add.mlir 5
bench start-cpu-mlp 60 python3 bench/disk_cache_start.py cpu examples/mlp.mlir 5
bench triton-start 60 python3 bench/triton_warm_start.py 5
bench eager-vulkan 60 $KILN_PAYLOAD/kiln-bench-eager vulkan 1000
bench eager-cuda 60 $KILN_PAYLOAD/kiln-bench-eager cuda 1000
bench graph-vulkan 60 $KILN_PAYLOAD/kiln-bench-graph vulkan 200
bench nccl 60 python3 bench/nccl_bandwidth.py
bench scan-reduce-cuda 60 python3 bench/scan_reduce.py --device cuda
bench scan-reduce-vulkan 60 python3 bench/scan_reduce.py --device vulkan --torch-device cuda
bench dynamic-cuda 300 python3 bench/dynamic_shapes.py --device cuda --runs 10
bench decode-cuda 300 python3 bench/decode_loop.py --device cuda --static-every 64
tar czf $OUT/benches.tgz -C $L .
for f in $L/*.log; do echo "== $(basename $f .log)"; tail -n 12 $f; done
