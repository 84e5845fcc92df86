"""KILN_DUMP_DIR and KILN_OVERRIDE_DIR in a Python process (docs/dumps.md):
eager ops and kiln.compile go through the same mechanism as kiln-run. The
variables are read once per process, so each case runs in a fresh one."""
import glob
import json
import os
import subprocess
import sys

import kiln

SCRIPT = """
import sys, numpy as np
import kiln
x = kiln.tensor(np.full((4, 8), 2.0, np.float32), sys.argv[1])
print(kiln.exp(x).numpy()[0, 0])
program = kiln.compile('''func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = kiln.neg %a : tensor<3xf32>
  return %0 : tensor<3xf32>
}''', sys.argv[1])
print(program(kiln.tensor(np.ones(3, np.float32), sys.argv[1])).numpy()[0])
"""


def run(device, env):
    full = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(kiln.__file__)),
                KILN_CACHE_DIR="", **env)
    proc = subprocess.run([sys.executable, "-c", SCRIPT, device], capture_output=True,
                          text=True, timeout=300, env=full)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_eager_ops_and_programs_are_dumped_with_a_manifest(device, tmp_path):
    run(device, {"KILN_DUMP_DIR": str(tmp_path)})
    [manifest] = glob.glob(str(tmp_path / "manifest-*.json"))
    compiles = json.load(open(manifest))["compiles"]
    assert len(compiles) == 2, compiles
    for c in compiles:
        assert c["ok"] and os.path.isdir(c["folder"]), c
        assert "0-kiln.mlir" in os.listdir(c["folder"])
        for launch in c["launches"]:
            assert all(os.path.exists(os.path.join(c["folder"], f)) for f in launch["files"])
    kiln_texts = [open(os.path.join(c["folder"], "0-kiln.mlir")).read() for c in compiles]
    assert any("kiln.exp" in t for t in kiln_texts) and any("kiln.neg" in t for t in kiln_texts)


def test_an_override_changes_an_eager_op(device, tmp_path):
    dump, overrides = tmp_path / "dump", tmp_path / "overrides"
    before = run(device, {"KILN_DUMP_DIR": str(dump)}).stdout.split()
    [manifest] = glob.glob(str(dump / "manifest-*.json"))
    [neg] = [c for c in json.load(open(manifest))["compiles"]
             if "kiln.neg" in open(os.path.join(c["folder"], "0-kiln.mlir")).read()]
    os.makedirs(overrides / neg["key"])
    text = open(os.path.join(neg["folder"], "0-kiln.mlir")).read()
    (overrides / neg["key"] / "0-kiln.mlir").write_text(text.replace("kiln.neg", "kiln.exp"))
    proc = run(device, {"KILN_OVERRIDE_DIR": str(overrides)})
    after = proc.stdout.split()
    assert "applied 0-kiln.mlir" in proc.stderr, proc.stderr
    assert before[0] == after[0] and float(before[1]) == -1.0
    assert abs(float(after[1]) - 2.7182817) < 1e-5, after
