#!/usr/bin/env python3
"""Process start to first result with kiln-run: every kernel compiled (an
empty disk cache) against every kernel from the disk cache, median of
RUNS fresh processes each. Usage: bench/disk_cache_start.py [DEVICE]
[PROGRAM.mlir] [RUNS] (defaults: cpu, examples/mlp.mlir, 7)."""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
KILN_RUN = os.environ.get("KILN_RUN", os.path.join(ROOT, "build", "bin", "kiln-run"))


def run_ms(program, device, cache, out):
    env = dict(os.environ, KILN_CACHE_DIR=cache)
    start = time.perf_counter()
    proc = subprocess.run([KILN_RUN, program, "--device", device, "--seed", "1",
                           "--output-dir", out, "--cache-stats"],
                          capture_output=True, text=True, env=env)
    ms = (time.perf_counter() - start) * 1000
    if proc.returncode != 0:
        sys.exit(proc.stderr)
    lines = proc.stdout.strip().splitlines()
    phases = next(l for l in lines if l.startswith("phases:"))
    return ms, lines[-1], phases


def main():
    device = sys.argv[1] if len(sys.argv) > 1 else "cpu"
    program = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "examples", "mlp.mlir")
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 7
    tmp = tempfile.mkdtemp()
    try:
        cold, warm, warm_phases = [], [], []
        for i in range(runs):
            cache = os.path.join(tmp, f"cold{i}")
            ms, cold_stats, _ = run_ms(program, device, cache, os.path.join(tmp, "out"))
            cold.append(ms)
            ms, warm_stats, phases = run_ms(program, device, cache, os.path.join(tmp, "out"))
            warm.append(ms)
            warm_phases.append((ms, phases))
        print(f"{device} {os.path.basename(program)}: process start to result, median of {runs}")
        print(f"  cold (compiles):      {statistics.median(cold):8.1f} ms  [{cold_stats}]")
        print(f"  warm (disk cache):    {statistics.median(warm):8.1f} ms  [{warm_stats}]")
        # The median warm run's phases; the rest of its time is the process
        # (loading shared libraries, start-up, exit).
        ms, phases = sorted(warm_phases)[len(warm_phases) // 2]
        inside = sum(float(t) for t in re.findall(r"([0-9.]+) ms", phases))
        print(f"  that warm run's {phases}; process start and exit {ms - inside:.1f} ms")
        start = time.perf_counter()
        subprocess.run([KILN_RUN, "--help"], capture_output=True)
        print(f"  kiln-run --help (loading only): {(time.perf_counter() - start) * 1000:.1f} ms")
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
