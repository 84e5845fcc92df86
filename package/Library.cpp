// libkiln.so is the KilnBackend archive linked whole (package/CMakeLists.txt);
// CMake needs at least one source of the library's own.
