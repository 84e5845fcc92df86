"""kiln's conv2d (ResNet-50's convolution shapes) and attention against
torch on the same device, same run. Prints markdown tables of median times
and ratios (torch time / kiln time: > 1 means kiln is faster) and the
geometric mean per table.

  /usr/bin/python3 bench/conv_attention.py --device cpu --batch 1      # here
  python3 bench/conv_attention.py --device cuda --batch 32             # H200
  python3 bench/conv_attention.py --device vulkan --batch 32 --torch-device cuda

kiln runs through the Python package where it is built (inputs resident on
the device, each call timed to the device's sync as torch's is, compile
excluded), else through kiln-run --bench (host to host: transfers included,
so only a CPU figure is comparable that way); torch runs on --torch-device (default: --device; cuDNN on CUDA, its CPU
kernels with all threads on the CPU). Attention compares against
torch.nn.functional.scaled_dot_product_attention where torch has it, else
torch's matmul + softmax + matmul.
"""
import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "conformance"))
from kiln_harness import KILN_RUN, tensor_type  # noqa: E402

sys.path.insert(0, os.environ.get("KILN_PYTHONPATH", os.path.join(
    os.path.dirname(__file__), "..", "build", "python")))
try:
    import kiln
except ImportError:
    kiln = None

# ResNet-50's distinct convolutions: (C, H=W, O, kernel, stride, padding).
RESNET50 = [
    (3, 224, 64, 7, 2, 3),
    (64, 56, 64, 1, 1, 0), (64, 56, 64, 3, 1, 1), (64, 56, 256, 1, 1, 0), (256, 56, 64, 1, 1, 0),
    (256, 56, 128, 1, 1, 0), (128, 56, 128, 3, 2, 1), (128, 28, 512, 1, 1, 0),
    (256, 56, 512, 1, 2, 0), (512, 28, 128, 1, 1, 0), (128, 28, 128, 3, 1, 1),
    (512, 28, 256, 1, 1, 0), (256, 28, 256, 3, 2, 1), (256, 14, 1024, 1, 1, 0),
    (512, 28, 1024, 1, 2, 0), (1024, 14, 256, 1, 1, 0), (256, 14, 256, 3, 1, 1),
    (1024, 14, 512, 1, 1, 0), (512, 14, 512, 3, 2, 1), (512, 7, 2048, 1, 1, 0),
    (1024, 14, 2048, 1, 2, 0), (2048, 7, 512, 1, 1, 0), (512, 7, 512, 3, 1, 1),
]
TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def kiln_ms(program, inputs, device, runs, dtype, tf32=False):
    if kiln is not None:
        return kiln_resident_ms(program, inputs, device, runs, dtype, tf32)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "p.mlir")
        with open(path, "w") as f:
            f.write(program)
        args = [KILN_RUN, path, "--device", device, "--bench", str(runs)] + ["--tf32"] * tf32
        for i, x in enumerate(inputs):
            np.save(os.path.join(tmp, f"{i}.npy"), x)
            args += ["--input", os.path.join(tmp, f"{i}.npy")]
        out = subprocess.run(args, capture_output=True, text=True)
        if out.returncode:
            raise RuntimeError(out.stderr.strip().splitlines()[-1])
        return float(re.search(r"median ([\d.]+) ms", out.stdout).group(1))


def kiln_resident_ms(program, inputs, device, runs, dtype, tf32=False):
    """Median ms of one call of the compiled program on device tensors."""
    backend = kiln.backend(device)
    compiled = kiln.compile(program, device, tf32=tf32)
    tensors = [kiln.tensor(x, device=device) for x in inputs]
    if dtype == "bf16":  # NumPy has no bf16: cast on the device
        tensors = [t.astype("bfloat16") for t in tensors]
    for _ in range(3):
        compiled(*tensors)
    backend.sync()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        compiled(*tensors)
        backend.sync()
        times.append((time.perf_counter() - start) * 1e3)
    return float(np.median(times))


def torch_ms(fn, device, runs):
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    for _ in range(3):
        fn()
    sync()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - start) * 1e3)
    return float(np.median(times))


def host(shape, dtype):
    """Random inputs as kiln-run reads them (bf16 from f32 files)."""
    x = np.random.uniform(-1, 1, shape).astype(np.float32)
    return x.astype(np.float16) if dtype == "f16" else x


def table(title, rows):
    print(f"\n### {title}\n\n| case | torch ms | kiln ms | torch/kiln |\n|---|---|---|---|")
    ratios = []
    for name, t_ms, k_ms in rows:
        ratios.append(t_ms / k_ms)
        print(f"| {name} | {t_ms:.3f} | {k_ms:.3f} | {ratios[-1]:.2f}x |", flush=True)
    if ratios:
        print(f"| geometric mean | | | {math.exp(np.mean(np.log(ratios))):.2f}x |")


