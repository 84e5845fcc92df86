"""IR dumps and overrides (docs/dumps.md) through kiln-run: the key folder
layout and manifest-<pid>.json, dumps with a warm disk cache, overrides with
the unchanged stages giving bit-identical binaries (CPU object, PTX, SPIR-V),
edited stages changing the result and never entering the disk cache, and
broken or stray override files reported with file and line. CUDA needs no
GPU here (--compile-only); running on lavapipe is skipped where it is absent."""
import glob
import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

from kiln_harness import KILN_RUN

PROGRAM = """func.func @main(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = kiln.exp %0 : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
"""

A = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)
B = np.linspace(0, 0.5, 32, dtype=np.float32).reshape(4, 8)

# The stages each target's compile writes, and its final binaries.
STAGES = {
    "cpu": ["0-kiln.mlir", "1-kernels.mlir", "2-llvm.mlir", "3-llvm.ll"],
    "cuda": ["0-kiln.mlir", "1-kernels.mlir", "2-gpu.mlir"],
    "vulkan": ["0-kiln.mlir", "1-kernels.mlir", "2-spirv.mlir"],
}
BINARIES = {"cpu": "4-kernel.o", "cuda": "3-kernel*.ptx", "vulkan": "3-kernel*.spv"}


@pytest.fixture
def files(tmp_path):
    (tmp_path / "p.mlir").write_text(PROGRAM)
    np.save(tmp_path / "a.npy", A)
    np.save(tmp_path / "b.npy", B)
    return tmp_path


def kiln_run(files, *args, device="cpu", env=None, compile_only=False):
    command = [KILN_RUN, str(files / "p.mlir"), "--device", device]
    if compile_only:
        command.append("--compile-only")
    else:
        command += ["--input", str(files / "a.npy"), "--input", str(files / "b.npy"),
                    "--output-dir", str(files / "out")]
    full_env = dict(os.environ, KILN_CACHE_DIR=str(files / "cache"))
    full_env.update(env or {})
    proc = subprocess.run(command + list(args), capture_output=True, text=True,
                          timeout=180, env=full_env)
    if proc.returncode != 0 and "does not exist" in proc.stderr:
        pytest.skip(f"{device}: {proc.stderr.strip()}")
    return proc


def result(files):
    return np.load(files / "out" / "result0.npy")


def key_folder(dump, target):
    folders = [f for f in os.listdir(dump) if os.path.isdir(os.path.join(dump, f))]
    assert len(folders) == 1, folders
    assert re.fullmatch(target + r"-main-[0-9a-f]{12}", folders[0]), folders
    return os.path.join(dump, folders[0])


def binaries(folder, target):
    paths = sorted(glob.glob(os.path.join(folder, BINARIES[target])))
    assert paths, os.listdir(folder)
    return {os.path.basename(p): open(p, "rb").read() for p in paths}


def disk_entries(files):
    return glob.glob(str(files / "cache" / "**" / "*.kce"), recursive=True)


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_dump_layout_and_manifest_name_every_launch(files, device):
    dump = files / "dump"
    proc = kiln_run(files, device=device, env={"KILN_DUMP_DIR": str(dump)})
    assert proc.returncode == 0, proc.stderr
    folder = key_folder(dump, device)
    manifests = glob.glob(str(dump / "manifest-*.json"))
    assert len(manifests) == 1, os.listdir(dump)
    manifest = json.load(open(manifests[0]))
    assert manifest["format"] == 1 and manifests[0].endswith(f"-{manifest['pid']}.json")
    [compile] = manifest["compiles"]
    assert compile["ok"] and compile["folder"] == folder
    assert compile["key"] == os.path.basename(folder) and compile["target"] == device
    assert set(STAGES[device]) <= set(compile["stage_files"])
    for stage in compile["stage_files"]:
        assert os.path.getsize(os.path.join(folder, stage)) > 0, stage
    assert {t["stage"] for t in compile["stage_times"]} >= {"parse", "kernels"}
    assert compile["kernels"], compile
    assert compile["launches"], compile
    for launch in compile["launches"]:
        assert launch["kernel"] and launch["files"], launch
        for f in launch["files"]:
            assert os.path.exists(os.path.join(folder, f)), f
    np.testing.assert_allclose(result(files), np.exp(A + B), rtol=1e-5)


def test_dump_dir_flag_is_the_same_mechanism(files):
    proc = kiln_run(files, "--dump-dir", str(files / "dump"), compile_only=True)
    assert proc.returncode == 0, proc.stderr
    folder = key_folder(files / "dump", "cpu")
    assert set(STAGES["cpu"] + ["4-kernel.o"]) <= set(os.listdir(folder))
    assert glob.glob(str(files / "dump" / "manifest-*.json"))


