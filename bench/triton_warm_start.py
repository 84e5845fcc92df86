#!/usr/bin/env python3
"""Triton's warm start beside kiln's (issue 12): a fresh process that adds
two 2^20 f32 vectors on the GPU with its kernel from a warm TRITON_CACHE_DIR,
process start to first result on the host, median of RUNS; the time after
`import torch, triton` is reported too (Python's and torch's start-up is
not Triton's). kiln's side: bench/disk_cache_start.py cuda examples/add.mlir.
Usage (GPU machine): python3 bench/triton_warm_start.py [RUNS]"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import time
t0 = time.perf_counter()
import torch, triton, triton.language as tl

@triton.jit
def add(a, b, out, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + i, tl.load(a + i, mask=i < n) + tl.load(b + i, mask=i < n), mask=i < n)

t1 = time.perf_counter()
n = 1 << 20
a = torch.rand(n, device="cuda"); b = torch.rand(n, device="cuda"); out = torch.empty_like(a)
add[(n // 1024,)](a, b, out, n, BLOCK=1024)
assert torch.allclose(out.cpu(), (a + b).cpu())
print("%.1f %.1f" % ((t1 - t0) * 1e3, (time.perf_counter() - t1) * 1e3))
"""


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    work = tempfile.mkdtemp()
    env = dict(os.environ, TRITON_CACHE_DIR=os.path.join(work, "cache"))
    child = os.path.join(work, "child.py")  # triton.jit reads its function's source file
    with open(child, "w") as f:
        f.write(CHILD)
    totals, after_import = [], []
    for i in range(runs + 1):  # the first run fills the cache
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, child], env=env, capture_output=True, text=True)
        if proc.returncode:
            sys.exit(proc.stderr)
        out = proc.stdout.split()
        if i:
            totals.append((time.perf_counter() - start) * 1e3)
            after_import.append(float(out[1]))
    print(f"triton add 2^20 f32, warm TRITON_CACHE_DIR, median of {runs} fresh processes:")
    print(f"  process start to result:          {statistics.median(totals):8.1f} ms")
    print(f"  after import torch, triton:       {statistics.median(after_import):8.1f} ms "
          "(CUDA context, tensors, kernel load, launch, copy back)")


if __name__ == "__main__":
    main()
