"""kiln on the CPU against NumPy, same machine, same run, and both against
the machine's floors (kiln-bench-cpu-floors: STREAM triad bandwidth, peak
f32 FMA rate). Prints a markdown table of median times, ratios (NumPy time /
kiln time: > 1 means kiln is faster) and each kernel's floor: bytes moved
over the triad bandwidth, or flops over the peak. Each case runs `--rounds`
times, NumPy and kiln alternating, each round the median of `--runs` runs;
the table shows the best round of each (on a shared machine the other
rounds lose to other processes) and the range of the rounds' ratios.
Usage: env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3
       bench/cpu_vs_numpy.py [--runs N] [--rounds R] [--only SUBSTRING]"""
import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "conformance"))
from kiln_harness import KILN_RUN  # noqa: E402

F32 = np.float32


def t(shape):
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


CASES = []  # (name, program, make inputs, NumPy reference, floor: ("bytes", n) or ("flops", n))
for log2 in (24, 26):
    N = 1 << log2
    for op, fn in (("add", np.add), ("mul", np.multiply)):
        CASES.append((f"{op} 2^{log2} f32", f"""func.func @main(%a: {t([N])}, %b: {t([N])}) -> {t([N])} {{
  %0 = kiln.{op} %a, %b : ({t([N])}, {t([N])}) -> {t([N])}
  return %0 : {t([N])}
}}""",
                      lambda N=N: [np.random.rand(N).astype(F32), np.random.rand(N).astype(F32)],
                      fn, ("bytes", 3 * 4 * N)))
    CASES.append((f"gelu(x*w+b) 2^{log2} f32 (tanh form)", f"""func.func @main(%x: {t([N])}, %w: {t([N])}, %b: {t([N])}) -> {t([N])} {{
  %0 = kiln.mul %x, %w : ({t([N])}, {t([N])}) -> {t([N])}
  %1 = kiln.add %0, %b : ({t([N])}, {t([N])}) -> {t([N])}
  %2 = kiln.gelu %1 {{approximate = "tanh"}} : {t([N])}
  return %2 : {t([N])}
}}""", lambda N=N: [np.random.rand(N).astype(F32) for _ in range(3)],
        lambda x, w, b: (lambda y: 0.5 * y * (1 + np.tanh(F32(math.sqrt(2 / math.pi)) * (y + F32(0.044715) * y * y * y))))(x * w + b),
        ("bytes", 4 * 4 * N)))
S = [4096, 4096]
for dim, which in ((1, "last dim"), (0, "dim 0")):
    CASES.append((f"reduce_sum {which} 4096x4096 f32", f"""func.func @main(%x: {t(S)}) -> {t([4096])} {{
  %0 = kiln.reduce_sum %x {{dims = array<i64: {dim}>}} : {t(S)} -> {t([4096])}
  return %0 : {t([4096])}
}}""", lambda: [np.random.rand(*S).astype(F32)], lambda x, d=dim: x.sum(axis=d),
        ("bytes", 4 * 4096 * 4096)))
for dim, which in ((1, "last dim"), (0, "dim 0")):
    CASES.append((f"softmax {which} 4096x4096 f32", f"""func.func @main(%x: {t(S)}) -> {t(S)} {{
  %0 = kiln.softmax %x {{dim = {dim}}} : {t(S)}
  return %0 : {t(S)}
}}""", lambda: [np.random.rand(*S).astype(F32)],
        lambda x, d=dim: (lambda e: e / e.sum(axis=d, keepdims=True))(np.exp(x - x.max(axis=d, keepdims=True))),
        ("bytes", 2 * 4 * 4096 * 4096)))
# Over an outer dim with 21 and 256 rows (kiln-cpu-row-kernels' column
# chains): the channels of an NCHW image, and dim 0 of a wide matrix.
for shape, dim in (([4, 21, 256, 256], 1), ([256, 65536], 0)):
    CASES.append((f"softmax dim {dim} {'x'.join(map(str, shape))} f32", f"""func.func @main(%x: {t(shape)}) -> {t(shape)} {{
  %0 = kiln.softmax %x {{dim = {dim}}} : {t(shape)}
  return %0 : {t(shape)}
}}""", lambda shape=shape: [np.random.rand(*shape).astype(F32)],
        lambda x, d=dim: (lambda e: e / e.sum(axis=d, keepdims=True))(np.exp(x - x.max(axis=d, keepdims=True))),
        ("bytes", 2 * 4 * math.prod(shape))))
