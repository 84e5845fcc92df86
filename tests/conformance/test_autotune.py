"""Autotuning across processes (kiln-tune, kiln-run): a tune file written by
kiln-tune gives tuned kernels and zero benchmarks in the next process; a
changed candidate list invalidates entries; merge holds both inputs; a
corrupt or hand-broken file is an error naming the file and line, and kiln
runs on with defaults and right results. CPU here, lavapipe where it is
installed (KILN_DEVICE=vulkan), CUDA on the GPU machine. Tiny shapes and
budgets keep this quick."""
import json
import os
import re
import subprocess

import numpy as np
import pytest

from kiln_harness import KILN_RUN

KILN_TUNE = os.path.join(os.path.dirname(KILN_RUN), "kiln-tune")
DEVICE = os.environ.get("KILN_DEVICE", "cpu")

MATMUL = """func.func @main(%a: tensor<24x40xf32>, %b: tensor<40x48xf32>) -> tensor<24x48xf32> {
  %0 = kiln.matmul %a, %b : (tensor<24x40xf32>, tensor<40x48xf32>) -> tensor<24x48xf32>
  return %0 : tensor<24x48xf32>
}"""
SOFTMAX = """func.func @main(%a: tensor<20x300xf32>) -> tensor<20x300xf32> {
  %0 = kiln.softmax %a {dim = 1} : tensor<20x300xf32>
  return %0 : tensor<20x300xf32>
}"""


