# MLIR and LLVM 22 (Debian: libmlir-22-dev, llvm-22-dev, mlir-22-tools).
# Imported targets: MLIR, LLVM (and MLIR's per-library targets); the
# TableGen and lit helpers of AddMLIR; MLIR_LIB_DIR for the runtime support
# libraries JIT'd CPU kernels call into.
find_package(MLIR REQUIRED CONFIG PATHS /usr/lib/llvm-22/lib/cmake/mlir)
if(NOT LLVM_PACKAGE_VERSION VERSION_GREATER_EQUAL 22 OR LLVM_PACKAGE_VERSION VERSION_GREATER_EQUAL 23)
  message(FATAL_ERROR "kiln needs LLVM/MLIR 22, found ${LLVM_PACKAGE_VERSION} in ${LLVM_DIR}")
endif()
message(STATUS "Using MLIR ${LLVM_PACKAGE_VERSION} from ${MLIR_DIR}")
list(APPEND CMAKE_MODULE_PATH ${MLIR_CMAKE_DIR} ${LLVM_CMAKE_DIR})
include(TableGen)
include(AddLLVM)
include(AddMLIR)
include_directories(SYSTEM ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
set(MLIR_LIB_DIR ${LLVM_LIBRARY_DIR})
