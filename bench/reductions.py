"""Reductions over several dims or over outer dims (kiln-gpu-normalize-
reductions) in kiln against torch on the same GPU, same run: a full sum of
a matrix, column sums, a spatial mean (global average pool), batch-norm
statistics (dims 0, 2, 3: not adjacent), a channel mean (dim 1 of NCHW), a
max over dims 0 and 2, a sum over a middle dim, and global average and max
pools (avg_pool2d/max_pool2d over whole images), and softmax over dim 0
and over an NCHW image's channels (kiln-gpu-column-chains: a column per
thread through all four stages). Each time is the median
over --repeats of --calls back-to-back calls on device-resident tensors,
then one sync, divided by --calls. Prints a markdown table with each
case's floor (its input read once at 4.3 TB/s, the H200's HBM3e, and a
softmax's output written once);
torch/kiln > 1 means kiln is faster.

  python3 bench/reductions.py --device cuda                          # H200
  /usr/bin/python3 bench/reductions.py --device vulkan --torch-device cpu --small  # lavapipe
"""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from conv_attention import kiln, table, tensor_type  # noqa: E402
from scan_reduce import timed_ms  # noqa: E402

HBM_BYTES_PER_MS = 4.3e9


def cases(small):
    """(name, op, input shape, reduced dims; a pool's kernel)."""
    if small:
        return [("sum all 512x512", "sum", (512, 512), (0, 1)),
                ("column sum 512x512", "sum", (512, 512), (0,)),
                ("mean dims 2,3 of 4x16x28x28", "mean", (4, 16, 28, 28), (2, 3)),
                ("sum dims 0,2,3 of 4x16x28x28", "sum", (4, 16, 28, 28), (0, 2, 3)),
                ("mean dim 1 of 1x3x256x256", "mean", (1, 3, 256, 256), (1,)),
                ("global avg pool 4x16x28x28", "avg_pool2d", (4, 16, 28, 28), (28, 28)),
                ("softmax dim 0 of 21x3000", "softmax", (21, 3000), (0,)),
                ("softmax dim 1 of 2x21x32x32", "softmax", (2, 21, 32, 32), (1,))]
    return [("sum all 4096x4096", "sum", (4096, 4096), (0, 1)),
            ("column sum 4096x4096", "sum", (4096, 4096), (0,)),
            ("mean dims 2,3 of 32x256x56x56", "mean", (32, 256, 56, 56), (2, 3)),
            ("sum dims 0,2,3 of 32x256x56x56", "sum", (32, 256, 56, 56), (0, 2, 3)),
            ("mean dim 1 of 8x3x512x512", "mean", (8, 3, 512, 512), (1,)),
            ("max dims 0,2 of 1000x3x1000", "max", (1000, 3, 1000), (0, 2)),
            ("sum dim 1 of 64x128x4096", "sum", (64, 128, 4096), (1,)),
            ("global avg pool 32x256x56x56", "avg_pool2d", (32, 256, 56, 56), (56, 56)),
            ("global max pool 32x256x56x56", "max_pool2d", (32, 256, 56, 56), (56, 56)),
            ("global avg pool 8x64x300x300", "avg_pool2d", (8, 64, 300, 300), (300, 300)),
            ("softmax dim 0 of 21x262144", "softmax", (21, 262144), (0,)),
            ("softmax dim 1 of 4x21x256x256", "softmax", (4, 21, 256, 256), (1,)),
            ("softmax dim 0 of 64x262144", "softmax", (64, 262144), (0,)),
            ("softmax dim 0 of 256x65536", "softmax", (256, 65536), (0,)),
            ("softmax dim 0 of 1024x16384", "softmax", (1024, 16384), (0,)),
            ("softmax dim 0 of 4096x4096", "softmax", (4096, 4096), (0,))]


def program(op, shape, dims):
    if op == "softmax":
        t = tensor_type(shape, "f32")
        return (f"func.func @main(%x: {t}) -> {t} {{\n"
                f"  %r = kiln.softmax %x {{dim = {dims[0]}}} : {t}\n"
                f"  return %r : {t}\n}}\n")
    if op.endswith("pool2d"):
        t, r = tensor_type(shape, "f32"), tensor_type(shape[:2] + (1, 1), "f32")
        return (f"func.func @main(%x: {t}) -> {r} {{\n"
                f"  %r = kiln.{op} %x {{kernel = array<i64: {dims[0]}, {dims[1]}>}} : {t} -> {r}\n"
                f"  return %r : {r}\n}}\n")
    out_shape = tuple(s for d, s in enumerate(shape) if d not in dims)
    t, r = tensor_type(shape, "f32"), tensor_type(out_shape, "f32")
    listed = ", ".join(str(d) for d in dims)
    return (f"func.func @main(%x: {t}) -> {r} {{\n"
            f"  %r = kiln.reduce_{op} %x {{dims = array<i64: {listed}>}} : {t} -> {r}\n"
            f"  return %r : {r}\n}}\n")


def torch_fn(op, dims):
    if op == "softmax":
        return lambda x: torch.softmax(x, dims[0])
    if op.endswith("pool2d"):
        return lambda x: getattr(torch.nn.functional, op)(x, dims)
    if op == "max":
        return lambda x: torch.amax(x, dim=dims)
    return lambda x: getattr(torch, op)(x, dim=dims)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda", help="kiln device: cuda, vulkan")
    parser.add_argument("--torch-device", help="torch device (default: --device)")
    parser.add_argument("--small", action="store_true", help="small shapes (lavapipe)")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    if kiln is None:
        sys.exit("the kiln Python package is not built (KILN_PYTHONPATH)")
    torch_device = args.torch_device or args.device
    torch_sync = torch.cuda.synchronize if torch_device.startswith("cuda") else (lambda: None)
    backend = kiln.backend(args.device)
    rng = np.random.default_rng(0)
    rows = []
    for name, op, shape, dims in cases(args.small):
        x = rng.uniform(0.5, 1.5, shape).astype(np.float32)
        fn = torch_fn(op, dims)
        tx = torch.from_numpy(x).to(torch_device)
        kx = kiln.tensor(x, device=args.device)
        compiled = kiln.compile(program(op, shape, dims), args.device)
        want = fn(torch.from_numpy(x).double()).numpy()
        np.testing.assert_allclose(np.asarray(compiled(kx).numpy(), np.float64), want, rtol=1e-4)
        floor = x.nbytes * (2 if op == "softmax" else 1) / HBM_BYTES_PER_MS
        rows.append((f"{name} ({args.device}; floor {floor * 1e3:.1f} us)",
                     timed_ms(lambda: fn(tx), torch_sync, args.calls, args.repeats),
                     timed_ms(lambda: compiled(kx), backend.sync, args.calls, args.repeats)))
    table(f"kiln {args.device} vs torch {torch_device}", rows)


if __name__ == "__main__":
    main()
