# SPIRV-Tools (Debian: spirv-tools): the validator every SPIR-V module
# passes before use. Its CMake package carries no version file, so the
# check is for the target kiln links: SPIRV-Tools-static.
find_package(SPIRV-Tools REQUIRED CONFIG)
if(NOT TARGET SPIRV-Tools-static)
  message(FATAL_ERROR "SPIRV-Tools in ${SPIRV-Tools_DIR} has no SPIRV-Tools-static target")
endif()
