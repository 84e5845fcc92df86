"""kiln-run's command line: results, random inputs, and one clear message
with exit 2 for every kind of bad input."""
import glob
import os
import re
import resource
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


def kiln_run(args, program=ADD, files=None, memory_limit=None):
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
        limit = None if memory_limit is None else (
            lambda: resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit)))
        return subprocess.run(full, capture_output=True, text=True, timeout=60,
                              preexec_fn=limit)


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
    # The same runs on resident tensors, timed by the device's clock.
    assert re.search(r"bench, resident on the device \((host|cuda-events|vulkan-timestamps)\): "
                     r"3 runs, median [\d.]+ ms", r.stdout), r.stdout
    with tempfile.TemporaryDirectory() as dump:
        r = kiln_run(["{prog}", "--compile-only", "--entry", "other", "--dump-dir", dump])
        assert r.returncode == 0, r.stderr
        [folder] = [f for f in os.listdir(dump) if f.startswith("cpu-other-")]
        assert {"0-kiln.mlir", "1-kernels.mlir", "2-llvm.mlir", "3-llvm.ll",
                "4-kernel.o"} <= set(os.listdir(os.path.join(dump, folder)))


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
        spv = glob.glob(os.path.join(dump, "vulkan-main-*", "*.spv"))
        assert spv, os.listdir(dump)
        for f in spv:  # SPIR-V magic number, little-endian
            with open(f, "rb") as h:
                assert h.read(4) == bytes([0x03, 0x02, 0x23, 0x07]), f


def test_cuda_compile_only_needs_no_gpu_and_dumps_ptx():
    with tempfile.TemporaryDirectory() as dump:
        r = kiln_run(["{prog}", "--compile-only", "--device", "cuda", "--chip", "sm_80",
                      "--dump-dir", dump])
        assert r.returncode == 0, r.stderr
        ptx = glob.glob(os.path.join(dump, "cuda-main-*", "*.ptx"))
        assert ptx and ".target sm_80" in open(ptx[0]).read()


@pytest.mark.parametrize("chip", ["banana", "sm_5", "sm_90x", "sm_999999999999"])
def test_an_unknown_cuda_chip_is_a_usage_error(chip):
    # It was LLVM's "not a recognized processor" warnings, then a compile
    # error (exit 1): "Minimum NVVM target SM version is sm_20".
    r = kiln_run(["{prog}", "--compile-only", "--device", "cuda", "--chip", chip])
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert f"unknown CUDA chip '{chip}'" in r.stderr, r.stderr
    assert "not a recognized processor" not in r.stderr, r.stderr


@pytest.mark.parametrize("flag", ["--output-dir", "--dump-dir"])
def test_directories_that_cannot_be_created_exit_2(flag):
    r = kiln_run(["{prog}", flag, "/proc/x"])
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert f"{flag} /proc/x: cannot create the directory" in r.stderr, r.stderr
    r = kiln_run(["{prog}", flag, "{tmp}/a.npy"], files={"a.npy": x23()})
    assert r.returncode == 2 and "cannot create the directory" in r.stderr, r.stderr


def test_directories_as_files_exit_2():
    r = kiln_run(["{prog}", "--input", "{tmp}", "--input", "{tmp}/a.npy"],
                 files={"a.npy": x23()})
    assert r.returncode == 2 and "is a directory, not a .npy file" in r.stderr, r.stderr
    r = kiln_run(["{tmp}"])
    assert r.returncode == 2 and "is a directory, not a program" in r.stderr, r.stderr


def test_npy_whose_size_overflows_exits_2():
    header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }"
    header += b" " * ((64 - (10 + len(header) + 1) % 64) % 64) + b"\n"
    raw = b"\x93NUMPY\x01\x00" + bytes([len(header), 0]) + header
    r = kiln_run(["{prog}", "--input", "{tmp}/h.npy", "--input", "{tmp}/a.npy"],
                 files={"h.npy": raw, "a.npy": x23()})
    assert r.returncode == 2 and "is too large" in r.stderr, r.stderr


