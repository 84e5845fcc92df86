#!/usr/bin/env python3
"""Autotuning: tuned against default kiln and against torch (cuBLAS on CUDA),
tuning time per key, and the stability of three tunings (issue 12).

    PYTHONPATH=build/python python3 bench/autotune.py --device cuda
    PYTHONPATH=build/python python3 bench/autotune.py --device cpu --quick   # small sizes

For each op (matmul shapes in f32, tf32 and bf16; bandwidth kernels: add
and softmax), `kiln-tune --op` tunes it `--repeats` times into separate
files (wall time of each run: process start, compiles and timings). The
first file is then used by a fresh process (KILN_TUNE_FILE) and compared
with the defaults (KILN_AUTOTUNE=off), both timed with kiln's profiler
(device time, median of samples). Stability: the winner of each repeat is
the first's or, in that repeat's own timings, within 3% of it.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("KILN_BIN", os.path.join(HERE, "..", "build", "bin"))

MATMULS = ["1024x1024x1024", "2048x2048x2048", "4096x4096x4096", "8192x8192x8192",
           "16x4096x4096", "128x11008x4096", "4096x128x4096", "128x4096x11008",
           "1000x1000x1000", "3000x257x511", "2048x8192x2048", "512x1024x8192"]
BATCHED = ["8x1024x1024x1024"]
BANDWIDTH = ["add:268435456", "add:16777216", "mul:67108864",
             "softmax:8192x8192", "softmax:4096x1024", "softmax:32x50257"]
QUICK_MATMULS = ["64x64x64", "96x80x72", "24x48x40", "50x33x17"]
QUICK_BATCHED = ["2x32x32x32"]
QUICK_BANDWIDTH = ["add:65536", "softmax:64x300"]


def specs(device, quick, dtypes=None):
    out = []
    dtypes = dtypes or (["f32"] if device == "cpu" else ["f32", "tf32", "bf16"])
    for dt in dtypes:
        for shape in (QUICK_MATMULS if quick else MATMULS):
            out.append(f"matmul:{shape}:{dt}")
        for shape in (QUICK_BATCHED if quick else BATCHED):
            out.append(f"batch_matmul:{shape}:{dt}")
    for op in (QUICK_BANDWIDTH if quick else BANDWIDTH):
        out.append(f"{op}:f32")
    return out


def program_for(spec):
    """The program kiln-tune builds for `spec` (backend/lib/Autotune.cpp)."""
    op, shape, dtype = spec.split(":")
    dims = [int(d) for d in shape.split("x")]
    element = "f32" if dtype == "tf32" else dtype
    t = lambda ds, e: "tensor<" + "x".join(str(d) for d in ds) + "x" + e + ">"
    if op in ("matmul", "batch_matmul"):
        *batch, m, n, k = dims
        a, b, r = t(batch + [m, k], element), t(batch + [k, n], element), t(batch + [m, n], "f32")
        body = f"kiln.matmul %a, %b : ({a}, {b}) -> {r}"
        args = f"%a: {a}, %b: {b}"
    elif op == "softmax":
        a = r = t(dims, element)
        body, args = f"kiln.softmax %a {{dim = 1}} : {a}", f"%a: {a}"
    else:
        a = r = t(dims, element)
        body, args = f"kiln.{op} %a, %b : ({a}, {a}) -> {a}", f"%a: {a}, %b: {a}"
    return f"func.func @main({args}) -> {r} {{\n  %r = {body}\n  return %r : {r}\n}}\n"


def measure(spec, device, samples=7):
    """Device time of one run of `spec`'s program (ms), in this process."""
    import kiln
    op, shape, dtype = spec.split(":")
    program = kiln.compile(program_for(spec), device, tf32=dtype == "tf32")
    dims = [int(d) for d in shape.split("x")]
    rng = np.random.default_rng(0)
    if op in ("matmul", "batch_matmul"):
        *batch, m, n, k = dims
        shapes = [batch + [m, k], batch + [k, n]]
    elif op == "softmax":
        shapes = [dims]
    else:
        shapes = [dims, dims]
    np_dtype = np.float32
    kdtype = "bfloat16" if dtype == "bf16" else ("float16" if dtype == "f16" else None)
    inputs = [kiln.tensor(rng.uniform(-1, 1, s).astype(np_dtype), device, dtype=kdtype)
              for s in shapes]
    backend = kiln.backend(device)
    program(*inputs)
    backend.sync()
    with backend.profile() as once:
        program(*inputs)
    reps = max(1, min(100, int(5.0 / max(once.milliseconds or 1.0, 1e-3))))
    times = []
    for _ in range(samples):
        with backend.profile() as p:
            for _ in range(reps):
                program(*inputs)
        times.append(p.milliseconds / reps)
    return float(np.median(times))