def env_for(tmp_path, **extra):
    env = dict(os.environ, KILN_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("KILN_TUNE_FILE", None)
    env.pop("KILN_AUTOTUNE", None)
    env.update(extra)
    return env


def tune(tmp_path, *args, env=None):
    proc = subprocess.run([KILN_TUNE, "--device", DEVICE, "--budget-ms", "30", *args],
                          capture_output=True, text=True, timeout=300,
                          env=env or env_for(tmp_path))
    if proc.returncode != 0 and "does not exist" in proc.stderr:
        pytest.skip(f"{DEVICE}: {proc.stderr.strip()}")
    return proc


def tool(*args):
    return subprocess.run([KILN_TUNE, *args], capture_output=True, text=True, timeout=60)


def run(tmp_path, program, out, env):
    path = tmp_path / "program.mlir"
    path.write_text(program)
    proc = subprocess.run([KILN_RUN, str(path), "--device", DEVICE, "--seed", "5",
                           "--output-dir", str(out), "--cache-stats"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    m = re.search(r"autotune: (\d+) tuned kernel\(s\), (\d+) benchmark", proc.stdout)
    assert m, proc.stdout
    return proc, int(m.group(1)), int(m.group(2)), np.load(out / "result0.npy")


def program_file(tmp_path, text, name="p.mlir"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("program", [MATMUL, SOFTMAX], ids=["matmul", "softmax"])
def test_tune_file_gives_hits_and_no_benchmarks_next_process(tmp_path, program):
    tuned = tmp_path / "tuned.json"
    proc = tune(tmp_path, str(program_file(tmp_path, program)), "-o", str(tuned))
    if "no tunable kernel" in proc.stdout:
        pytest.skip(f"no tunable kernel in this program on {DEVICE}")
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"key 1/1 candidate \d+/\d+ best", proc.stderr), proc.stderr
    data = json.loads(tuned.read_text())
    assert data["format"] == 1 and data["entries"]
    for entry in data["entries"]:
        assert entry["timings_ms"] and all(t["median"] >= 0 for t in entry["timings_ms"])
    # Forced into the next process through KILN_TUNE_FILE, with a fresh
    # kernel cache: the kernel is built with the tuned config, nothing is
    # benchmarked, and the result is the default build's.
    env = env_for(tmp_path, KILN_CACHE_DIR=str(tmp_path / "fresh"), KILN_TUNE_FILE=str(tuned))
    _, hits, benchmarks, result = run(tmp_path, program, tmp_path / "tuned-out", env)
    assert (hits, benchmarks) == (len(data["entries"]), 0)
    off = env_for(tmp_path, KILN_CACHE_DIR=str(tmp_path / "off"), KILN_AUTOTUNE="off",
                  KILN_TUNE_FILE=str(tuned))
    _, hits, _, default = run(tmp_path, program, tmp_path / "default-out", off)
    assert hits == 0
    np.testing.assert_allclose(result, default, rtol=1e-5, atol=1e-5)


def test_tune_writes_the_cache_file_by_default(tmp_path):
    env = env_for(tmp_path, KILN_AUTOTUNE="on", KILN_AUTOTUNE_BUDGET_MS="30")
    proc = tune(tmp_path, "--op", "matmul:24x48x40:f32", env=env)
    assert proc.returncode == 0, proc.stderr
    files = list((tmp_path / "cache" / "tune").glob("*.json"))
    assert len(files) == 1, proc.stdout
    # The kernel cache's next process reads it: no benchmark.
    _, hits, benchmarks, _ = run(tmp_path, MATMUL, tmp_path / "out", env)
    assert hits >= 1 and benchmarks == 0


def test_changed_candidate_list_invalidates(tmp_path):
    tuned = tmp_path / "tuned.json"
    assert tune(tmp_path, "--op", "matmul:24x48x40:f32", "-o", str(tuned)).returncode == 0
    assert tool("validate", str(tuned)).returncode == 0
    data = json.loads(tuned.read_text())
    data["entries"][0]["candidates"] = "0000000000000000"
    tuned.write_text(json.dumps(data))
    proc = tool("validate", str(tuned))
    assert proc.returncode == 1 and "candidate list changed" in proc.stdout, proc.stdout
    env = env_for(tmp_path, KILN_TUNE_FILE=str(tuned))
    _, hits, benchmarks, _ = run(tmp_path, MATMUL, tmp_path / "out", env)
    assert (hits, benchmarks) == (0, 0)


def test_merge_holds_both_inputs_and_diff_shows_them(tmp_path):
    a, b, c = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    assert tune(tmp_path, "--op", "matmul:24x48x40:f32", "-o", str(a)).returncode == 0
    assert tune(tmp_path, "--op", "matmul:64x64x64:f32", "-o", str(b)).returncode == 0
    proc = tool("merge", str(a), str(b), "-o", str(c))
    assert proc.returncode == 0, proc.stderr
    keys = lambda f: {json.dumps(e["key"]) for e in json.loads(f.read_text())["entries"]}
    assert keys(c) == keys(a) | keys(b) and len(keys(c)) > len(keys(a))
    proc = tool("diff", str(a), str(c))
    assert proc.returncode == 0 and "+ " in proc.stdout and "- " not in proc.stdout, proc.stdout
    assert "entries" in tool("show", str(c)).stdout


@pytest.mark.parametrize("text,line", [
    ('{"format": 1, "device": "x",\n "entries": [\n  {"template": }\n]}\n', 3),
    ('{"format": 1, "device": "x",\n "entries": [\n'
     '  {"template": "cpu.matmul", "candidates": "0", "key": {"op": "matmul"}}\n]}\n', 3),
], ids=["corrupt", "hand-broken"])
def test_broken_tune_file_names_file_and_line_and_defaults_run(tmp_path, text, line):
    broken = tmp_path / "broken.json"
    broken.write_text(text)
    proc = tool("validate", str(broken))
    assert proc.returncode == 2 and f"{broken}:{line}:" in proc.stderr, proc.stderr
    env = env_for(tmp_path, KILN_TUNE_FILE=str(broken))
    proc, hits, _, result = run(tmp_path, MATMUL, tmp_path / "out", env)
    assert f"{broken}:{line}:" in proc.stderr and hits == 0
    off = env_for(tmp_path, KILN_CACHE_DIR="", KILN_AUTOTUNE="off")
    _, _, _, default = run(tmp_path, MATMUL, tmp_path / "default", off)
    np.testing.assert_array_equal(result, default)


def test_bad_usage_exits_2(tmp_path):
    assert tool("--op", "matmul:12:f32", "-o", str(tmp_path / "x.json")).returncode == 2
    assert tool("merge", "a.json").returncode == 2
    assert tool("--budget-ms", "0", "--op", "add:16:f32").returncode == 2


# Where a template's untuned choice depends on the shape (CUDA's SIMT
# matmul splits a decode step's K over 32x32 tiles: 32x8x4x8, not the
# default 128x16x8x1), the tuner times that choice first, so a budget spent
# after one candidate keeps it rather than a 4x slower default. The second
# process finds the choice in the disk cache's entry, and re-tunes a key
# that the cache's tune file (written by the first) already holds.
def test_untuned_choice_is_timed_first(tmp_path):
    if DEVICE != "cuda":
        pytest.skip("no template chooses by the shape on " + DEVICE)
    for attempt in range(2):
        proc = tune(tmp_path, "--budget-ms", "0.001", "--op", "matmul:16x4096x4096:f32")
        assert proc.returncode == 0, proc.stderr
        (out,) = (tmp_path / "cache" / "tune").glob("*.json")
        (entry,) = json.loads(out.read_text())["entries"]
        assert [t["config"] for t in entry["timings_ms"]] == [
            {"tile": 32, "step": 8, "per_thread": 4, "split_k": 8}], entry
