# Vulkan (Debian: libvulkan-dev for the headers, mesa-vulkan-drivers for
# lavapipe). Only the headers at build time: the loader, libvulkan.so.1, is
# opened with dlopen at run time and never linked. KilnVulkanApi: the
# headers and kiln's tables of the functions it resolves
# (third_party/vulkan/*.def).
find_package(VulkanHeaders 1.2 REQUIRED CONFIG)
add_library(KilnVulkanApi INTERFACE)
target_include_directories(KilnVulkanApi INTERFACE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(KilnVulkanApi INTERFACE Vulkan::Headers)