CASES.append(("layer_norm last dim 4096x4096 f32", f"""func.func @main(%x: {t(S)}, %w: {t([4096])}, %b: {t([4096])}) -> {t(S)} {{
  %0 = kiln.layer_norm %x, %w, %b {{eps = 1.0e-5 : f64}} : ({t(S)}, {t([4096])}, {t([4096])}) -> {t(S)}
  return %0 : {t(S)}
}}""", lambda: [np.random.rand(*S).astype(F32), np.random.rand(4096).astype(F32),
                np.random.rand(4096).astype(F32)],
    lambda x, w, b: (x - x.mean(axis=1, keepdims=True)) / np.sqrt(x.var(axis=1, keepdims=True) + F32(1e-5)) * w + b,
    ("bytes", 2 * 4 * 4096 * 4096)))
for shape, perm in ((S, (1, 0)), ([64, 512, 512], (0, 2, 1))):
    out = [shape[d] for d in perm]
    CASES.append((f"transpose {'x'.join(map(str, shape))} f32 perm {''.join(map(str, perm))}",
                  f"""func.func @main(%x: {t(shape)}) -> {t(out)} {{
  %0 = kiln.transpose %x {{perm = array<i64: {', '.join(map(str, perm))}>}} : {t(shape)} -> {t(out)}
  return %0 : {t(out)}
}}""", lambda shape=shape: [np.random.rand(*shape).astype(F32)],
        lambda x, perm=perm: np.ascontiguousarray(x.transpose(perm)), ("bytes", 2 * 4 * math.prod(shape))))
for dim in (0, 1):
    CASES.append((f"cumsum dim {dim} 4096x4096 f32", f"""func.func @main(%x: {t(S)}) -> {t(S)} {{
  %0 = kiln.cumsum %x {{dim = {dim}}} : {t(S)}
  return %0 : {t(S)}
}}""", lambda: [np.random.rand(*S).astype(F32)], lambda x, d=dim: np.cumsum(x, axis=d),
        ("bytes", 2 * 4 * 4096 * 4096)))
for shape, dim in (([1 << 24], 0), (S, 1)):
    out = "tensor<i64>" if len(shape) == 1 else "tensor<4096xi64>"
    CASES.append((f"argmax {'x'.join(map(str, shape))} f32 dim {dim}", f"""func.func @main(%x: {t(shape)}) -> {out} {{
  %0 = kiln.argmax %x {{dim = {dim}}} : {t(shape)} -> {out}
  return %0 : {out}
}}""", lambda shape=shape: [np.random.rand(*shape).astype(F32)],
        lambda x, dim=dim: np.argmax(x, axis=dim), ("bytes", 4 * math.prod(shape))))
# Copies of views (kiln-copies-to-linalg) and a
# flip (reversed vectors): 64 MiB in, about as much out.
W = [4096, 8192]
for name, body, out, fn, moved in (
        ("flip dim 1 4096x4096", "kiln.flip %x {{dims = array<i64: 1>}} : {t} -> {o}", S,
         lambda x: np.flip(x, 1).copy(), 2 * 4 * 4096 * 4096),
        ("pad 4096x4000 -> 4096x4096", "kiln.pad %x {{low = array<i64: 0, 48>, high = array<i64: 0, 48>}} : "
         "{t} -> {o}", S, lambda x: np.pad(x, ((0, 0), (48, 48))), 4 * (4096 * 4000 + 4096 * 4096)),
        ("slice step 2 4096x8192 -> 4096x4096", "kiln.slice %x {{start = array<i64: 0, 0>, stop = "
         "array<i64: 4096, 8192>, step = array<i64: 1, 2>}} : {t} -> {o}", S,
         lambda x: np.ascontiguousarray(x[:, ::2]), 4 * (4096 * 8192 + 4096 * 4096))):
    shape = [4096, 4000] if name.startswith("pad") else W if name.startswith("slice") else S
    CASES.append((f"{name} f32", f"""func.func @main(%x: {t(shape)}) -> {t(out)} {{
  %0 = {body.format(t=t(shape), o=t(out))}
  return %0 : {t(out)}
}}""", lambda shape=shape: [np.random.rand(*shape).astype(F32)], fn, ("bytes", moved)))
# One row times a matrix (a decode step's gemv): B read once.
CASES.append(("matmul 1x4096 @ 4096x4096 f32 (gemv)", f"""func.func @main(%a: {t([1, 4096])}, %b: {t(S)}) -> {t([1, 4096])} {{
  %0 = kiln.matmul %a, %b : ({t([1, 4096])}, {t(S)}) -> {t([1, 4096])}
  return %0 : {t([1, 4096])}
}}""", lambda: [np.random.rand(1, 4096).astype(F32), np.random.rand(*S).astype(F32)],
    lambda a, b: a @ b, ("bytes", 4 * 4096 * 4096)))