def torch_ms(spec, device):
    try:
        import torch
    except ImportError:
        return None
    if device == "cuda" and not torch.cuda.is_available():
        return None
    if device not in ("cpu", "cuda"):
        return None
    op, shape, dtype = spec.split(":")
    dims = [int(d) for d in shape.split("x")]
    tdtype = {"f32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16,
              "f16": torch.float16}[dtype]
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    mk = lambda s: torch.rand(s, dtype=tdtype, device=device) * 2 - 1
    if op in ("matmul", "batch_matmul"):
        *batch, m, n, k = dims
        a, b = mk(batch + [m, k]), mk(batch + [k, n])
        fn = lambda: torch.matmul(a, b)
    elif op == "softmax":
        a = mk(dims)
        fn = lambda: torch.softmax(a, dim=1)
    else:
        a, b = mk(dims), mk(dims)
        fn = getattr(torch, op) and (lambda: getattr(torch, op)(a, b))
    fn()
    times = []
    for _ in range(7):
        if device == "cuda":
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(10):
                fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / 10)
        else:
            t = time.perf_counter()
            for _ in range(10):
                fn()
            times.append((time.perf_counter() - t) * 100)
    return float(np.median(times))


def child_measure(spec, device, env):
    proc = subprocess.run([sys.executable, __file__, "--measure", spec, "--device", device],
                          capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode != 0:
        return None, proc.stderr.strip().splitlines()[-1:] or ["failed"]
    return float(proc.stdout.strip().splitlines()[-1]), None


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--quick", action="store_true", help="small sizes (CPU check)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--budget-ms", type=float, default=1000)
    parser.add_argument("--only", default="", help="comma-separated substrings of specs")
    parser.add_argument("--dtypes", default="",
                        help="comma-separated matmul dtypes (default: f32 on the CPU, "
                             "f32,tf32,bf16 on GPUs)")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(measure(args.measure, args.device))
        return
    work = tempfile.mkdtemp(prefix="kiln-bench-autotune-")
    base = dict(os.environ, KILN_CACHE_DIR=os.path.join(work, "cache"))
    base.pop("KILN_TUNE_FILE", None)
    rows = []
    print(f"device {args.device}, budget {args.budget_ms:.0f} ms per key, {args.repeats} tunings "
          f"per op; files in {work}")
    print("%-34s %9s %9s %9s %7s %7s %9s %s" % ("op", "default", "tuned", "torch", "speedup",
                                             "vs torch", "tune s", "winners (stable)"))
    for spec in specs(args.device, args.quick, [d for d in args.dtypes.split(",") if d]):
        if args.only and not any(s in spec for s in args.only.split(",")):
            continue
        files, seconds, winners = [], [], []
        for r in range(args.repeats):
            out = os.path.join(work, spec.replace(":", "_") + f"-{r}.json")
            start = time.perf_counter()
            proc = subprocess.run([os.path.join(BIN, "kiln-tune"), "--device", args.device,
                                   "--budget-ms", str(args.budget_ms), "--op", spec, "-o", out],
                                  capture_output=True, text=True, env=base, timeout=900)
            seconds.append(time.perf_counter() - start)
            if proc.returncode != 0:
                print(f"{spec}: kiln-tune failed: {proc.stderr.strip()[-300:]}")
                break
            entries = json.load(open(out))["entries"]
            if not entries:
                break
            files.append(out)
            winners.append(entries)
        if not files or len(winners) < 1:
            print(f"{spec}: no tunable kernel on {args.device}")
            continue
        # Stability per key: the repeat's winner is the first's, or within 3%.
        stable = True
        for entries in winners[1:]:
            for first, again in zip(winners[0], entries):
                times = {json.dumps(t["config"]): t["median"] for t in again["timings_ms"]}
                w1, w = json.dumps(first["best"]), json.dumps(again["best"])
                if w != w1 and (w1 not in times or times[w1] > 1.03 * times[w]):
                    stable = False
        labels = "/".join(",".join(str(v) for v in e[0]["best"].values()) for e in winners)
        default, err = child_measure(spec, args.device, dict(base, KILN_AUTOTUNE="off"))
        tuned, err2 = child_measure(spec, args.device,
                                    dict(base, KILN_AUTOTUNE="cached", KILN_TUNE_FILE=files[0]))
        reference = torch_ms(spec, args.device)
        if default is None or tuned is None:
            print(f"{spec}: measuring failed: {err or err2}")
            continue
        speedup = default / tuned
        vs_torch = reference / tuned if reference else None
        rows.append((spec, speedup, vs_torch, seconds[0], stable))
        print("%-34s %9.4f %9.4f %9s %6.2fx %7s %9.1f %s (%s)" % (
            spec, default, tuned, "%.4f" % reference if reference else "-", speedup,
            "%.2fx" % vs_torch if vs_torch else "-", seconds[0], labels,
            "yes" if stable else "NO"))
    for group, pick in (("matmul", lambda s: "matmul" in s), ("bandwidth", lambda s: "matmul" not in s)):
        sel = [r for r in rows if pick(r[0])]
        if not sel:
            continue
        print(f"{group}: {len(sel)} ops, tuned/default geomean {geomean([r[1] for r in sel]):.3f}x, "
              f"tuned vs torch geomean {geomean([r[2] for r in sel]):.3f}x (>1: kiln faster), "
              f"tuning {max(r[3] for r in sel):.1f} s at most per key (one process each), "
              f"{sum(r[4] for r in sel)}/{len(sel)} stable over {args.repeats} tunings")


if __name__ == "__main__":
    main()
