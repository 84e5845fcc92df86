"""The disk kernel cache across processes (kiln-run, kiln-cache): a second
process compiles nothing and creates no MLIR context, with bit-identical
results; bad entries are rebuilt; bundles export and import; 16 processes
share one directory while some are killed. CPU here, lavapipe where it is
installed; CUDA on the GPU machine (skipped, with the reason, elsewhere)."""
import json
import os
import random
import re
import shutil
import signal
import subprocess
import time

import numpy as np
import pytest

from kiln_harness import KILN_RUN

KILN_CACHE = os.path.join(os.path.dirname(KILN_RUN), "kiln-cache")

PROGRAMS = {
    "add_exp": """func.func @main(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = kiln.exp %0 : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}""",
    "matmul": """func.func @main(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %0 = kiln.matmul %a, %b : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}""",
    "softmax": """func.func @main(%a: tensor<3x33xf32>) -> tensor<3x33xf32> {
  %0 = kiln.softmax %a {dim = 1} : tensor<3x33xf32>
  return %0 : tensor<3x33xf32>
}""",
}

DEVICE_PARAMS = ["cpu", "vulkan", "cuda"]


def run(program_path, out, cache, device="cpu", check=True):
    env = dict(os.environ, KILN_CACHE_DIR=str(cache))
    proc = subprocess.run([KILN_RUN, str(program_path), "--device", device, "--seed", "3",
                           "--output-dir", str(out), "--cache-stats"],
                          capture_output=True, text=True, timeout=120, env=env)
    if proc.returncode != 0 and "does not exist" in proc.stderr:
        pytest.skip(f"{device}: {proc.stderr.strip()}")
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def stats(proc):
    m = re.search(r"kernel cache: (\d+) compiled, (\d+) from disk, (\d+) MLIR context"
                  r"\(s\), compiler library (loaded|not loaded)", proc.stdout)
    assert m, proc.stdout
    counts = tuple(int(x) for x in m.groups()[:3])
    # The compiler library (and with it MLIR) is loaded exactly when a
    # compiler was created.
    assert (m.group(4) == "loaded") == (counts[2] > 0), proc.stdout
    return counts


def kiln_cache(cache, *args):
    return subprocess.run([KILN_CACHE, "--dir", str(cache), *args],
                          capture_output=True, text=True, timeout=120)


def write_programs(tmp_path):
    paths = {}
    for name, text in PROGRAMS.items():
        paths[name] = tmp_path / f"{name}.mlir"
        paths[name].write_text(text)
    return paths


def result_bytes(out):
    return np.load(out / "result0.npy").tobytes()


def entry_files(cache):
    return sorted(p for p in cache.rglob("*.kce"))


@pytest.mark.parametrize("device", DEVICE_PARAMS)
def test_second_process_compiles_nothing(tmp_path, device):
    cache = tmp_path / "cache"
    paths = write_programs(tmp_path)
    cold = {}
    for name, path in paths.items():
        proc = run(path, tmp_path / f"cold-{name}", cache, device)
        assert stats(proc) == (1, 0, 1), proc.stdout
        cold[name] = result_bytes(tmp_path / f"cold-{name}")
    for name, path in paths.items():
        proc = run(path, tmp_path / f"warm-{name}", cache, device)
        assert stats(proc) == (0, 1, 0), proc.stdout
        assert "from the disk cache" in proc.stdout
        assert result_bytes(tmp_path / f"warm-{name}") == cold[name], name
    assert kiln_cache(cache, "verify").returncode == 0


