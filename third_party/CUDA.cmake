# CUDA: nothing at build time. The driver, libcuda.so.1, is opened with
# dlopen at run time; KilnCudaDriverApi carries kiln's declarations of the
# driver ABI it calls (third_party/cuda/), so no toolkit header is needed.
# The toolkit's optional ptxas is looked up at run time, on the machine
# that has it (kiln-run --cubin; lit's "ptxas" feature).
add_library(KilnCudaDriverApi INTERFACE)
target_include_directories(KilnCudaDriverApi INTERFACE ${CMAKE_CURRENT_LIST_DIR})
