"""A decode-like loop (docs/dynamic-shapes.md, issue 16): the sequence grows
by one token a step, and each step runs an attention-free block over the
whole sequence: an MLP on its hidden states, h -> relu(h W1) W2, then a
softmax over the sequence of a query's scores against them. Total time of
the loop, compiles included, for

- kiln with `?` sequence length: one program compiled once;
- kiln with static shapes: a program compiled for every length (each new
  length a compile, as a framework without dynamic shapes does);
- torch eager on the same device.

  /usr/bin/python3 bench/decode_loop.py --device cpu --max-len 256   # here
  python3 bench/decode_loop.py --device cuda                         # H200

The disk cache is off (KILN_CACHE_DIR=), so that every compile counts.
"""
import argparse
import os
import sys
import time

os.environ["KILN_CACHE_DIR"] = ""

import numpy as np

sys.path.insert(0, os.environ.get("KILN_PYTHONPATH", os.path.join(
    os.path.dirname(__file__), "..", "build", "python")))
import kiln  # noqa: E402


def program(hidden, seq):
    """The step as kiln text; `seq` is the sequence length or '?'."""
    s, d, f = seq, hidden, 4 * hidden
    return f"""func.func @main(%h: tensor<{s}x{d}xf32>, %w1: tensor<{d}x{f}xf32>,
                 %w2: tensor<{f}x{d}xf32>, %q: tensor<1x{d}xf32>) -> tensor<1x{s}xf32> {{
  %a = kiln.matmul %h, %w1 : (tensor<{s}x{d}xf32>, tensor<{d}x{f}xf32>) -> tensor<{s}x{f}xf32>
  %r = kiln.relu %a : tensor<{s}x{f}xf32>
  %y = kiln.matmul %r, %w2 : (tensor<{s}x{f}xf32>, tensor<{f}x{d}xf32>) -> tensor<{s}x{d}xf32>
  %t = kiln.transpose %y {{perm = array<i64: 1, 0>}} : tensor<{s}x{d}xf32> -> tensor<{d}x{s}xf32>
  %z = kiln.matmul %q, %t : (tensor<1x{d}xf32>, tensor<{d}x{s}xf32>) -> tensor<1x{s}xf32>
  %p = kiln.softmax %z {{dim = 1}} : tensor<1x{s}xf32>
  return %p : tensor<1x{s}xf32>
}}
"""


def kiln_loop(device, hidden, lengths, states, weights, dynamic):
    backend = kiln.backend(device)
    inputs = [kiln.tensor(w, device) for w in weights]
    start = time.perf_counter()
    compiled = {}
    result = None
    for n in lengths:
        key = "?" if dynamic else n
        if key not in compiled:
            compiled[key] = kiln.compile(program(hidden, key), device)
        result = compiled[key](kiln.tensor(states[:n], device), *inputs)
    backend.sync()
    return time.perf_counter() - start, len(compiled), result.numpy()


def torch_loop(device, lengths, states, weights):
    import torch
    w1, w2, q = (torch.from_numpy(w).to(device) for w in weights)
    h = torch.from_numpy(states)
    start = time.perf_counter()
    for n in lengths:
        x = h[:n].to(device)
        y = torch.relu(x @ w1) @ w2
        p = torch.softmax(q @ y.T, dim=1)
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start, p.cpu().numpy()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--max-len", type=int, default=2048)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--static-every", type=int, default=1,
                        help="static kiln runs every Nth length only (compiles are slow)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    d = args.hidden
    states = rng.standard_normal((args.max_len, d)).astype(np.float32)
    weights = [(rng.standard_normal(s) / np.sqrt(s[0])).astype(np.float32)
               for s in [(d, 4 * d), (4 * d, d), (1, d)]]
    lengths = list(range(1, args.max_len + 1))
    print(f"{args.device}: decode loop, sequence 1..{args.max_len}, hidden {d}, "
          f"total seconds including compiles\n")
    print("| variant | steps | compiles | total s | ms / step |")
    print("|---|---|---|---|---|")
    seconds, compiles, last = kiln_loop(args.device, d, lengths, states, weights, True)
    print(f"| kiln, `?` length | {len(lengths)} | {compiles} | {seconds:.2f} | "
          f"{seconds / len(lengths) * 1e3:.3f} |")
    sys.stdout.flush()
    static_lengths = lengths[::args.static_every]
    seconds, compiles, _ = kiln_loop(args.device, d, static_lengths, states, weights, False)
    print(f"| kiln, static shapes | {len(static_lengths)} | {compiles} | {seconds:.2f} | "
          f"{seconds / len(static_lengths) * 1e3:.3f} |")
    sys.stdout.flush()
    try:
        seconds, reference = torch_loop(args.device, lengths, states, weights)
    except ImportError:
        print("| torch eager | (torch not installed) | | | |")
        return
    print(f"| torch eager | {len(lengths)} | 0 | {seconds:.2f} | "
          f"{seconds / len(lengths) * 1e3:.3f} |")
    error = float(np.max(np.abs(last - reference)))
    print(f"\nlast step: kiln `?` vs torch max abs difference {error:.2e}")


if __name__ == "__main__":
    main()