def test_dump_with_a_warm_disk_cache_still_dumps(files):
    cold = kiln_run(files, "--cache-stats")
    assert cold.returncode == 0 and disk_entries(files), cold.stderr
    warm = kiln_run(files, "--cache-stats")
    assert "1 from disk" in warm.stdout, warm.stdout
    dumped = kiln_run(files, "--cache-stats", env={"KILN_DUMP_DIR": str(files / "dump")})
    assert dumped.returncode == 0, dumped.stderr
    assert "1 compiled, 0 from disk" in dumped.stdout, dumped.stdout
    assert "4-kernel.o" in os.listdir(key_folder(files / "dump", "cpu"))


# A `?` program too: its overrides keep the signature as declared (an
# override of one was once refused as changing it: its `?` dims had been
# compared after naming).
@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("target", ["cpu", "cuda", "vulkan"])
def test_unchanged_stages_give_bit_identical_binaries(files, target, dynamic):
    if dynamic:
        (files / "p.mlir").write_text(PROGRAM.replace("tensor<4x8xf32>", "tensor<?x?xf32>"))
    dump = files / "dump"
    proc = kiln_run(files, "--dump-dir", str(dump), device=target, compile_only=True)
    assert proc.returncode == 0, proc.stderr
    folder = key_folder(dump, target)
    expected = binaries(folder, target)
    for stage in STAGES[target]:
        overrides = files / ("override-" + stage)
        os.makedirs(overrides / os.path.basename(folder))
        shutil.copy(os.path.join(folder, stage), overrides / os.path.basename(folder))
        again = files / ("dump-" + stage)
        proc = kiln_run(files, "--dump-dir", str(again), device=target, compile_only=True,
                        env={"KILN_OVERRIDE_DIR": str(overrides)})
        assert proc.returncode == 0, proc.stderr
        assert f"applied {stage}" in proc.stderr, proc.stderr
        assert binaries(key_folder(again, target), target) == expected, stage


def edit(files, stage, old, new, device="cpu", compile_only=False, count=1):
    """Dumps PROGRAM, then puts `stage` with `old` replaced by `new` (the
    first `count` times; -1: all) in an override directory; returns that
    directory."""
    dump = files / "dump"
    proc = kiln_run(files, "--dump-dir", str(dump), device=device, compile_only=compile_only)
    assert proc.returncode == 0, proc.stderr
    folder = key_folder(dump, device)
    text = open(os.path.join(folder, stage)).read()
    assert old in text, text
    overrides = files / "overrides"
    os.makedirs(overrides / os.path.basename(folder), exist_ok=True)
    (overrides / os.path.basename(folder) / stage).write_text(text.replace(old, new, count))
    shutil.rmtree(files / "cache", ignore_errors=True)
    return overrides


@pytest.mark.parametrize("device,stage,old,new", [
    ("cpu", "0-kiln.mlir", "kiln.add", "kiln.sub"),
    ("cpu", "1-kernels.mlir", "arith.addf", "arith.subf"),
    ("cpu", "3-llvm.ll", "fadd", "fsub"),  # every add: which one runs depends on the host
    ("vulkan", "1-kernels.mlir", "arith.addf", "arith.subf"),
    ("vulkan", "3-kernel0.spvasm", "OpFAdd", "OpFSub"),
])
def test_edited_stage_changes_the_result_and_skips_the_disk_cache(files, device, stage, old,
                                                                   new):
    overrides = edit(files, stage, old, new, device, count=-1 if stage == "3-llvm.ll" else 1)
    proc = kiln_run(files, device=device, env={"KILN_OVERRIDE_DIR": str(overrides)})
    assert proc.returncode == 0, proc.stderr
    assert f"applied {stage}" in proc.stderr, proc.stderr
    if stage == "3-llvm.ll":
        assert not np.allclose(result(files), np.exp(A + B), rtol=1e-5)
    else:
        np.testing.assert_allclose(result(files), np.exp(A - B), rtol=1e-5)
    assert not disk_entries(files), disk_entries(files)
    # Without the overrides, the program is itself again (and cached).
    proc = kiln_run(files, device=device)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(result(files), np.exp(A + B), rtol=1e-5)
    assert disk_entries(files)


def test_edited_nvvm_stage_changes_the_ptx(files):
    overrides = edit(files, "2-gpu.mlir", "llvm.fadd", "llvm.fsub", "cuda", compile_only=True)
    proc = kiln_run(files, "--dump-dir", str(files / "again"), device="cuda",
                    compile_only=True, env={"KILN_OVERRIDE_DIR": str(overrides)})
    assert proc.returncode == 0, proc.stderr
    before = b"".join(binaries(key_folder(files / "dump", "cuda"), "cuda").values())
    after = b"".join(binaries(key_folder(files / "again", "cuda"), "cuda").values())
    assert after.count(b"sub.") > before.count(b"sub."), after