@pytest.mark.parametrize("device", DEVICE_PARAMS)
def test_corrupt_entries_are_rebuilt(tmp_path, device):
    cache = tmp_path / "cache"
    path = write_programs(tmp_path)["softmax"]
    run(path, tmp_path / "cold", cache, device)
    want = result_bytes(tmp_path / "cold")
    corruptions = {
        "flip": lambda b: b[:-7] + bytes([b[-7] ^ 1]) + b[-6:],
        "truncate": lambda b: b[: len(b) // 2],
        "version": lambda b: b[:8] + bytes([9, 0, 0, 0]) + b[12:],
        "empty": lambda b: b"",
    }
    for how, corrupt in corruptions.items():
        for f in entry_files(cache):
            f.write_bytes(corrupt(f.read_bytes()))
        assert kiln_cache(cache, "verify").returncode == 1, how
        proc = run(path, tmp_path / how, cache, device)
        assert stats(proc)[0] == 1, (how, proc.stdout)
        assert "ignoring" in proc.stderr, (how, proc.stderr)
        assert result_bytes(tmp_path / how) == want, how
        assert kiln_cache(cache, "verify").returncode == 0, how
    # Entries swapped between two programs: each names the other's key.
    other = write_programs(tmp_path)["add_exp"]
    run(other, tmp_path / "other", cache, device)
    files = entry_files(cache)
    blobs = [f.read_bytes() for f in files]
    for f, b in zip(files, blobs[1:] + blobs[:1]):
        f.write_bytes(b)
    proc = run(path, tmp_path / "swapped", cache, device)
    assert stats(proc)[0] == 1, proc.stdout
    assert result_bytes(tmp_path / "swapped") == want


def test_kiln_cache_export_import_clear(tmp_path):
    cache = tmp_path / "cache"
    paths = write_programs(tmp_path)
    for name, path in paths.items():
        run(path, tmp_path / name, cache)
    listed = kiln_cache(cache, "list")
    assert listed.returncode == 0 and listed.stdout.count("cpu @main") == len(paths), listed.stdout
    # An entry and an alias of its text per program; one with tune keys (the
    # matmul) also aliases its IR and its text with its configs.
    files = len(entry_files(cache))
    assert files == 2 * len(paths) + 2, files
    st = kiln_cache(cache, "stats")
    assert f"total: {files} entries" in st.stdout, st.stdout
    bundle = tmp_path / "app.kilnbundle"
    exported = kiln_cache(cache, "export", str(bundle))
    assert exported.returncode == 0, exported.stderr
    assert kiln_cache(cache, "clear").returncode == 0
    assert entry_files(cache) == []
    shipped = tmp_path / "shipped"
    imported = kiln_cache(shipped, "import", str(bundle))
    assert imported.returncode == 0, imported.stderr
    assert f"imported {files} entries" in imported.stdout
    for name, path in paths.items():
        assert stats(run(path, tmp_path / f"shipped-{name}", shipped)) == (0, 1, 0)
    # A bundle of version 1 (entries only, no kind bytes) still imports.
    raw, records, at = bundle.read_bytes(), [], len(b"KILNBUNDLE2\n")
    while at < len(raw):
        size = int.from_bytes(raw[at + 1:at + 9], "little")
        records.append(raw[at + 9:at + 9 + size])
        at += 9 + size
    old = tmp_path / "old.kilnbundle"
    old.write_bytes(b"KILNBUNDLE1\n" + b"".join(len(r).to_bytes(8, "little") + r for r in records))
    from_old = kiln_cache(tmp_path / "from-old", "import", str(old))
    assert from_old.returncode == 0 and f"imported {files} entries" in from_old.stdout, \
        from_old.stdout + from_old.stderr
    # A damaged bundle entry is refused, the others imported.
    data = bytearray(bundle.read_bytes())
    data[len(b"KILNBUNDLE2\n") + 1 + 8 + 60] ^= 0xFF
    bundle.write_bytes(bytes(data))
    damaged = kiln_cache(tmp_path / "damaged", "import", str(bundle))
    assert damaged.returncode == 1 and "refused" in damaged.stderr, damaged.stderr
    assert f"imported {files - 1} entries" in damaged.stdout
    # Usage errors: exit 2 with a message.
    assert kiln_cache(cache, "frobnicate").returncode == 2
    assert kiln_cache(cache, "import").returncode == 2
    notabundle = tmp_path / "x"
    notabundle.write_bytes(b"hello")
    bad = kiln_cache(cache, "import", str(notabundle))
    assert bad.returncode == 2 and "not a kiln cache bundle" in bad.stderr


def test_bundle_ships_tune_files(tmp_path):
    """A bundle carries the cache's tune files: the importing cache runs the
    tuned kernels from disk with no benchmark; entries it had win over the
    bundle's; a broken tune record is refused, naming the bundle and line."""
    cache, shipped = tmp_path / "cache", tmp_path / "shipped"
    path = write_programs(tmp_path)["matmul"]
    env = dict(os.environ, KILN_CACHE_DIR=str(cache))
    env.pop("KILN_AUTOTUNE", None)
    tuned = subprocess.run([os.path.join(os.path.dirname(KILN_RUN), "kiln-tune"), str(path),
                            "--budget-ms", "20"], capture_output=True, text=True, env=env)
    assert tuned.returncode == 0, tuned.stderr
    tune_file, = (cache / "tune").glob("*.json")
    run(path, tmp_path / "cold", cache)
    # The exporting cache's file also holds a key that only the bundle will
    # bring; the importing cache has another key, and the bundle's tuned
    # key without timings: all three stay, the cache's winning.
    data = json.loads(tune_file.read_text())
    theirs = data["entries"][0]
    shipped_only = dict(theirs, key=dict(theirs["key"], shape=[8, 4, 64]))
    tune_file.write_text(json.dumps(dict(data, entries=[theirs, shipped_only])))
    bundle = tmp_path / "app.kilnbundle"
    exported = kiln_cache(cache, "export", str(bundle))
    assert exported.returncode == 0 and "and 1 tune files" in exported.stdout, exported.stdout
    mine = dict(theirs, key=dict(theirs["key"], shape=[8, 4, 32]))
    ours = dict(theirs, timings_ms=[])
    (shipped / "tune").mkdir(parents=True)
    (shipped / "tune" / tune_file.name).write_text(
        json.dumps(dict(data, entries=[mine, ours])))
    imported = kiln_cache(shipped, "import", str(bundle))
    assert imported.returncode == 0, imported.stderr
    assert "and 1 tune files" in imported.stdout, imported.stdout
    merged = json.loads((shipped / "tune" / tune_file.name).read_text())["entries"]
    assert sorted(e["key"]["shape"] for e in merged) == [[8, 4, 16], [8, 4, 32], [8, 4, 64]]
    assert [e["timings_ms"] for e in merged if e["key"] == theirs["key"]] == [[]]
    proc = run(path, tmp_path / "warm", shipped)
    assert stats(proc) == (0, 1, 0), proc.stdout
    assert re.search(r"autotune: 1 tuned kernel\(s\), 0 benchmark", proc.stdout), proc.stdout
    assert result_bytes(tmp_path / "warm") == result_bytes(tmp_path / "cold")
    assert kiln_cache(shipped, "verify").returncode == 0
    # A hand-broken tune record: refused by name and line, the rest imported,
    # and a broken tune file in the cache is never replaced.
    raw = bundle.read_bytes()
    at = raw.index(b'"format"')
    broken = tmp_path / "broken.kilnbundle"
    broken.write_bytes(raw[:at] + b"'" + raw[at + 1:])
    refused = kiln_cache(tmp_path / "fresh", "import", str(broken))
    assert refused.returncode == 1, refused.stdout
    assert re.search(r"broken.kilnbundle record #\d+ refused: tune file:1: ", refused.stderr), \
        refused.stderr
    assert f"imported {len(entry_files(cache))} entries and 0 tune files" in refused.stdout, \
        refused.stdout
    (shipped / "tune" / tune_file.name).write_text("{")
    kept = kiln_cache(shipped, "import", str(bundle))
    assert kept.returncode == 1 and "not replaced" in kept.stderr, kept.stderr
    assert (shipped / "tune" / tune_file.name).read_text() == "{"
    assert kiln_cache(shipped, "verify").returncode == 1


def test_prune_deletes_other_builds_and_evicts_to_the_cap(tmp_path):
    cache = tmp_path / "cache"
    paths = write_programs(tmp_path)
    for name, path in paths.items():
        run(path, tmp_path / name, cache)
    old_build = cache / "0000oldbuild" / "cpu-x"
    old_build.mkdir(parents=True)
    (old_build / ("a" * 64 + ".kce")).write_bytes(b"stale")
    pruned = kiln_cache(cache, "prune")
    assert pruned.returncode == 0 and "pruned 1" in pruned.stdout, pruned.stdout
    assert not (cache / "0000oldbuild").exists()
    total = sum(f.stat().st_size for f in entry_files(cache))
    env = dict(os.environ, KILN_CACHE_MAX_BYTES=str(total // 2))
    capped = subprocess.run([KILN_CACHE, "--dir", str(cache), "prune"], env=env,
                            capture_output=True, text=True)
    assert capped.returncode == 0, capped.stderr
    assert sum(f.stat().st_size for f in entry_files(cache)) <= total // 2
    bad_cap = subprocess.run([KILN_CACHE, "--dir", str(cache), "stats"],
                             env=dict(os.environ, KILN_CACHE_MAX_BYTES="1X"),
                             capture_output=True, text=True)
    assert bad_cap.returncode == 2 and "KILN_CACHE_MAX_BYTES" in bad_cap.stderr


def test_sixteen_processes_share_one_cache_some_killed(tmp_path):
    """16 workers run 4 programs each from a pool of 8 (many shared) in one
    empty directory; 3 are killed mid-way. Every finished result is right;
    afterwards every entry verifies and a fresh pass compiles nothing."""
    cache = tmp_path / "cache"
    pool = []
    for n in range(8):
        size = 3 + n
        text = (f"func.func @main(%a: tensor<{size}xf32>, %b: tensor<{size}xf32>) -> "
                f"tensor<{size}xf32> {{\n  %0 = kiln.add %a, %b : (tensor<{size}xf32>, "
                f"tensor<{size}xf32>) -> tensor<{size}xf32>\n  return %0 : tensor<{size}xf32>\n}}")
        p = tmp_path / f"p{n}.mlir"
        p.write_text(text)
        a = np.arange(size, dtype=np.float32) * (n + 1)
        b = np.full(size, 0.5 + n, dtype=np.float32)
        np.save(tmp_path / f"a{n}.npy", a)
        np.save(tmp_path / f"b{n}.npy", b)
        pool.append((p, a + b))
    env = dict(os.environ, KILN_CACHE_DIR=str(cache))
    script = " && ".join(
        f"{KILN_RUN} {tmp_path}/p{{n{i}}}.mlir --input {tmp_path}/a{{n{i}}}.npy "
        f"--input {tmp_path}/b{{n{i}}}.npy --output-dir {tmp_path}/w{{w}}-{i}"
        for i in range(4))
    workers = []
    for w in range(16):
        rng = random.Random(w)
        picks = {f"n{i}": rng.randrange(8) for i in range(4)}
        cmd = script.format(w=w, **picks)
        workers.append((subprocess.Popen(["bash", "-c", cmd], env=env, start_new_session=True,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE),
                        picks))
    time.sleep(0.3)
    for proc, _ in workers[::6]:
        os.killpg(proc.pid, signal.SIGKILL)
    finished = set()
    for w, (proc, picks) in enumerate(workers):
        _, err = proc.communicate(timeout=300)
        if w % 6 == 0:
            continue
        finished.update(picks.values())
        assert proc.returncode == 0, err.decode()
        for i in range(4):
            got = np.load(tmp_path / f"w{w}-{i}" / "result0.npy")
            np.testing.assert_array_equal(got, pool[picks[f"n{i}"]][1])
    verified = kiln_cache(cache, "verify")
    assert verified.returncode == 0, verified.stdout
    for n in finished:
        proc = run(pool[n][0], tmp_path / f"after{n}", cache)
        assert stats(proc) == (0, 1, 0), proc.stdout


def test_cpu_kernels_from_the_disk_cache_load_without_llvm(tmp_path):
    """Where the system has a linker, a CPU program is linked into a shared
    object when it is compiled, and a warm process loads it with dlopen: no
    JIT, so no LLVM. Without one (KILN_CPU_LINKER empty) objects go to the
    JIT as before; both give the same bytes."""
    if shutil.which("ld") is None:
        pytest.skip("no system linker: CPU kernels stay objects")
    path = write_programs(tmp_path)["softmax"]
    results = {}
    for linker in ("ld", ""):
        cache = tmp_path / ("cache-" + (linker or "none"))
        os.environ["KILN_CPU_LINKER"] = linker
        try:
            cold = run(path, tmp_path / "cold", cache)
            warm = run(path, tmp_path / "warm", cache)
        finally:
            del os.environ["KILN_CPU_LINKER"]
        assert stats(warm) == (0, 1, 0), warm.stdout
        want = "CPU JIT not loaded" if linker else "CPU JIT loaded"
        assert want in warm.stdout, warm.stdout
        results[linker] = result_bytes(tmp_path / "warm")
        assert results[linker] == result_bytes(tmp_path / "cold")
    assert results["ld"] == results[""]


def test_a_named_cpu_linker_that_fails_is_named_and_the_jit_runs_the_kernel(tmp_path, monkeypatch):
    # It was silent: a KILN_CPU_LINKER that cannot link left every kernel to
    # the JIT (warm starts loading LLVM) without a word.
    path = write_programs(tmp_path)["softmax"]
    run(path, tmp_path / "default", tmp_path / "cache-default")
    monkeypatch.setenv("KILN_CPU_LINKER", "/bin/false")
    cold = run(path, tmp_path / "cold", tmp_path / "cache")
    assert "KILN_CPU_LINKER=/bin/false did not link a CPU kernel" in cold.stderr
    warm = run(path, tmp_path / "warm", tmp_path / "cache")
    assert stats(warm) == (0, 1, 0) and "CPU JIT loaded" in warm.stdout, warm.stdout
    assert result_bytes(tmp_path / "warm") == result_bytes(tmp_path / "default")


def test_cpu_features_setting_is_part_of_the_key_and_narrows_the_code(tmp_path, monkeypatch):
    # KILN_CPU_FEATURES=-avx512f compiles what an AVX2 host gets (CI runs
    # kernels so: docs/testing.md): a kernel of the host's own features is
    # not loaded for it, and its vectors are 8 lanes at most.
    cache = tmp_path / "cache"
    path = write_programs(tmp_path)["softmax"]
    assert stats(run(path, tmp_path / "host", cache)) == (1, 0, 1)
    monkeypatch.setenv("KILN_CPU_FEATURES", "-avx512f")
    assert stats(run(path, tmp_path / "narrow", cache)) == (1, 0, 1)
    np.testing.assert_allclose(np.load(tmp_path / "narrow" / "result0.npy"),
                               np.load(tmp_path / "host" / "result0.npy"), rtol=1e-6)
    assert stats(run(path, tmp_path / "again", cache)) == (0, 1, 0)
    monkeypatch.setenv("KILN_DUMP_DIR", str(tmp_path / "dump"))
    run(path, tmp_path / "dumped", cache)
    llvm_ir = "".join(p.read_text() for p in (tmp_path / "dump").glob("*/3-llvm.ll"))
    assert "x float>" in llvm_ir and "<16 x float>" not in llvm_ir


@pytest.mark.parametrize("item, why", [
    # made f16 kernels of those instructions on a host without them: SIGILL
    ("+avx512fp16", "this CPU does not have it"),
    # LLVM aborted the process ("Do not know how to expand the result")
    ("-64bit-mode", "every CPU of this kind has it"),
    # LLVM's "SSE register return with SSE disabled"
    ("-sse", "every CPU of this kind has it"),
])
def test_cpu_features_setting_only_narrows_the_host_within_its_kind(item, why, tmp_path):
    # Such an item is left out, named, and the kernel runs right.
    with open("/proc/cpuinfo") as f:
        if item == "+avx512fp16" and "avx512_fp16" in f.read():
            pytest.skip("this CPU has AVX512-FP16")
    path = tmp_path / "mul.mlir"
    path.write_text("""func.func @main(%a: tensor<4096xf16>, %b: tensor<4096xf16>) -> tensor<4096xf16> {
  %r = kiln.mul %a, %b : (tensor<4096xf16>, tensor<4096xf16>) -> tensor<4096xf16>
  return %r : tensor<4096xf16>
}
""")
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal(4096).astype(np.float16) for _ in range(2))
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    env = dict(os.environ, KILN_CACHE_DIR="", KILN_CPU_FEATURES=item)
    proc = subprocess.run([KILN_RUN, str(path), "--input", str(tmp_path / "a.npy"), "--input",
                           str(tmp_path / "b.npy"), "--output-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert f"KILN_CPU_FEATURES: '{item}' left out: {why}" in proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "result0.npy"), a * b)