def conv_rows(args, dtype):
    for c, hw, o, k, s, p in RESNET50:
        x, w = host((args.batch, c, hw, hw), dtype), host((o, c, k, k), dtype)
        out = (hw + 2 * p - k) // s + 1
        tx, tw = tensor_type(x.shape, dtype), tensor_type(w.shape, dtype)
        tr = tensor_type((args.batch, o, out, out), dtype)
        program = (f"func.func @main(%x: {tx}, %w: {tw}) -> {tr} {{\n"
                   f"  %r = kiln.conv2d %x, %w {{stride = array<i64: {s}, {s}>, "
                   f"padding = array<i64: {p}, {p}>}} : ({tx}, {tw}) -> {tr}\n"
                   f"  return %r : {tr}\n}}\n")
        dev = args.torch_device
        tx_, tw_ = (torch.from_numpy(a).to(dev, TORCH_DTYPES[dtype]) for a in (x, w))
        yield (f"{c}->{o} {k}x{k}/{s} on {hw}x{hw}",
               torch_ms(lambda: F.conv2d(tx_, tw_, stride=s, padding=p), dev, args.runs),
               kiln_ms(program, [x, w], args.device, args.runs, dtype, args.tf32 == "on"))


def attention_program(shape, dtype, causal, fused):
    t = tensor_type(shape, dtype)
    if fused:
        body = (f"  %r = kiln.attention %q, %k, %v {{causal = {str(causal).lower()}}} : "
                f"({t}, {t}, {t}) -> {t}\n")
    else:  # the unfused spelling: the score matrix in memory
        *batch, seq, d = shape
        st = tensor_type((*batch, seq, seq), "f32")
        kt = tensor_type((*batch, d, seq), dtype)
        perm = ", ".join(map(str, list(range(len(batch))) + [len(batch) + 1, len(batch)]))
        body = (f"  %kt = kiln.transpose %k {{perm = array<i64: {perm}>}} : {t} -> {kt}\n"
                f"  %s = kiln.matmul %q, %kt : ({t}, {kt}) -> {st}\n"
                f"  %c = \"kiln.fill\"() {{value = {1 / math.sqrt(d)} : f64}} : () -> tensor<f32>\n"
                f"  %ss = kiln.mul %s, %c : ({st}, tensor<f32>) -> {st}\n"
                f"  %p = kiln.softmax %ss {{dim = {len(shape) - 1} : i64}} : {st}\n"
                f"  %ph = kiln.cast %p : {st} -> {tensor_type((*batch, seq, seq), dtype)}\n"
                f"  %r = kiln.matmul %ph, %v : ({tensor_type((*batch, seq, seq), dtype)}, {t}) -> {t}\n")
    return f"func.func @main(%q: {t}, %k: {t}, %v: {t}) -> {t} {{\n{body}  return %r : {t}\n}}\n"


def attention_rows(args, unfused):
    dtype = "bf16"
    for seq in args.seqs:
        for causal in (False, True):
            shape = (args.attn_batch, 16, seq, 128)
            q, k, v = (host(shape, dtype) for _ in range(3))
            name = f"b{shape[0]} h16 s{seq} d128{' causal' if causal else ''}"
            kiln_time = kiln_ms(attention_program(shape, dtype, causal, True), [q, k, v],
                                args.device, args.runs, dtype)
            if unfused:
                if causal:
                    continue
                yield (name, kiln_ms(attention_program(shape, dtype, False, False), [q, k, v],
                                     args.device, args.runs, dtype), kiln_time)
                continue
            dev = args.torch_device
            tq, tk, tv = (torch.from_numpy(a).to(dev, TORCH_DTYPES[dtype]) for a in (q, k, v))
            if hasattr(F, "scaled_dot_product_attention"):
                fn = lambda: F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)  # noqa
            else:
                mask = torch.ones(seq, seq, dtype=torch.bool, device=dev).tril()

                def fn():
                    s = tq @ tk.transpose(-1, -2) / math.sqrt(128)
                    if causal:
                        s = s.masked_fill(~mask, float("-inf"))
                    return torch.softmax(s.float(), -1).to(tq.dtype) @ tv
            yield name, torch_ms(fn, dev, args.runs), kiln_time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu", help="kiln device: cpu, cuda, vulkan")
    parser.add_argument("--torch-device", help="torch device (default: --device)")
    parser.add_argument("--batch", type=int, default=32, help="conv batch")
    parser.add_argument("--dtypes", default="f16,f32", help="conv dtypes")
    parser.add_argument("--attn-batch", type=int, default=8)
    parser.add_argument("--seqs", default="1024,4096")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--skip", default="", help="conv,attention,unfused to leave out")
    parser.add_argument("--tf32", choices=["on", "off"], default="on",
                        help="whether f32 convs may run on tensor cores with TF32 inputs, in "
                             "torch (cudnn.allow_tf32: its default for convs is on) and in "
                             "kiln (compile(tf32=True), kiln-run --tf32)")
    args = parser.parse_args()
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = \
        args.tf32 == "on"
    args.torch_device = args.torch_device or ("cuda" if args.device == "cuda" else "cpu")
    args.seqs = [int(s) for s in args.seqs.split(",")]
    skip = set(args.skip.split(","))
    np.random.seed(0)
    print(f"kiln on {args.device}, torch {torch.__version__} on {args.torch_device}, "
          f"TF32 {args.tf32}")
    if "conv" not in skip:
        for dtype in args.dtypes.split(","):
            table(f"conv2d, ResNet-50 shapes, batch {args.batch}, {dtype}",
                  conv_rows(args, dtype))
    if "attention" not in skip:
        table("attention bf16 against torch", attention_rows(args, False))
    if "unfused" not in skip:
        print("\n(unfused: kiln matmul + softmax + matmul in the torch column)")
        table("attention bf16: fused op against the unfused kiln program",
              attention_rows(args, True))


if __name__ == "__main__":
    main()