for m, n, k in ((1024, 1024, 1024), (2048, 2048, 2048), (4096, 512, 1024), (1000, 1000, 1000), (777, 1025, 1023)):
    name = f"matmul {m}^3 f32" if m == n == k else f"matmul {m}x{k} @ {k}x{n} f32"
    CASES.append((name, f"""func.func @main(%a: {t([m, k])}, %b: {t([k, n])}) -> {t([m, n])} {{
  %0 = kiln.matmul %a, %b : ({t([m, k])}, {t([k, n])}) -> {t([m, n])}
  return %0 : {t([m, n])}
}}""", lambda m=m, n=n, k=k: [np.random.rand(m, k).astype(F32), np.random.rand(k, n).astype(F32)],
        lambda a, b: a @ b, ("flops", 2 * m * n * k)))


def median_numpy(fn, inputs, runs):
    """Median ms of `fn(*inputs)` after one warm-up call (any Python callable)."""
    fn(*inputs)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn(*inputs)
        times.append((time.perf_counter() - start) * 1e3)
    return sorted(times)[len(times) // 2]


def median_kiln(program, inputs, runs, resident=False):
    """kiln-run's median ms on `inputs` (NumPy arrays): timed on the host
    with the inputs and results copied each run, or with `resident` on
    tensors that stay on the device."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "p.mlir")
        with open(path, "w") as f:
            f.write(program)
        args = [KILN_RUN, path, "--bench", str(runs)]
        for i, x in enumerate(inputs):
            np.save(os.path.join(tmp, f"{i}.npy"), x)
            args += ["--input", os.path.join(tmp, f"{i}.npy")]
        out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
        line = r"resident.*" if resident else ""
        return float(re.search(line + r"median ([\d.]+) ms", out).group(1))


def floors():
    """{'copy': GB/s, 'triad': GB/s, 'peak': GFLOP/s} from kiln-bench-cpu-floors."""
    tool = os.path.join(os.path.dirname(KILN_RUN), "kiln-bench-cpu-floors")
    out = subprocess.run([tool], capture_output=True, text=True, check=True).stdout
    found = {k: float(v) for k, v in re.findall(r"(copy|triad|peak) +([\d.]+)", out.replace("f32 fma peak", "peak"))}
    found["threads"] = int(re.search(r"threads (\d+)", out).group(1))
    return found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    np.random.seed(0)
    f = floors()
    print(f"floors ({f['threads']} threads): copy {f['copy']:.1f} GB/s, triad {f['triad']:.1f} GB/s, "
          f"f32 FMA peak {f['peak']:.1f} GFLOP/s; load average {os.getloadavg()[0]:.1f}\n")
    print("| case | NumPy ms | kiln ms | NumPy/kiln | NumPy/kiln per round | floor ms | kiln at % of floor |")
    print("|---|---|---|---|---|---|---|")
    for name, program, make, ref, (kind, amount) in CASES:
        if args.only not in name:
            continue
        inputs = make()
        np_ms, kiln_ms = [], []
        for _ in range(args.rounds):
            np_ms.append(median_numpy(ref, inputs, args.runs))
            kiln_ms.append(median_kiln(program, inputs, args.runs))
        floor = amount / (f["triad"] * 1e6) if kind == "bytes" else amount / (f["peak"] * 1e6)
        ratios = sorted(n / k for n, k in zip(np_ms, kiln_ms))
        print(f"| {name} | {min(np_ms):.2f} | {min(kiln_ms):.2f} | {min(np_ms) / min(kiln_ms):.2f}x "
              f"| {ratios[0]:.2f}x-{ratios[-1]:.2f}x | {floor:.2f} | {100 * floor / min(kiln_ms):.0f}% |", flush=True)


if __name__ == "__main__":
    main()