@pytest.mark.parametrize("device,stage,old,new,message", [
    ("cpu", "0-kiln.mlir", "kiln.add %arg0, %arg1", "kiln.add %arg0, %arg1,,",
     r"0-kiln.mlir does not parse:\n\S*0-kiln.mlir:3:\d+: error: "),
    ("cpu", "1-kernels.mlir", "arith.addf", "arith.nonsense",
     r"1-kernels.mlir does not parse:\n\S*1-kernels.mlir:\d+:\d+: error: "),
    ("cpu", "3-llvm.ll", "fadd", "fnonsense", r"3-llvm.ll:\d+:\d+: error: "),
    ("cpu", "0-kiln.mlir", "tensor<4x8xf32>) -> tensor<4x8xf32> {",
     "tensor<4x8xf32>) -> tensor<4x8xf64> {", r"does not parse|changes the signature"),
    ("vulkan", "3-kernel0.spvasm", "OpFAdd", "OpNonsense", r"3-kernel0.spvasm:\d+:\d+: error: "),
])
def test_broken_override_is_an_error_naming_file_and_line(files, device, stage, old, new,
                                                         message):
    overrides = edit(files, stage, old, new, device, compile_only=True)
    proc = kiln_run(files, device=device, compile_only=True,
                    env={"KILN_OVERRIDE_DIR": str(overrides)})
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "invalid_argument error" in proc.stderr and "override " in proc.stderr, proc.stderr
    assert re.search(message, proc.stderr), proc.stderr
    assert "internal error" not in proc.stderr


def test_signature_changing_override_is_refused(files):
    program = PROGRAM.replace("tensor<4x8xf32>", "tensor<4x8xf64>")
    overrides = edit(files, "0-kiln.mlir", "tensor<4x8xf32>", "tensor<4x8xf64>",
                     compile_only=True)
    folder = os.listdir(overrides)[0]
    (overrides / folder / "0-kiln.mlir").write_text(program)
    proc = kiln_run(files, compile_only=True, env={"KILN_OVERRIDE_DIR": str(overrides)})
    assert proc.returncode == 2 and "changes the signature of @main" in proc.stderr, proc.stderr


def test_stray_override_files_and_folders_are_logged_as_ignored(files):
    overrides = edit(files, "1-kernels.mlir", "arith.addf", "arith.addf", compile_only=True)
    folder = overrides / os.listdir(overrides)[0]
    (folder / "notes.txt").write_text("not a stage")
    (folder / "3-kernel0.ptx").write_text("a stage of another target")
    os.makedirs(overrides / "cpu-main-000000000000")
    proc = kiln_run(files, compile_only=True, env={"KILN_OVERRIDE_DIR": str(overrides)})
    assert proc.returncode == 0, proc.stderr
    log = [line for line in proc.stderr.splitlines() if line.startswith("kiln: overrides in")]
    assert len(log) == 1, proc.stderr
    assert "applied 1-kernels.mlir" in log[0]
    assert "notes.txt (no stage of this compile has that name" in log[0], log[0]
    assert "3-kernel0.ptx (no stage of this compile has that name" in log[0], log[0]
    assert re.search(r"override \S*cpu-main-000000000000 ignored: no compile of this process "
                     r"has this key folder", proc.stderr), proc.stderr


# A full reduction or a long scan that ran as one block of 256 threads (or
# one thread) left the GPU idle: 7.44 ms and 3.3 s on the H200 for 2^26
# floats. Each now launches more than one block, on both GPU targets.
LONG_PROGRAM = """func.func @main(%a: tensor<4194304xf32>) -> (tensor<f32>, tensor<4194304xf32>) {
  %0 = kiln.reduce_sum %a {dims = array<i64: 0>} : tensor<4194304xf32> -> tensor<f32>
  %1 = kiln.cumsum %a {dim = 0} : tensor<4194304xf32>
  return %0, %1 : tensor<f32>, tensor<4194304xf32>
}
"""


@pytest.mark.parametrize("target", ["cuda", "vulkan"])
def test_long_reductions_and_scans_launch_many_blocks(files, target):
    (files / "p.mlir").write_text(LONG_PROGRAM)
    proc = kiln_run(files, "--dump-dir", str(files / "dump"), device=target, compile_only=True)
    assert proc.returncode == 0, proc.stderr
    [manifest] = glob.glob(str(files / "dump" / "manifest-*.json"))
    [compile] = json.load(open(manifest))["compiles"]
    grids = [launch["grid"][0] * launch["grid"][1] * launch["grid"][2]
             for launch in compile["launches"]]
    # The reduction: 256 slices, then their combination; the scan: 2048
    # chunk totals, their scan, 2048 chunk scans.
    assert sorted(grids) == [1, 1, 256, 2048, 2048], grids
