"""Dynamic against static kernels (docs/dynamic-shapes.md, issue 16's
table): each case compiled twice, once with its sizes in the types and once
with every dim `?`, then run on tensors resident on the device. Prints a
markdown table of median milliseconds per run (each run timed to the
device's sync, compile excluded; the two programs' runs alternate) and the
dynamic / static ratio.

  /usr/bin/python3 bench/dynamic_shapes.py --device cpu --scale 8      # here
  /usr/bin/python3 bench/dynamic_shapes.py --device vulkan --scale 16  # lavapipe
  python3 bench/dynamic_shapes.py --device cuda                        # H200

--scale N divides every size by N (matmul's by N too, per dim), so that
the slow paths of a small machine finish; the H200 runs the issue's sizes:
add 2^28, softmax / layer_norm / reduce_sum 8192^2, matmul 4096^3, in f32
and bf16 (--dtypes); a decode step's matmuls (16 x 4096 x 4096, 128 x 4096
x 11008) whose rows alone are `?`; a ResNet-50 conv (64->64 3x3 on 56x56, batch 32 /
N) whose batch alone is `?`, and the same conv over images of `?` size
(batch, height and width `?`); ResNet-50's stem max_pool over `?` images; and
attention over 16 heads of 64 whose sequence lengths are `?` (a decode
step: one query against 2048 / N keys; a causal prefill of 1024 / N): the
static program runs the fused kernel, the `?` one matmul, softmax, matmul.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.environ.get("KILN_PYTHONPATH", os.path.join(
    os.path.dirname(__file__), "..", "build", "python")))
import kiln  # noqa: E402


def cases(scale):
    """(name, program body with {T} types, input shapes, result shape, and
    which dims are `?` in the dynamic program: each tensor's (the inputs',
    then the result's) list of dims, or every dim where not given)."""
    side = 8192 // scale
    k = 4096 // scale
    batch = max(1, 32 // scale)
    keys = max(1, 2048 // scale)
    prompt = max(1, 1024 // scale)
    return [
        ("add %d" % ((1 << 28) // scale ** 2), "%r = kiln.add %a0, %a1 : ({0}, {0}) -> {0}",
         [[(1 << 28) // scale ** 2], [(1 << 28) // scale ** 2]], [(1 << 28) // scale ** 2]),
        ("softmax %d^2" % side, "%r = kiln.softmax %a0 {{dim = 1}} : {0}",
         [[side, side]], [side, side]),
        ("layer_norm %d^2" % side,
         "%r = kiln.layer_norm %a0, %a1, %a2 : ({0}, {1}, {1}) -> {0}",
         [[side, side], [side], [side]], [side, side]),
        ("reduce_sum %d^2 (dim 1)" % side,
         "%r = kiln.reduce_sum %a0 {{dims = array<i64: 1>}} : {0} -> {1}",
         [[side, side]], [side]),
        ("matmul %d^3" % k, "%r = kiln.matmul %a0, %a1 : ({0}, {0}) -> {0}",
         [[k, k], [k, k]], [k, k]),
        # A decode step's rows alone `?`: the kernel for their bucket.
        ("matmul decode 16x%dx%d (`?` rows)" % (k, k),
         "%r = kiln.matmul %a0, %a1 : ({0}, {1}) -> {2}",
         [[16, k], [k, k]], [16, k], [[0], [], [0]]),
        ("matmul 128x%dx%d (`?` rows)" % (k, 11008 // scale),
         "%r = kiln.matmul %a0, %a1 : ({0}, {1}) -> {2}",
         [[128, k], [k, 11008 // scale]], [128, 11008 // scale], [[0], [], [0]]),
        ("conv 64->64 3x3 on 56x56, batch %d" % batch,
         "%r = kiln.conv2d %a0, %a1 {{padding = array<i64: 1, 1>}} : ({0}, {1}) -> {0}",
         [[batch, 64, 56, 56], [64, 64, 3, 3]], [batch, 64, 56, 56], [[0], [], [0]]),
        ("conv 64->64 3x3 on `?` images 56x56, batch %d" % batch,
         "%r = kiln.conv2d %a0, %a1 {{padding = array<i64: 1, 1>}} : ({0}, {1}) -> {0}",
         [[batch, 64, 56, 56], [64, 64, 3, 3]], [batch, 64, 56, 56],
         [[0, 2, 3], [], [0, 2, 3]]),
        ("max_pool 3x3/2 on `?` images 112x112, batch %d" % batch,
         "%r = kiln.max_pool2d %a0 {{kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, "
         "padding = array<i64: 1, 1>}} : {0} -> {1}",
         [[batch, 64, 112, 112]], [batch, 64, 56, 56], [[0, 2, 3], [0, 2, 3]]),
        ("attention decode, 1 query x %d keys" % keys,
         "%r = kiln.attention %a0, %a1, %a2 : ({0}, {1}, {1}) -> {0}",
         [[1, 16, 1, 64], [1, 16, keys, 64], [1, 16, keys, 64]], [1, 16, 1, 64],
         [[], [2], [2], []]),
        ("attention causal prefill %d" % prompt,
         "%r = kiln.attention %a0, %a1, %a2 {{causal = true}} : ({0}, {0}, {0}) -> {0}",
         [[1, 16, prompt, 64]] * 3, [1, 16, prompt, 64], [[2]] * 4),
    ]


def tensor_type(shape, dtype, dynamic_dims):
    dims = "".join(("?" if i in dynamic_dims else str(d)) + "x" for i, d in enumerate(shape))
    return "tensor<%s%s>" % (dims, dtype)


def program(body, shapes, result, dtype, dynamic, which=None):
    tensors = shapes + [result]
    which = which or [range(len(s)) for s in tensors]
    types = [tensor_type(s, dtype, which[i] if dynamic else ()) for i, s in enumerate(tensors)]
    # The body names its types {0}, {1}, ...: the inputs', then the
    # result's (layer_norm's weight is {1}, reduce_sum's result {1}).
    body = body.format(*types)
    types, result_type = types[:-1], types[-1]
    args = ", ".join("%%a%d: %s" % (i, t) for i, t in enumerate(types))
    return "func.func @main(%s) -> %s {\n  %s\n  return %%r : %s\n}\n" % (
        args, result_type, body, result_type)


def median_ms(programs, inputs, backend, runs):
    """Median ms per run of each program; their runs alternate, so that a
    busy machine's drift falls on both alike."""
    times = [[] for _ in programs]
    for step in range(runs + 1):
        for program, samples in zip(programs, times):
            start = time.perf_counter()
            program(*inputs)
            backend.sync()
            if step:  # the first run warms up
                samples.append((time.perf_counter() - start) * 1e3)
    return [statistics.median(samples) for samples in times]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--dtypes", default="f32,bf16")
    parser.add_argument("--only", default="", help="cases whose name starts so")
    args = parser.parse_args()
    backend = kiln.backend(args.device)
    print("%s, sizes / %d, median of %d runs (ms)\n" % (backend.name, args.scale, args.runs))
    print("| case | dtype | static | dynamic | dynamic / static |")
    print("|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for dtype in args.dtypes.split(","):
        if dtype == "bf16" and not backend.supports_dtype("bfloat16"):
            print("| (bf16: not on %s) | | | | |" % args.device)
            continue
        for name, body, shapes, result, *which in cases(args.scale):
            if args.only and not name.startswith(args.only):
                continue
            inputs = [kiln.tensor(rng.uniform(0.5, 1.5, s).astype(np.float32), args.device,
                                  dtype="bfloat16" if dtype == "bf16" else None)
                      for s in shapes]
            static, dynamic = median_ms(
                [kiln.compile(program(body, shapes, result, dtype, d, *which), args.device)
                 for d in (False, True)], inputs, backend, args.runs)
            print("| %s | %s | %.3f | %.3f | %.2fx |" % (name, dtype, static, dynamic,
                                                      dynamic / static))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
