//===- Dumps.cpp - stage files of a compile: dumps and overrides ---------===//
#include "Dumps.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SHA256.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <unistd.h>
#include <utility>

namespace fs = std::filesystem;

namespace kiln {

namespace {
/// What every compile of the process shares: the manifests, and which key
/// folders of each override directory some compile used (the others are
/// reported at exit).
struct ProcessDumps {
  std::mutex mutex;
  std::map<std::string, llvm::json::Array> manifests; // by dump directory
  std::set<std::string> reported;                     // problems said once
  struct OverrideRoot {
    std::set<std::string> folders, used;
  };
  std::map<std::string, OverrideRoot> overrideRoots;

  /// Logs `message` once per process.
  void reportOnce(const std::string &message) {
    if (reported.insert(message).second)
      std::fprintf(stderr, "kiln: %s\n", message.c_str());
  }
  /// The override folders no compile used; said once, at the process's end.
  void reportUnusedOverrideFolders() {
    std::lock_guard lock(mutex);
    for (auto &[root, folders] : std::exchange(overrideRoots, {}))
      for (const std::string &folder : folders.folders)
        if (!folders.used.contains(folder))
          std::fprintf(stderr,
                       "kiln: override %s ignored: no compile of this process has "
                       "this key folder\n",
                       (fs::path(root) / folder).c_str());
  }
  ~ProcessDumps() { reportUnusedOverrideFolders(); }
};

ProcessDumps &processDumps() {
  static ProcessDumps dumps;
  return dumps;
}

bool writeFile(const fs::path &path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return out.good();
}

std::optional<std::string> readFile(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// "<target>-<entry>-<12 hex digits>", the entry cut to safe characters.
std::string keyFolderName(const std::string &target, const std::string &entry,
                          const std::string &keyText) {
  std::string name = target + "-";
  for (char c : entry.substr(0, 40))
    name += llvm::isAlnum(c) || c == '_' || c == '.' ? c : '_';
  auto digest = llvm::SHA256::hash(llvm::arrayRefFromStringRef(keyText));
  return name + "-" + llvm::toHex(digest, /*LowerCase=*/true).substr(0, 12);
}

llvm::json::Array stringArray(const std::vector<std::string> &strings) {
  return llvm::json::Array(strings);
}
} // namespace

CompileDumps::CompileDumps(const CompileOptions &options, std::string target,
                           std::string detail, std::string_view canonical)
    : target(std::move(target)), detail(std::move(detail)), entry(options.entry),
      codegen(options.codegenKey() + options.tuneTableKey()) {
  if (options.dumpDir.empty() && options.overrideDir.empty())
    return;
  keyFolder = keyFolderName(this->target, entry,
                            "target=" + this->target + "\ndetail=" + this->detail +
                                "\nentry=" + entry + "\ncodegen=" + codegen +
                                "\nprogram=" + std::string(canonical));
  ProcessDumps &process = processDumps();
  std::lock_guard lock(process.mutex);
  std::error_code ec;
  if (!options.dumpDir.empty()) {
    dumpRoot = options.dumpDir;
    fs::path folder = fs::absolute(fs::path(dumpRoot) / keyFolder, ec);
    if (!ec)
      fs::create_directories(folder, ec);
    if (ec)
      process.reportOnce("cannot dump to " + folder.string() + ": " + ec.message());
    else
      dumpFolder = folder;
  }
  if (options.overrideDir.empty())
    return;
  auto [root, scanned] = process.overrideRoots.try_emplace(options.overrideDir);
  if (scanned) {
    if (!fs::is_directory(options.overrideDir, ec))
      process.reportOnce("override directory " + options.overrideDir +
                         " is not a directory: no overrides");
    else
      for (const auto &item : fs::directory_iterator(options.overrideDir, ec))
        if (item.is_directory(ec))
          root->second.folders.insert(item.path().filename().string());
  }
  if (!root->second.folders.contains(keyFolder))
    return;
  root->second.used.insert(keyFolder);
  overrideFolder = fs::path(options.overrideDir) / keyFolder;
  for (const auto &item : fs::directory_iterator(overrideFolder, ec))
    if (!item.is_directory(ec))
      overrides.insert(item.path().filename().string());
}

void CompileDumps::stage(const std::string &file, llvm::function_ref<std::string()> text) {
  if (!active())
    return;
  stages.push_back(file);
  if (dumpFolder.empty())
    return;
  fs::path path = fs::path(dumpFolder) / file;
  if (!writeFile(path, text())) {
    std::lock_guard lock(processDumps().mutex);
    processDumps().reportOnce("cannot write the dump " + path.string());
  }
}

std::optional<CompileDumps::Override> CompileDumps::take(const std::string &file) {
  if (!overrides.contains(file))
    return std::nullopt;
  std::string path = (fs::path(overrideFolder) / file).string();
  std::optional<std::string> text = readFile(path);
  if (!text) {
    ignore(file, "it cannot be read");
    return std::nullopt;
  }
  applied.push_back(file);
  return Override{path, std::move(*text)};
}

void CompileDumps::ignore(const std::string &file, std::string why) {
  ignored.emplace_back(file, std::move(why));
}

void CompileDumps::finish(bool ok, const CompiledProgram &result, const GpuPlan *plan,
                          const std::vector<std::string> &kernels) {
  if (!active())
    return;
  for (const std::string &file : overrides) {
    auto seen = [&](auto &list, auto name) {
      return llvm::any_of(list, [&](const auto &item) { return name(item) == file; });
    };
    if (!seen(applied, [](const std::string &f) { return f; }) &&
        !seen(ignored, [](const auto &pair) { return pair.first; }))
      ignore(file, "no stage of this compile has that name (its stages: " +
                       llvm::join(stages, ", ") + ")");
  }
  ProcessDumps &process = processDumps();
  std::lock_guard lock(process.mutex);
  if (!overrideFolder.empty()) {
    std::string line = "kiln: overrides in " + overrideFolder + ": applied " +
                       (applied.empty() ? "none" : llvm::join(applied, ", "));
    for (auto [i, item] : llvm::enumerate(ignored))
      line += (i ? ", " : "; ignored ") + item.first + " (" + item.second + ")";
    std::fprintf(stderr, "%s%s\n", line.c_str(), ok ? "" : "; the compile failed");
  }
  if (dumpFolder.empty())
    return;

  llvm::json::Array times, launches, ignoredFiles;
  for (const StageTime &s : result.stageTimes)
    times.push_back(
        llvm::json::Object{{"stage", s.stage}, {"ms", std::round(s.milliseconds * 1000) / 1000}});
  for (const auto &[file, why] : ignored)
    ignoredFiles.push_back(llvm::json::Object{{"file", file}, {"why", why}});
  auto filesOfModule = [&](const std::string &prefix) {
    std::vector<std::string> files;
    for (const std::string &file : stages)
      if (llvm::StringRef(file).starts_with(prefix))
        files.push_back(file);
    return files;
  };
  if (ok && plan) {
    for (const KernelLaunch &launch : plan->launches) {
      auto dims = [](const std::array<unsigned, 3> &d) {
        return llvm::json::Array{d[0], d[1], d[2]};
      };
      launches.push_back(llvm::json::Object{
          {"kernel", launch.kernel},
          {"module", launch.module},
          {"files", stringArray(filesOfModule("3-kernel" + std::to_string(launch.module) + "."))},
          {"grid", dims(launch.shape.grid)},
          {"block", dims(launch.shape.block)},
          {"shared_memory_bytes", launch.shape.sharedMemoryBytes}});
    }
  } else if (ok && !stages.empty()) {
    // A CPU program is one call of its object's entry, which runs the
    // kernels in order.
    launches.push_back(llvm::json::Object{{"kernel", "_kiln_entry"},
                                          {"files", stringArray({stages.back()})}});
  }
  llvm::json::Array &compiles = process.manifests[dumpRoot];
  compiles.push_back(llvm::json::Object{
      {"key", keyFolder},
      {"folder", dumpFolder},
      {"target", target},
      {"target_detail", detail},
      {"entry", entry},
      {"codegen", codegen},
      {"ok", ok},
      {"stage_files", stringArray(stages)},
      {"stage_times", std::move(times)},
      {"kernels", stringArray(kernels)},
      {"launches", std::move(launches)},
      {"overrides", llvm::json::Object{{"folder", overrideFolder},
                                       {"applied", stringArray(applied)},
                                       {"ignored", std::move(ignoredFiles)}}}});
  llvm::json::Value manifest = llvm::json::Object{
      {"format", 1}, {"pid", static_cast<int64_t>(::getpid())}, {"compiles", llvm::json::Array(compiles)}};
  // Readers see the previous manifest or this one, never half of one.
  std::string name = "manifest-" + std::to_string(::getpid()) + ".json";
  fs::path path = fs::path(dumpRoot) / name, temporary = fs::path(dumpRoot) / ("." + name + ".tmp");
  std::error_code ec;
  if (!writeFile(temporary, llvm::formatv("{0:2}", manifest).str()) ||
      (fs::rename(temporary, path, ec), ec))
    process.reportOnce("cannot write the manifest " + path.string());
}

void reportUnusedOverrideFolders() { processDumps().reportUnusedOverrideFolders(); }

} // namespace kiln
