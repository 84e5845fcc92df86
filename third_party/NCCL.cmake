# NCCL: nothing at build time. libnccl.so.2 is opened with dlopen at run
# time (KILN_NCCL_LIBRARY, else the loader's search path); KilnNcclApi
# carries kiln's declarations of the NCCL ABI it calls (third_party/nccl/),
# so no NCCL header or package is needed to build kiln.
add_library(KilnNcclApi INTERFACE)
target_include_directories(KilnNcclApi INTERFACE ${CMAKE_CURRENT_LIST_DIR})
