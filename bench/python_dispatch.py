#!/usr/bin/env python3
"""Python per-op dispatch of a cached tiny op, kiln against torch eager on the
same device (CPU or CUDA),
and the time of `import kiln`.

    PYTHONPATH=build/python python3 bench/python_dispatch.py [--device cpu]

The op is an add of two 4-element float32 tensors: its kernel costs next to
nothing, so the time per call is the dispatch overhead (Python call, type
inference cache, kernel cache, allocation, launch).
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np


def per_call_us(fn, repeat=5, number=20000):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best * 1e6


def import_ms(module, repeat=5):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import " + module], check=True, env=env)
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    import kiln
    a = kiln.tensor(np.ones(4, np.float32), args.device)
    kiln.add(a, a)
    print("kiln.add, 4 x f32 on %s: %.2f us/op" % (args.device, per_call_us(lambda: kiln.add(a, a))))
    try:
        import torch
        device = "cuda" if args.device.startswith("cuda") and torch.cuda.is_available() else "cpu"
        t = torch.ones(4, device=device)
        print("torch.add (eager), 4 x f32 on %s: %.2f us/op"
              % (device, per_call_us(lambda: torch.add(t, t))))
    except ImportError:
        print("torch.add: torch is not installed")
    python = import_ms("sys")
    print("import kiln: %.0f ms (python start-up, %.0f ms, subtracted)"
          % (import_ms("kiln") - python, python))


if __name__ == "__main__":
    main()
