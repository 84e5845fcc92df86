# nlohmann-json (Debian: nlohmann-json3-dev), header-only: JSON metadata
# files. Imported target nlohmann_json::nlohmann_json.
find_package(nlohmann_json 3.10 REQUIRED CONFIG)
