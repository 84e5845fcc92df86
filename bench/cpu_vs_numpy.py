"""kiln on the CPU against NumPy, same machine, same run. Prints a markdown
table of median times and ratios (NumPy time / kiln time: > 1 means kiln is
faster). Usage: /usr/bin/python3 bench/cpu_vs_numpy.py [--runs N]"""
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


CASES = []
N = 1 << 24
CASES.append(("add 2^24 f32", f"""func.func @main(%a: {t([N])}, %b: {t([N])}) -> {t([N])} {{
  %0 = kiln.add %a, %b : ({t([N])}, {t([N])}) -> {t([N])}
  return %0 : {t([N])}
}}""", lambda: [np.random.rand(N).astype(F32), np.random.rand(N).astype(F32)],
    lambda a, b: np.add(a, b), 1.5))
CASES.append(("gelu(x*w+b) 2^24 f32 (tanh form)", f"""func.func @main(%x: {t([N])}, %w: {t([N])}, %b: {t([N])}) -> {t([N])} {{
  %0 = kiln.mul %x, %w : ({t([N])}, {t([N])}) -> {t([N])}
  %1 = kiln.add %0, %b : ({t([N])}, {t([N])}) -> {t([N])}
  %2 = kiln.gelu %1 {{approximate = "tanh"}} : {t([N])}
  return %2 : {t([N])}
}}""", lambda: [np.random.rand(N).astype(F32) for _ in range(3)],
    lambda x, w, b: (lambda y: 0.5 * y * (1 + np.tanh(F32(math.sqrt(2 / math.pi)) * (y + F32(0.044715) * y * y * y))))(x * w + b), 1.5))
S = [4096, 4096]
CASES.append(("reduce_sum last dim 4096x4096 f32", f"""func.func @main(%x: {t(S)}) -> {t([4096])} {{
  %0 = kiln.reduce_sum %x {{dims = array<i64: 1>}} : {t(S)} -> {t([4096])}
  return %0 : {t([4096])}
}}""", lambda: [np.random.rand(*S).astype(F32)], lambda x: x.sum(axis=1), 1))
CASES.append(("softmax last dim 4096x4096 f32", f"""func.func @main(%x: {t(S)}) -> {t(S)} {{
  %0 = kiln.softmax %x {{dim = 1}} : {t(S)}
  return %0 : {t(S)}
}}""", lambda: [np.random.rand(*S).astype(F32)],
    lambda x: (lambda e: e / e.sum(axis=1, keepdims=True))(np.exp(x - x.max(axis=1, keepdims=True))), 1))
M = [1024, 1024]
CASES.append(("matmul 1024^3 f32", f"""func.func @main(%a: {t(M)}, %b: {t(M)}) -> {t(M)} {{
  %0 = kiln.matmul %a, %b : ({t(M)}, {t(M)}) -> {t(M)}
  return %0 : {t(M)}
}}""", lambda: [np.random.rand(*M).astype(F32), np.random.rand(*M).astype(F32)],
    lambda a, b: a @ b, 1))


def median_numpy(fn, inputs, runs):
    fn(*inputs)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn(*inputs)
        times.append((time.perf_counter() - start) * 1e3)
    return sorted(times)[len(times) // 2]


def median_kiln(program, inputs, runs):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "p.mlir")
        with open(path, "w") as f:
            f.write(program)
        args = [KILN_RUN, path, "--bench", str(runs)]
        for i, x in enumerate(inputs):
            np.save(os.path.join(tmp, f"{i}.npy"), x)
            args += ["--input", os.path.join(tmp, f"{i}.npy")]
        out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
        return float(re.search(r"median ([\d.]+) ms", out).group(1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    runs = parser.parse_args().runs
    np.random.seed(0)
    print("| case | NumPy ms | kiln ms | NumPy/kiln |")
    print("|---|---|---|---|")
    for name, program, make, ref, _ in CASES:
        inputs = make()
        np_ms = median_numpy(ref, inputs, runs)
        kiln_ms = median_kiln(program, inputs, runs)
        print(f"| {name} | {np_ms:.2f} | {kiln_ms:.2f} | {np_ms / kiln_ms:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
