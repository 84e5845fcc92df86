#!/usr/bin/python3
"""Cross-target differential testing: random kiln programs (kiln_programs.py)
run through kiln-run on each device and compared with a float64 NumPy
interpretation (within its error bound) and with each other.

  run_differential.py [--seed S] [--count N] [--devices cpu,vulkan] [--jobs J]
  run_differential.py --seed S --program I     # repro: program I alone

A device that answers "unsupported" (e.g. f64 where it lacks shaderFloat64) counts as a skip.
A failure prints the program, its seed and index, a repro command, and saves
the program with its inputs under --failures-dir. Exit 1 on any failure.
See docs/testing.md, "Differential testing".
"""
import argparse
import collections
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

import kiln_programs as kp

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
KILN_RUN = os.environ.get("KILN_RUN", os.path.join(ROOT, "build", "bin", "kiln-run"))
SELF = os.path.relpath(os.path.abspath(__file__), ROOT)


def run_kiln(program_text, inputs, device, tmp):
    """(results or None, stderr, returncode) of one kiln-run process."""
    path = os.path.join(tmp, "program.mlir")
    with open(path, "w") as f:
        f.write(program_text)
    out = os.path.join(tmp, "out-" + device.replace(":", "_"))
    args = [KILN_RUN, path, "--device", device, "--output-dir", out]
    for i, x in enumerate(inputs):
        p = os.path.join(tmp, f"in{i}.npy")
        np.save(p, x)
        args += ["--input", p]
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return None, "timed out after 300 s (hang?)", -1
    if proc.returncode != 0:
        return None, proc.stderr, proc.returncode
    results, i = [], 0
    while os.path.exists(os.path.join(out, f"result{i}.npy")):
        results.append(np.load(os.path.join(out, f"result{i}.npy")))
        i += 1
    return results, proc.stderr, 0


def is_unsupported(device, stderr):
    return not device.startswith("cpu") and "unsupported error" in stderr


def compare(got, ref_value):
    """A message if `got` is outside the reference's bound, else None."""
    ref, err = ref_value.ref, ref_value.err
    if got.shape != ref.shape:
        return f"shape {got.shape}, expected {ref.shape}"
    known = np.isfinite(err)
    if kp.is_float(ref_value.dtype):
        g = got.astype(np.float64)
        with np.errstate(all="ignore"):
            bad = known & ~(np.abs(g - ref) <= 2 * err)
    else:
        g = got.astype(np.int64) if ref_value.dtype != "i1" else got.astype(bool)
        bad = known & (g != ref)
    if not bad.any():
        return None
    i = tuple(int(j) for j in np.argwhere(bad)[0])
    return (f"{int(bad.sum())} of {bad.size} elements outside the bound; first at {i}: "
            f"got {g[i]!r}, reference {ref[i]!r}, bound {2 * err[i]:.3g}")


def compare_devices(a, b, ref_value):
    """Two devices may differ by at most the sum of their bounds (4 err);
    where the reference is exact (err 0) they must agree bit for bit."""
    if a.shape != b.shape:
        return f"shapes {a.shape} and {b.shape}"
    err = ref_value.err
    with np.errstate(all="ignore"):
        d = np.abs(a.astype(np.float64) - b.astype(np.float64))
        both_nan = np.isnan(a) & np.isnan(b) if a.dtype.kind == "f" else np.zeros(a.shape, bool)
        bad = np.isfinite(err) & ~(d <= 4 * err) & ~both_nan
    if not bad.any():
        return None
    i = tuple(int(j) for j in np.argwhere(bad)[0])
    return f"{int(bad.sum())} elements differ; first at {i}: {a[i]!r} vs {b[i]!r}"


class Outcome:
    def __init__(self):
        self.results = {}    # device -> list of arrays
        self.skipped = {}    # device -> reason
        self.failed = {}     # device -> message


def run_one(prog, results, device):
    """Runs one program alone: (arrays, None, None) | (None, skip, None) | (None, None, fail)."""
    with tempfile.TemporaryDirectory() as tmp:
        got, stderr, rc = run_kiln(kp.render([(prog, results)]), prog.inputs, device, tmp)
    if got is not None:
        return got, None, None
    if is_unsupported(device, stderr):
        # The reason without the temporary file's name, so that skips group.
        return None, stderr.strip().splitlines()[-1].split(".mlir: ")[-1], None
    return None, None, f"kiln-run exit {rc}: {stderr.strip()[-2000:]}"


