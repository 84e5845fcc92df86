# lit configuration for kiln's dialect, pass and tool tests.
import os
import lit.formats

config.name = "kiln"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_bin_dir, "..", "tests", "lit-out")
config.excludes = ["lit.cfg.py", "lit.site.cfg.py.in", "Inputs"]
config.environment["PATH"] = os.pathsep.join(
    [config.kiln_bin_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
config.substitutions.append(("%kiln_bin", config.kiln_bin_dir))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
config.substitutions.append(("%examples", os.path.join(config.kiln_src_root, "examples")))

# ptxas (CUDA toolkit) checks the PTX kiln emits where the toolkit exists.
ptxas = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "ptxas")
if os.path.exists(ptxas):
    config.available_features.add("ptxas")
    config.environment["PATH"] = os.pathsep.join([os.path.dirname(ptxas), config.environment["PATH"]])

# spirv-val (Debian spirv-tools) checks the SPIR-V kiln emits.
import shutil
if shutil.which("spirv-val"):
    config.available_features.add("spirv-val")

# The Khronos validation layer (Debian vulkan-validationlayers) checks kiln's
# use of a Vulkan device (lavapipe in CI).
if os.path.exists("/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json"):
    config.available_features.add("vulkan-validation")
