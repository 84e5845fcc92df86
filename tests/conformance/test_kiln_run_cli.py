"""kiln-run's command line: results, random inputs, and one clear message
with exit 2 for every kind of bad input."""
import os
import subprocess
import tempfile

import numpy as np
import pytest

from kiln_harness import KILN_RUN, run_kiln

ADD = """func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = kiln.add %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
func.func @other(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = kiln.neg %a : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
"""


def kiln_run(args, program=ADD, files=None):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "p.mlir")
        with open(path, "w") as f:
            f.write(program)
        for name, content in (files or {}).items():
            p = os.path.join(tmp, name)
            if isinstance(content, np.ndarray):
                np.save(p, content)
            else:
                with open(p, "wb") as f:
                    f.write(content)
        full = [KILN_RUN] + [a.replace("{tmp}", tmp).replace("{prog}", path) for a in args]
        return subprocess.run(full, capture_output=True, text=True, timeout=60)


def x23():
    return np.arange(6, dtype=np.float32).reshape(2, 3)


def test_runs_with_given_inputs_in_fortran_order_too():
    a = np.asfortranarray(x23())
    results, _ = run_kiln(ADD, [a, x23()])
    np.testing.assert_array_equal(results[0], a + x23())


def test_random_inputs_from_seed_are_reproducible():
    r1 = kiln_run(["{prog}", "--seed", "5", "--print"])
    r2 = kiln_run(["{prog}", "--seed", "5", "--print"])
    r3 = kiln_run(["{prog}", "--seed", "6", "--print"])
    assert r1.returncode == 0, r1.stderr
    values = lambda r: r.stdout.split("result0:")[1]
    assert values(r1) == values(r2) and values(r1) != values(r3)


def test_entry_bench_and_compile_only_with_dumps():
    r = kiln_run(["{prog}", "--entry", "other", "--bench", "3"])
    assert r.returncode == 0, r.stderr
    assert "bench: 3 runs" in r.stdout
    with tempfile.TemporaryDirectory() as dump:
        r = kiln_run(["{prog}", "--compile-only", "--dump-dir", dump])
        assert r.returncode == 0, r.stderr
        assert {"0-kiln.mlir", "1-kernels.mlir", "2-llvm.mlir", "3-llvm.ll",
                "4-kernel.o"} <= set(os.listdir(dump))


BAD = [
    (["{prog}", "--bogus"], None, "unknown option --bogus"),
    ([], None, "no program given"),
    (["{tmp}/missing.mlir"], None, "cannot open file"),
    (["{prog}", "--entry", "nope"], None, "no entry function '@nope'"),
    (["{prog}", "--device", "tpu"], None, "unknown device 'tpu'"),
    (["{prog}", "--bench", "zero"], None, "--bench expects a number"),
    (["{prog}", "--input", "{tmp}/a.npy"], {"a.npy": x23()}, "takes 2 input(s), 1 given"),
    (["{prog}", "--input", "{tmp}/a.npy", "--input", "{tmp}/a.npy", "--input", "{tmp}/a.npy"],
     {"a.npy": x23()}, "takes 2 input(s), 3 given"),
    (["{prog}", "--input", "{tmp}/a.npy", "--input", "{tmp}/b.npy"],
     {"a.npy": x23(), "b.npy": np.zeros((3, 2), np.float32)},
     "input #1 is tensor<3x2xf32>, the program expects tensor<2x3xf32>"),
    (["{prog}", "--input", "{tmp}/a.npy", "--input", "{tmp}/b.npy"],
     {"a.npy": x23(), "b.npy": x23().astype(np.float64)},
     "input #1 is tensor<2x3xf64>"),
    (["{prog}", "--input", "{tmp}/a.npy", "--input", "{tmp}/b.npy"],
     {"a.npy": x23(), "b.npy": b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'"}, "truncated header"),
    (["{prog}", "--input", "{tmp}/a.npy", "--input", "{tmp}/b.npy"],
     {"a.npy": x23(), "b.npy": b"garbage"}, "bad magic"),
    (["{prog}", "--input", "{tmp}/a.npy", "--input", "{tmp}/nothere.npy"],
     {"a.npy": x23()}, "nothere.npy: cannot open file"),
]


@pytest.mark.parametrize("args,files,message", BAD)
def test_bad_usage_and_input_exit_2_with_a_message(args, files, message):
    r = kiln_run(args, files=files)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert message in r.stderr, r.stderr


def test_truncated_npy_data():
    data = np.zeros((2, 3), np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        np.save(os.path.join(tmp, "t.npy"), data)
        raw = open(os.path.join(tmp, "t.npy"), "rb").read()[:-4]
    r = kiln_run(["{prog}", "--input", "{tmp}/a.npy", "--input", "{tmp}/t.npy"],
                 files={"a.npy": x23(), "t.npy": raw})
    assert r.returncode == 2 and "truncated data" in r.stderr, r.stderr


@pytest.mark.parametrize("program,message", [
    ("func.func @main( {", "program:1:"),
    ("func.func @main(%a: tensor<4xf32>) -> tensor<4xi1> {\n"
     "  %0 = kiln.lt %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
     "  return %0 : tensor<4xf32>\n}\n", "result element type 'f32' should be 'i1'"),
])
def test_malformed_programs_exit_2(program, message):
    r = kiln_run(["{prog}"], program=program)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert message in r.stderr and r.stderr.count("kiln-run:") == 1, r.stderr


def test_missing_devices_have_clear_errors():
    r = kiln_run(["{prog}", "--device", "cuda:7"])
    assert r.returncode == 2 and "cuda:7 does not exist" in r.stderr, r.stderr
    r = kiln_run(["{prog}", "--device", "vulkan:9"])
    assert r.returncode == 2 and "vulkan:9 does not exist" in r.stderr, r.stderr


def test_vulkan_compile_only_needs_no_device_and_dumps_spirv():
    with tempfile.TemporaryDirectory() as dump:
        r = kiln_run(["{prog}", "--compile-only", "--device", "vulkan", "--dump-dir", dump])
        assert r.returncode == 0, r.stderr
        assert "SPIR-V module(s)" in r.stdout, r.stdout
        spv = [f for f in os.listdir(dump) if f.endswith(".spv")]
        assert spv, os.listdir(dump)
        for f in spv:  # SPIR-V magic number, little-endian
            with open(os.path.join(dump, f), "rb") as h:
                assert h.read(4) == bytes([0x03, 0x02, 0x23, 0x07]), f


def test_cuda_compile_only_needs_no_gpu_and_dumps_ptx():
    with tempfile.TemporaryDirectory() as dump:
        r = kiln_run(["{prog}", "--compile-only", "--device", "cuda", "--chip", "sm_80",
                      "--dump-dir", dump])
        assert r.returncode == 0, r.stderr
        ptx = [f for f in os.listdir(dump) if f.endswith(".ptx")]
        assert ptx and ".target sm_80" in open(os.path.join(dump, ptx[0])).read()
