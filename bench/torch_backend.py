#!/usr/bin/env python3
"""The GPT-2-style block of tests/python/test_torch_backend.py through
kiln.torch.backend, against torch eager and torch.compile (Inductor), at
the sizes of a real inference step (GPT-2 small: d 768, 12 heads).

    PYTHONPATH=build/python python3 bench/torch_backend.py [--device cuda] [--batch 8 --seq 512]

On the CPU it uses torch.fx.symbolic_trace (torch 1.13 has no torch.compile).
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
from test_torch_backend import Block  # noqa: E402

import kiln.torch  # noqa: E402


def ms_per_call(fn, x, device, repeat=20):
    with torch.no_grad():
        for _ in range(3):
            fn(x)
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(repeat):
            fn(x)
        if device == "cuda":
            torch.cuda.synchronize()
    return (time.perf_counter() - start) / repeat * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--heads", type=int, default=12)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = Block(args.dim, args.heads, args.seq).to(args.device).eval()
    x = torch.randn(args.batch, args.seq, args.dim, device=args.device)
    with torch.no_grad():
        want = model(x)
        if hasattr(torch, "compile"):
            kilned = torch.compile(model, backend=kiln.torch.backend)
            kilned(x)
        else:
            kilned = kiln.torch.backend(torch.fx.symbolic_trace(model), [x])
        error = (kilned(x) - want).abs().max().item()
    print("block %dx%dx%d, %d heads on %s; %s; max |kiln - eager| = %.2e" % (
        args.batch, args.seq, args.dim, args.heads, args.device, kiln.torch.last_report, error))
    print("torch eager:        %8.3f ms" % ms_per_call(model, x, args.device))
    print("kiln.torch.backend: %8.3f ms" % ms_per_call(kilned, x, args.device))
    if hasattr(torch, "compile"):
        inductor = torch.compile(model)
        print("torch.compile:      %8.3f ms" % ms_per_call(inductor, x, args.device))


if __name__ == "__main__":
    main()
