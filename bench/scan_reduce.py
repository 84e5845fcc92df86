"""A full reduce_sum, argmax and cumsum of 2^26 f32, an argmax over 8 rows
of 131072 (greedy sampling over a language model's vocabulary) and two
scatter_adds (2^24 f32 into 65536 bins; 16384 rows of 1024 into 4096 rows,
as an embedding's gradient) (issue 14 item 5) in kiln against torch on the same GPU, same run. Each time is the median over
--repeats of --calls back-to-back calls on device-resident tensors, then
one sync, divided by --calls (so per-call sync and host latency are spread
out the same way for both). Prints a markdown table; torch/kiln > 1 means
kiln is faster.

  python3 bench/scan_reduce.py --device cuda                         # H200
  python3 bench/scan_reduce.py --device cuda --dynamic               # the same programs with `?` dims
  python3 bench/scan_reduce.py --device vulkan --torch-device cuda   # H200
  /usr/bin/python3 bench/scan_reduce.py --device vulkan --torch-device cpu --log2 20  # lavapipe

Floors at 4.3 TB/s: a reduce or argmax reads 4 bytes per element (2^26:
62 us; 8 x 131072: 1 us, so launches dominate); the scatter_adds read
index and source (12 bytes an element: 47 us and 47 us) and atomics add
them into the output; a scan reads and writes them (125 us; kiln's blocked scan reads twice: 187 us).
"""
import argparse
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from conv_attention import kiln, table, tensor_type  # noqa: E402


def timed_ms(call, sync, calls, repeats):
    for _ in range(3):
        call()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        sync()
        times.append((time.perf_counter() - start) * 1e3 / calls)
    return float(np.median(times))


def programs(n, dynamic):
    """(name, program, torch function, input shape) of each case; `dynamic`:
    the programs' sizes are `?` but for the argmax's reduced dim (a full
    argmax over a `?` dim is not supported, so it is left out)."""
    rows = "?" if dynamic else 8
    t = tensor_type(("?",) if dynamic else (n,), "f32")
    s, i = tensor_type((), "f32"), tensor_type((), "i64")
    v, vi = tensor_type((rows, 131072), "f32"), tensor_type((rows,), "i64")
    cases = [
        ("reduce_sum", f"func.func @main(%x: {t}) -> {s} {{\n"
         f"  %r = kiln.reduce_sum %x {{dims = array<i64: 0>}} : {t} -> {s}\n"
         f"  return %r : {s}\n}}\n", lambda x: x.sum(), (n,)),
        ("argmax", f"func.func @main(%x: {t}) -> {i} {{\n"
         f"  %r = kiln.argmax %x {{dim = 0}} : {t} -> {i}\n  return %r : {i}\n}}\n",
         lambda x: x.argmax(), (n,)),
        ("argmax 8 x 131072", f"func.func @main(%x: {v}) -> {vi} {{\n"
         f"  %r = kiln.argmax %x {{dim = 1}} : {v} -> {vi}\n  return %r : {vi}\n}}\n",
         lambda x: x.argmax(1), (8, 131072)),
        ("cumsum", f"func.func @main(%x: {t}) -> {t} {{\n"
         f"  %r = kiln.cumsum %x {{dim = 0}} : {t}\n  return %r : {t}\n}}\n",
         lambda x: x.cumsum(0), (n,)),
    ]
    return [c for c in cases if not (dynamic and c[0] == "argmax")]


def scatter_adds():
    """(name, x shape, index shape, seed): scatter_add along dim 0."""
    return [("scatter_add 2^24 into 65536", (65536,), (2**24,), 1),
            ("scatter_add 16384x1024 into 4096 rows", (4096, 1024), (16384, 1024), 2)]


def scatter_program(x_shape, idx_shape):
    tx, ti = tensor_type(x_shape, "f32"), tensor_type(idx_shape, "i64")
    ts = tensor_type(idx_shape, "f32")
    return (f"func.func @main(%x: {tx}, %i: {ti}, %s: {ts}) -> {tx} {{\n"
            f"  %r = kiln.scatter_add %x, %i, %s {{dim = 0}} : ({tx}, {ti}, {ts}) -> {tx}\n"
            f"  return %r : {tx}\n}}\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda", help="kiln device: cuda, vulkan")
    parser.add_argument("--torch-device", help="torch device (default: --device)")
    parser.add_argument("--log2", type=int, default=26, help="elements: 2^log2")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dynamic", action="store_true",
                        help="programs with `?` dims (no scatter_add: it has no `?` kernel)")
    args = parser.parse_args()
    if kiln is None:
        sys.exit("the kiln Python package is not built (KILN_PYTHONPATH)")
    torch_device = args.torch_device or args.device
    torch_sync = torch.cuda.synchronize if torch_device.startswith("cuda") else (lambda: None)
    n = 2**args.log2
    x = np.random.default_rng(0).uniform(0.5, 1.5, n).astype(np.float32)
    backend = kiln.backend(args.device)
    rows = []
    for name, program, torch_fn, shape in programs(n, args.dynamic):
        xs = x[:int(np.prod(shape))].reshape(shape)
        tx = torch.from_numpy(xs).to(torch_device)
        kx = kiln.tensor(xs, device=args.device)
        compiled = kiln.compile(program, args.device)
        want = torch_fn(torch.from_numpy(xs).double()).numpy()
        got = np.asarray(compiled(kx).numpy(), np.float64)
        np.testing.assert_allclose(got, want, rtol=1e-3)
        label = (name if " x " in name else f"{name} 2^{args.log2} f32") + \
            (", `?` dims" if args.dynamic else "")
        rows.append((f"{label} ({args.device})",
                     timed_ms(lambda: torch_fn(tx), torch_sync, args.calls, args.repeats),
                     timed_ms(lambda: compiled(kx), backend.sync, args.calls, args.repeats)))
    for name, x_shape, idx_shape, seed in [] if args.dynamic else scatter_adds():
        rng = np.random.default_rng(seed)
        xs = rng.uniform(-1, 1, x_shape).astype(np.float32)
        src = rng.uniform(-1, 1, idx_shape).astype(np.float32)
        idx = rng.integers(0, x_shape[0], idx_shape)
        tx, ti, ts = (torch.from_numpy(a).to(torch_device) for a in (xs, idx, src))
        ks = [kiln.tensor(a, device=args.device) for a in (xs, idx, src)]
        compiled = kiln.compile(scatter_program(x_shape, idx_shape), args.device)
        want = xs.astype(np.float64)
        np.add.at(want, (idx,) + tuple(np.indices(idx_shape)[1:]), src)
        np.testing.assert_allclose(np.asarray(compiled(*ks).numpy(), np.float64), want,
                                   rtol=1e-4, atol=1e-3)
        rows.append((f"{name} ({args.device})",
                     timed_ms(lambda: torch.scatter_add(tx, 0, ti, ts), torch_sync, args.calls,
                              args.repeats),
                     timed_ms(lambda: compiled(*ks), backend.sync, args.calls, args.repeats)))
    table(f"kiln {args.device} vs torch {torch_device}", rows)


if __name__ == "__main__":
    main()
