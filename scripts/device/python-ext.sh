#!/bin/bash
# On the GPU machine: builds the kiln extension for its python3 (3.12,
# pybind11 from pip) from the static libraries prepare.sh packed; the
# package lands in ${1:-/tmp/kiln-python}/kiln.
set -euo pipefail
dest=${1:-/tmp/kiln-python}/kiln
include=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])")
pybind=$(python3 -c "import pybind11; print(pybind11.get_include())")
suffix=$(python3 -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
mkdir -p $dest
cp python/kiln/*.py python/kiln/*.pyi python/kiln/py.typed $dest/
g++ -O2 -fPIC -fvisibility=hidden -std=gnu++23 -shared -Ibackend/include -Iinclude \
  -Iruntime/include -Ilowering/include -Idialect/include -I.device/python-ext/include \
  -I$include -I$pybind python/src/*.cpp .device/python-ext/libKilnBackend.a \
  .device/python-ext/libKilnRuntime.a -ldl -o $dest/_kiln$suffix
