//===- fuzz-tune-file.cpp - libFuzzer target: tune files ------------------===//
//
// Any bytes are a tune file to TuneDatabase::parse: a database, or an error
// naming the file and a line, never a crash. A database parsed is written
// and parsed back with as many entries; a key text is parsed or refused.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime/common/TuneDatabase.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  (void)kiln::TuneKey::parse(bytes);
  auto db = kiln::TuneDatabase::parse(bytes, "fuzz.json");
  if (!db) {
    if (db.error().message.rfind("fuzz.json:", 0) != 0)
      std::abort(); // every error names the file and line
    return 0;
  }
  auto again = kiln::TuneDatabase::parse(db->toJson(), "again.json");
  if (!again || again->entries().size() != db->entries().size())
    std::abort();
  return 0;
}
