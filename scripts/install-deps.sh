#!/usr/bin/env bash
# Installs kiln's build and test dependencies from Debian packages, when missing.
set -euo pipefail
pkgs=(cmake ninja-build ccache g++ python3 python3-numpy
      python3-pytest python3-pytest-xdist llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
      libgtest-dev nlohmann-json3-dev
      libvulkan-dev mesa-vulkan-drivers spirv-tools libopenblas0-pthread
      vulkan-validationlayers clang-22 libclang-rt-22-dev libfuzzer-22-dev
      python3-dev pybind11-dev libdlpack-dev python3-torch)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
