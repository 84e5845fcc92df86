"""One step of bench/decode_loop.py, its costs apart (docs/dynamic-shapes.md):
the upload of the sequence's states from NumPy, the program with a `?`
sequence length and with static shapes on resident inputs, and torch eager
with and without its upload. Median ms of 50 runs per sequence length.

  python3 bench/decode_step.py --device cuda                       # H200
  /usr/bin/python3 bench/decode_step.py --device cpu --lengths 16,64  # here
"""
import argparse
import os
import statistics
import sys
import time

os.environ["KILN_CACHE_DIR"] = ""

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.environ.get("KILN_PYTHONPATH", os.path.join(
    os.path.dirname(__file__), "..", "build", "python")))
import kiln  # noqa: E402
from decode_loop import program  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--lengths", default="16,256,1024,2048")
    args = parser.parse_args()
    import torch
    dev, d = args.device, args.hidden
    rng = np.random.default_rng(0)
    weights = [(rng.standard_normal(s) / np.sqrt(s[0])).astype(np.float32)
               for s in [(d, 4 * d), (4 * d, d), (1, d)]]
    backend = kiln.backend(dev)
    inputs = [kiln.tensor(w, dev) for w in weights]
    dynamic = kiln.compile(program(d, "?"), dev)
    tw = [torch.from_numpy(w).to(dev) for w in weights]

    def median_ms(f, runs=50):
        samples = []
        for _ in range(runs + 3):
            start = time.perf_counter()
            f()
            backend.sync()
            if dev == "cuda":
                torch.cuda.synchronize()
            samples.append((time.perf_counter() - start) * 1e3)
        return statistics.median(samples[3:])  # the first runs warm up

    def step_torch(h):
        return torch.softmax(tw[2] @ (torch.relu(h @ tw[0]) @ tw[1]).T, dim=1)

    print("| length | upload | kiln `?` | kiln static | kiln `?` + upload | torch | "
          "torch + upload |")
    print("|---|---|---|---|---|---|---|")
    for n in (int(x) for x in args.lengths.split(",")):
        h = rng.standard_normal((n, d)).astype(np.float32)
        static = kiln.compile(program(d, n), dev)
        resident = kiln.tensor(h, dev)
        th = torch.from_numpy(h).to(dev)
        row = [median_ms(lambda: kiln.tensor(h, dev)),
               median_ms(lambda: dynamic(resident, *inputs)),
               median_ms(lambda: static(resident, *inputs)),
               median_ms(lambda: dynamic(kiln.tensor(h, dev), *inputs)),
               median_ms(lambda: step_torch(th)),
               median_ms(lambda: step_torch(torch.from_numpy(h).to(dev)))]
        print("| %d | %s |" % (n, " | ".join("%.3f" % v for v in row)))


if __name__ == "__main__":
    main()