HUGE_INPUT = """func.func @main(%a: tensor<6442450944xf64>) -> tensor<6442450944xf64> {
  %0 = kiln.neg %a : tensor<6442450944xf64>
  return %0 : tensor<6442450944xf64>
}
"""
HUGE_OUTPUT = """func.func @main() -> tensor<6442450944xf64> {
  %0 = kiln.fill {value = 1.0 : f64} : tensor<6442450944xf64>
  return %0 : tensor<6442450944xf64>
}
"""


@pytest.mark.parametrize("program,message", [
    (HUGE_INPUT, "not enough host memory for input #0 (tensor<6442450944xf64>)"),
    (HUGE_OUTPUT, "not enough host memory for the results (tensor<6442450944xf64>)"),
])
def test_tensors_larger_than_memory_exit_2(program, message):
    # 48 GiB tensors under an 8 GiB address-space limit.
    r = kiln_run(["{prog}"], program=program, memory_limit=8 << 30)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert message in r.stderr and "internal error" not in r.stderr, r.stderr


def program_of(body, args="%x: tensor<4x5xf32>", result="tensor<4x5xf32>"):
    return f"func.func @main({args}) -> {result} {{\n{body}\n}}\n"


@pytest.mark.parametrize("program,message", [
    # Only kiln ops (and tensor constants, calls, returns) make a program.
    (program_of("  %0 = arith.addf %x, %x : tensor<4x5xf32>\n  return %0 : tensor<4x5xf32>"),
     "'arith.addf' is not allowed in a kiln program"),
    (program_of("  %0 = func.call @main(%x) : (tensor<4x5xf32>) -> tensor<4x5xf32>\n"
                "  return %0 : tensor<4x5xf32>"),
     "recursive call: @main -> @main"),
    (program_of("  %0 = kiln.softmax %x {dim = 1, keep_dims = true} : tensor<4x5xf32>\n"
                "  return %0 : tensor<4x5xf32>"),
     "'kiln.softmax' op has no attribute 'keep_dims'"),
    (program_of("  %0 = kiln.neg %x : tensor<2147483648x2147483648xf32>\n"
                "  return %0 : tensor<2147483648x2147483648xf32>",
                "%x: tensor<2147483648x2147483648xf32>", "tensor<2147483648x2147483648xf32>"),
     "is too large"),
    (program_of("  %0 = kiln.gather %x, %i {dim = 1} : (tensor<4x0xf32>, tensor<4x2xi64>)"
                " -> tensor<4x2xf32>\n  return %0 : tensor<4x2xf32>",
                "%x: tensor<4x0xf32>, %i: tensor<4x2xi64>", "tensor<4x2xf32>"),
     "dim 1 of the operand is empty"),
])
def test_programs_outside_kiln_exit_2(program, message):
    r = kiln_run(["{prog}"], program=program)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert message in r.stderr and r.stderr.count("kiln-run:") == 1, r.stderr


@pytest.mark.parametrize("dtype", ["i64", "ui64", "i32", "ui8"])
def test_random_integer_inputs_are_small(dtype):
    program = (f"func.func @main(%x: tensor<64x{dtype}>) -> tensor<64x{dtype}> {{\n"
               f"  %0 = kiln.max %x, %x : (tensor<64x{dtype}>, tensor<64x{dtype}>) -> tensor<64x{dtype}>\n"
               f"  return %0 : tensor<64x{dtype}>\n}}\n")
    with tempfile.TemporaryDirectory() as out:
        r = kiln_run(["{prog}", "--seed", "3", "--output-dir", out], program=program)
        assert r.returncode == 0, r.stderr
        x = np.load(os.path.join(out, "result0.npy"))
    assert x.min() >= 0 and x.max() <= 9 and len(set(x.tolist())) > 1, x
