#!/usr/bin/env python3
"""kiln matmuls against torch (cuBLAS) on one GPU, shape by shape.

kiln: host clock over a batch of device-resident runs (median of 5
batches); torch: CUDA events around the same batches. Relative error
against a float64 product. Prints a markdown table.

  python3 bench/matmul_vs_torch.py --dtype tf32 --shapes 4096x4096x4096,8192x8192x8192
"""
import argparse
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.environ.get("KILN_PYTHONPATH", os.path.join(
    os.path.dirname(__file__), "..", "build", "python")))
import kiln  # noqa: E402

ELEMENT = {"f32": "f32", "tf32": "f32", "bf16": "bf16", "f16": "f16"}
TORCH = {"f32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16,
         "f16": torch.float16}


def median_batch_ms(run, sync, runs):
    run()
    sync()
    times = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(runs):
            run()
        sync()
        times.append((time.perf_counter() - start) * 1e3 / runs)
    return sorted(times)[2]


def torch_ms(run, runs):
    run()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(5):
        start.record()
        for _ in range(runs):
            run()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / runs)
    return sorted(times)[2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dtype", default="tf32", choices=sorted(ELEMENT))
    parser.add_argument("--shapes", default="4096x4096x4096")
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    backend = kiln.backend("cuda")
    torch.backends.cuda.matmul.allow_tf32 = args.dtype == "tf32"
    element = ELEMENT[args.dtype]
    rng = np.random.default_rng(0)
    print("| case | kiln ms (TFLOP/s) | torch ms | kiln vs torch | rel. error |")
    print("|---|---|---|---|---|")
    for shape in args.shapes.split(","):
        m, k, n = (int(v) for v in shape.split("x"))
        t = lambda r, c, e=element: f"tensor<{r}x{c}x{e}>"  # noqa: E731
        program = (f"func.func @main(%a: {t(m, k)}, %b: {t(k, n)}) -> {t(m, n, 'f32')} {{\n"
                   f"  %r = kiln.matmul %a, %b : ({t(m, k)}, {t(k, n)}) -> {t(m, n, 'f32')}\n"
                   f"  return %r : {t(m, n, 'f32')}\n}}\n")
        a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
        kiln_dtype = {"bf16": "bfloat16", "f16": "float16"}.get(element)
        ka, kb = (kiln.tensor(x, "cuda", dtype=kiln_dtype) for x in (a, b))
        matmul = kiln.compile(program, "cuda", tf32=args.dtype == "tf32")
        got = matmul(ka, kb)
        got = (got[0] if isinstance(got, (list, tuple)) else got).numpy()
        ta, tb = (torch.from_numpy(x).to("cuda", TORCH[args.dtype]) for x in (a, b))
        want = ta.double() @ tb.double()
        error = float((torch.from_numpy(got).cuda().double() - want).abs().max() /
                      want.abs().max())
        kiln_ms = median_batch_ms(lambda: matmul(ka, kb), backend.sync, args.runs)
        reference = torch_ms(lambda: ta @ tb, args.runs)
        tflops = 2 * m * n * k / kiln_ms / 1e9
        print(f"| {args.dtype} {m}x{k}x{n} | {kiln_ms:.3f} ({tflops:.0f}) | {reference:.3f} | "
              f"{reference / kiln_ms:.2f}x | {error:.1e} |", flush=True)


if __name__ == "__main__":
    main()
