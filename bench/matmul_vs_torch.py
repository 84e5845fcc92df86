#!/usr/bin/env python3
"""kiln matmuls against torch (cuBLAS) on one GPU, shape by shape.

kiln: host clock over a batch of device-resident runs (median of 5
batches), or with `--device-time` kiln's profiler (device time of the
batch's kernels: what a small matmul's host-side launch costs drops out);
torch: CUDA events around the same batches. Relative error
(largest difference over largest value) against a float64 product of the
same inputs, for both. Prints a markdown table. `--weights` multiplies by
W^T, W stored N x K (torch's Linear; kiln reads W as it stands). f8 is
torch's _scaled_mm: e4m3 matrices, per-tensor scales, bf16 out, always
x @ W^T (_scaled_mm requires B column-major).

  python3 bench/matmul_vs_torch.py --dtype tf32 --shapes 4096x4096x4096,8192x8192x8192
  python3 bench/matmul_vs_torch.py --dtype f8 --shapes 8192x8192x8192
  python3 bench/matmul_vs_torch.py --dtype bf16 --weights --shapes 8192x8192x8192
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

ELEMENT = {"f32": "f32", "tf32": "f32", "bf16": "bf16", "f16": "f16", "f8": "f8E4M3FN"}
TORCH = {"f32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16,
         "f16": torch.float16, "f8": getattr(torch, "float8_e4m3fn", None)}
KILN_DTYPE = {"bf16": "bfloat16", "f16": "float16", "f8E4M3FN": "float8_e4m3fn"}
SCALES = (0.5, 0.25)  # f8: _scaled_mm's scale_a, scale_b


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


def device_batch_ms(run, backend, runs):
    """Median over 5 batches of the batch's device time per run, by kiln's
    profiler."""
    run()
    backend.sync()
    times = []
    for _ in range(5):
        with backend.profile() as window:
            for _ in range(runs):
                run()
        if window.milliseconds is None:
            raise RuntimeError("kiln's profiler could not time the batch")
        times.append(window.milliseconds / runs)
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
    parser.add_argument("--weights", action="store_true", help="x @ W^T, W stored N x K")
    parser.add_argument("--device-time", action="store_true",
                        help="time kiln by its profiler (device time) instead of the host clock")
    args = parser.parse_args()
    backend = kiln.backend("cuda")
    torch.backends.cuda.matmul.allow_tf32 = args.dtype == "tf32"
    element = ELEMENT[args.dtype]
    rng = np.random.default_rng(0)
    print("| case | kiln ms (TFLOP/s) | torch ms | kiln vs torch | kiln error | torch error |")
    print("|---|---|---|---|---|---|")
    for shape in args.shapes.split(","):
        m, k, n = (int(v) for v in shape.split("x"))
        t = lambda r, c, e=element: f"tensor<{r}x{c}x{e}>"  # noqa: E731
        a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        scaled = args.dtype == "f8"
        weights = scaled or args.weights  # B is W^T, W (N x K) stored
        b = rng.uniform(-1, 1, (n, k) if weights else (k, n)).astype(np.float32)
        b_type = t(n, k) if weights else t(k, n)
        transpose = (f"  %b = kiln.transpose %w {{perm = array<i64: 1, 0>}} : {t(n, k)} -> {t(k, n)}\n"
                     if weights else "")
        ka, kb = (kiln.tensor(x, "cuda", dtype=KILN_DTYPE.get(element)) for x in (a, b))
        ta, tb = (torch.from_numpy(x).to("cuda").to(TORCH[args.dtype]) for x in (a, b))
        if weights:
            tb = tb.t()  # a view, column-major: as Linear and _scaled_mm read W
        if scaled:
            s, out = "tensor<f32>", t(m, n, "bf16")
            program = (f"func.func @main(%a: {t(m, k)}, %w: {t(n, k)}, %sa: {s}, %sb: {s}) -> {out} {{\n"
                       + transpose +
                       f"  %r = kiln.matmul %a, %b : ({t(m, k)}, {t(k, n)}) -> {t(m, n, 'f32')}\n"
                       f"  %s = kiln.mul %sa, %sb : ({s}, {s}) -> {s}\n"
                       f"  %sr = kiln.broadcast %s : {s} -> {t(m, n, 'f32')}\n"
                       f"  %p = kiln.mul %r, %sr : ({t(m, n, 'f32')}, {t(m, n, 'f32')}) -> {t(m, n, 'f32')}\n"
                       f"  %c = kiln.cast %p : {t(m, n, 'f32')} -> {out}\n"
                       f"  return %c : {out}\n}}\n")
            kargs = (ka, kb, *(kiln.tensor(np.array(v, np.float32), "cuda") for v in SCALES))
            tscales = [torch.tensor(v, device="cuda") for v in SCALES]

            def reference():
                r = torch._scaled_mm(ta, tb, scale_a=tscales[0], scale_b=tscales[1],
                                     out_dtype=torch.bfloat16)
                return r[0] if isinstance(r, tuple) else r  # torch < 2.4: (out, amax)
            want = ta.double() @ tb.double() * (SCALES[0] * SCALES[1])
        else:
            program = (f"func.func @main(%a: {t(m, k)}, %{'w' if weights else 'b'}: {b_type}) -> {t(m, n, 'f32')} {{\n"
                       + transpose +
                       f"  %r = kiln.matmul %a, %b : ({t(m, k)}, {t(k, n)}) -> {t(m, n, 'f32')}\n"
                       f"  return %r : {t(m, n, 'f32')}\n}}\n")
            kargs = (ka, kb)
            reference = lambda: ta @ tb  # noqa: E731
            want = ta.double() @ tb.double()
        matmul = kiln.compile(program, "cuda", tf32=args.dtype == "tf32")
        got = matmul(*kargs)
        got = got[0] if isinstance(got, (list, tuple)) else got
        got = (got.astype("float32") if scaled else got).numpy()
        def error(x):
            return float((x.double() - want).abs().max() / want.abs().max())
        kiln_error, torch_error = error(torch.from_numpy(got).cuda()), error(reference())
        if args.device_time:
            kiln_ms = device_batch_ms(lambda: matmul(*kargs), backend, args.runs)
        else:
            kiln_ms = median_batch_ms(lambda: matmul(*kargs), backend.sync, args.runs)
        peer_ms = torch_ms(reference, args.runs)
        tflops = 2 * m * n * k / kiln_ms / 1e9
        print(f"| {args.dtype} {m}x{k}x{n} | {kiln_ms:.3f} ({tflops:.0f}) | {peer_ms:.3f} | "
              f"{peer_ms / kiln_ms:.2f}x | {kiln_error:.1e} | {torch_error:.1e} |", flush=True)


if __name__ == "__main__":
    main()
