//===- Dumps.h - stage files of a compile: dumps and overrides -*- C++ -*-===//
//
// docs/dumps.md. Each compile has a key folder, "<target>-<entry>-<hash>",
// the hash digesting the target, what its code depends on, the entry, the
// codegen options and the canonical program text, so that the same compile
// in another process has the same folder. Stages are written to
// CompileOptions::dumpDir/<key>/ and read back from overrideDir/<key>/,
// where a hand-edited stage replaces the compiler's. Every compile of the
// process is recorded in dumpDir/manifest-<pid>.json, rewritten atomically
// after each. MLIR-free.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_DUMPS_H
#define KILN_LOWERING_DUMPS_H

#include "kiln/Lowering/Compiler.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>
#include <set>

namespace kiln {

class CompileDumps {
public:
  /// `target` is "cpu", "cuda" or "vulkan"; `detail` what else its code
  /// depends on (host CPU, chip, Vulkan features).
  CompileDumps(const CompileOptions &options, std::string target, std::string detail,
               std::string_view canonical);
  /// Whether stages are dumped or overridden at all (else every call is free).
  bool active() const { return !dumpFolder.empty() || !overrideFolder.empty(); }
  const std::string &key() const { return keyFolder; }

  /// Stage `file` of this compile, written when dumping; `text` is only
  /// called then.
  void stage(const std::string &file, llvm::function_ref<std::string()> text);
  /// A hand-edited stage file.
  struct Override {
    std::string path, text;
  };
  /// The override of stage `file`, now counted as applied; nullopt if none.
  std::optional<Override> take(const std::string &file);
  /// Whether there is an override of `file`.
  bool has(const std::string &file) const { return overrides.contains(file); }
  /// An override that is there but not used, and why.
  void ignore(const std::string &file, std::string why);
  bool overridden() const { return !applied.empty(); }

  /// The end of a compile (`ok` when it succeeded): one log line on stderr
  /// when its key folder has overrides, and its record in the manifest.
  /// `plan`: a GPU program's launches; `kernels`: the kernel functions.
  void finish(bool ok, const CompiledProgram &result, const GpuPlan *plan,
              const std::vector<std::string> &kernels);

private:
  std::string target, detail, entry, codegen, keyFolder;
  std::string dumpRoot, dumpFolder, overrideFolder; // empty: not dumping / no overrides
  std::set<std::string> overrides;                  // files in overrideFolder
  std::vector<std::string> stages, applied;
  std::vector<std::pair<std::string, std::string>> ignored;
};

/// Logs the override key folders that no compile of this process used, once.
/// Runs at exit; a process that leaves without static destructors calls it.
void reportUnusedOverrideFolders();

} // namespace kiln

#endif