def run_batch(batch, device):
    """Runs a batch of (index, program, results) in one process; on any error
    each program runs alone, so that an error belongs to one program."""
    outcomes = {i: Outcome() for i, _, _ in batch}
    if len(batch) > 1:
        inputs = [x for _, p, _ in batch for x in p.inputs]
        with tempfile.TemporaryDirectory() as tmp:
            got, _, _ = run_kiln(kp.render([(p, r) for _, p, r in batch]), inputs, device, tmp)
        if got is not None:
            for i, _, results in batch:
                outcomes[i].results[device], got = got[:len(results)], got[len(results):]
            return outcomes
    for i, p, results in batch:
        arrays, skip, fail = run_one(p, results, device)
        if arrays is not None:
            outcomes[i].results[device] = arrays
        elif skip:
            outcomes[i].skipped[device] = skip
        else:
            outcomes[i].failed[device] = fail
    return outcomes


def check_program(prog, results, outcome, devices):
    """Failure messages of one program (empty: it passed or was skipped)."""
    problems = [f"{d}: {m}" for d, m in outcome.failed.items()]
    ran = [d for d in devices if d in outcome.results]
    for d in ran:
        got = outcome.results[d]
        if len(got) != len(results):
            problems.append(f"{d}: {len(got)} results, expected {len(results)}")
            continue
        for k, (g, r) in enumerate(zip(got, results)):
            m = compare(g, r)
            if m:
                problems.append(f"{d}: result {k} ({r.type}, {r.name}): {m}")
    for a, b in zip(ran, ran[1:]):
        for k, r in enumerate(results):
            if k < len(outcome.results[a]) and k < len(outcome.results[b]):
                m = compare_devices(outcome.results[a][k], outcome.results[b][k], r)
                if m:
                    problems.append(f"{a} vs {b}: result {k}: {m}")
    return problems


def save_failure(args, index, prog, results, problems):
    where = os.path.join(args.failures_dir, f"seed{args.seed}-program{index}")
    shutil.rmtree(where, ignore_errors=True)
    os.makedirs(where)
    text = kp.render([(prog, results)])
    with open(os.path.join(where, "program.mlir"), "w") as f:
        f.write(text)
    inputs = []
    for i, x in enumerate(prog.inputs):
        inputs += ["--input", os.path.join(where, f"in{i}.npy")]
        np.save(inputs[-1], x)
    device = next((p.split(":")[0] for p in problems if not p.startswith("cpu")), "cpu")
    print(f"\nFAIL program {index} of seed {args.seed} (ops: {' '.join(prog.ops_used)})")
    for p in problems:
        print("  " + p)
    print(text, end="")
    print(f"  repro: /usr/bin/python3 {SELF} --seed {args.seed} --program {index} "
          f"--devices {','.join(args.devices)}")
    print(f"  saved: {os.path.relpath(KILN_RUN)} {where}/program.mlir --device "
          f"{device.split()[0]} {' '.join(inputs)} --print", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--program", type=int, help="run only this program, alone")
    ap.add_argument("--devices", default="cpu,vulkan")
    ap.add_argument("--batch", type=int, default=8, help="programs per kiln-run process")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--failures-dir", default=os.path.join(ROOT, "build", "differential-failures"))
    args = ap.parse_args()
    args.devices = args.devices.split(",")
    start = time.time()

    indices = [args.program] if args.program is not None else range(args.count)
    programs = {i: kp.generate(args.seed, i) for i in indices}
    order = list(indices)
    batches = [order[j:j + args.batch] for j in range(0, len(order), args.batch)]
    outcomes = {i: Outcome() for i in indices}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(run_batch, [(i, *programs[i]) for i in batch], d)
                   for batch in batches for d in args.devices]
        for f in concurrent.futures.as_completed(futures):
            for i, o in f.result().items():
                outcomes[i].results.update(o.results)
                outcomes[i].skipped.update(o.skipped)
                outcomes[i].failed.update(o.failed)

    failures, skips, ops = [], collections.Counter(), collections.Counter()
    for i in indices:
        prog, results = programs[i]
        ops.update(prog.ops_used)
        for d, reason in outcomes[i].skipped.items():
            skips[(d, reason)] += 1
        problems = check_program(prog, results, outcomes[i], args.devices)
        if problems:
            failures.append(i)
            save_failure(args, i, prog, results, problems)
    total = len(indices)
    print(f"\ndifferential: {total} programs (seed {args.seed}) on {', '.join(args.devices)}: "
          f"{total - len(failures)} passed or skipped, {len(failures)} failed "
          f"in {time.time() - start:.0f} s")
    for (d, reason), n in sorted(skips.items()):
        print(f"  skipped on {d}: {n} ({reason})")
    print("  ops: " + ", ".join(f"{k} {v}" for k, v in sorted(ops.items())))
    if failures:
        print(f"  failed programs: {' '.join(map(str, failures))} (saved under "
              f"{os.path.relpath(args.failures_dir)})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
