//===- kiln-tune.cpp - tune kernels into JSON tune files ------------------===//
//
// kiln-tune [--device D] [--budget-ms N] [-o FILE] (PROGRAM.mlir | --op SPEC...)
// kiln-tune show FILE | merge A B -o C | diff A B | validate FILE
// Exit 0 on success, 2 for bad usage or bad input, 1 for a runtime failure
// (validate: an entry this build would not use). docs/autotune.md.
//
//===----------------------------------------------------------------------===//
#include "kiln/BuildId.h"
#include "kiln/Lowering/TuneSpaces.h"
#include "kiln/backend/Autotune.h"
#include "kiln/backend/Backend.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace kiln;

namespace {

constexpr const char *kUsage =
    "usage: kiln-tune [--device cpu|cuda[:N]|vulkan[:N]] [--budget-ms N] [-o FILE]\n"
    "                 (PROGRAM.mlir | --op OP:SHAPE:DTYPE...)\n"
    "       kiln-tune show FILE | merge A B -o C | diff A B | validate FILE\n"
    "--op: matmul:MxNxK:DT, batch_matmul:BxMxNxK:DT, softmax:RxC:DT or an elementwise\n"
    "      binary op such as add:N:DT (DT: f32, f16, bf16, tf32, f64); repeatable\n"
    "--budget-ms: time per key (default KILN_AUTOTUNE_BUDGET_MS, else 1000)\n"
    "-o: the tune file to write (default: the cache's, KILN_CACHE_DIR/tune/DEVICE.json)\n";

struct UsageError {
  std::string message;
};

int fail(const Error &e) {
  std::fprintf(stderr, "kiln-tune: %s error: %s\n", errorKindName(e.kind), e.message.c_str());
  return e.kind == ErrorKind::InvalidArgument ? 2 : 1;
}

/// The template `e` was tuned for, in this build; null where it has none.
const TuneSpace *templateOf(const TuneEntry &e) {
  static const std::vector<TuneSpace> spaces = kernelTuneSpaces();
  for (const TuneSpace &s : spaces)
    if (s.name == e.key.templateName)
      return &s;
  return nullptr;
}

/// `file`'s entries with their values in their template's parameter order
/// (a hand-written file may name them in another), so that show, diff and
/// merge read configs by name.
TuneDatabase readOrThrow(const std::string &file) {
  auto db = TuneDatabase::read(file);
  if (!db)
    throw db.error();
  TuneDatabase ordered(db->device());
  ordered.builtBy = db->builtBy;
  for (const TuneEntry &e : db->entries()) {
    const TuneSpace *space = templateOf(e);
    std::optional<TuneEntry> own = space ? e.inOrderOf(space->params) : std::nullopt;
    ordered.insert(own ? std::move(*own) : e);
  }
  return ordered;
}

void show(const TuneDatabase &db) {
  std::printf("device %s, written by kiln %s, %zu entr%s\n", db.device().c_str(),
              db.builtBy.c_str(), db.entries().size(), db.entries().size() == 1 ? "y" : "ies");
  for (const TuneEntry &e : db.entries()) {
    std::printf("%s\n  best %s", e.key.text().c_str(), TuneSpace::configText(e.best).c_str());
    for (const TuneTiming &t : e.timings)
      std::printf("%s %s %.4f ms (spread %.4f)", &t == e.timings.data() ? ";" : ",",
                  TuneSpace::configText(t.config).c_str(), t.median, t.spread);
    std::printf("\n");
  }
}

/// Entries of `db` this build would not use, with why.
std::vector<std::string> staleEntries(const TuneDatabase &db) {
  std::vector<std::string> problems;
  for (const TuneEntry &e : db.entries()) {
    const TuneSpace *space = templateOf(e);
    std::string why;
    if (!space)
      why = "no template " + e.key.templateName + " in this build";
    else if (space->hash() != e.key.candidatesHash)
      why = "candidates hash " + e.key.candidatesHash + " is not this build's " + space->hash() +
            " (the candidate list changed: tune again)";
    else if (e.params != space->params) // readOrThrow ordered those it could
      why = "its parameters are not the template's";
    else if (!space->parseConfig(TuneSpace::configText(e.best)))
      why = "best " + TuneSpace::configText(e.best) + " is not one of the candidates";
    if (!why.empty())
      problems.push_back(e.key.text() + ": " + why);
  }
  return problems;
}

int diff(const TuneDatabase &a, const TuneDatabase &b, const std::string &nameA,
         const std::string &nameB) {
  if (a.device() != b.device())
    std::printf("device: %s | %s\n", a.device().c_str(), b.device().c_str());
  for (const TuneEntry &e : a.entries()) {
    const TuneEntry *other = b.find(e.key);
    if (!other)
      std::printf("- %s (only in %s)\n", e.key.text().c_str(), nameA.c_str());
    else if (other->best != e.best)
      std::printf("~ %s: best %s | %s\n", e.key.text().c_str(),
                  TuneSpace::configText(e.best).c_str(), TuneSpace::configText(other->best).c_str());
  }
  for (const TuneEntry &e : b.entries())
    if (!a.find(e.key))
      std::printf("+ %s (only in %s)\n", e.key.text().c_str(), nameB.c_str());
  return 0;
}

int tuneMain(const std::vector<std::string> &args) {
  std::string device = "cpu", output, program;
  std::vector<std::string> ops;
  double budget = Autotuner::instance().config().budgetMs;
  for (size_t i = 0; i < args.size(); ++i) {
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size())
        throw UsageError{args[i] + " expects a value"};
      return args[++i];
    };
    if (args[i] == "--device") device = value();
    else if (args[i] == "-o") output = value();
    else if (args[i] == "--op") ops.push_back(value());
    else if (args[i] == "--budget-ms") {
      std::string v = value();
      char *end = nullptr;
      budget = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end || !(budget > 0))
        throw UsageError{"--budget-ms expects a positive number, got '" + v + "'"};
    } else if (!args[i].empty() && args[i][0] == '-')
      throw UsageError{"unknown option " + args[i]};
    else if (program.empty()) program = args[i];
    else throw UsageError{"more than one program: " + program + ", " + args[i]};
  }
  if (program.empty() == ops.empty())
    throw UsageError{"give one PROGRAM.mlir or one or more --op"};
  // Each request: a program and its options.
  std::vector<std::pair<std::string, CompileOptions>> requests;
  if (!program.empty()) {
    std::ifstream in(program);
    if (!in)
      return fail({ErrorKind::InvalidArgument, program + ": cannot open file"});
    std::stringstream text;
    text << in.rdbuf();
    requests.push_back({text.str(), {}});
  }
  for (const std::string &op : ops) {
    auto request = tuneOpProgram(op);
    if (!request)
      return fail(request.error());
    requests.push_back(std::move(*request));
  }
  auto id = DeviceId::parse(device);
  if (!id)
    return fail(id.error());
  auto backend = Backend::create(*id);
  if (!backend)
    return fail(backend.error());
  const std::string &fingerprint = (*backend)->kernels().target().fingerprint();
  if (output.empty()) {
    const auto &dir = Autotuner::instance().config().directory;
    if (dir.empty())
      throw UsageError{"no disk cache (KILN_CACHE_DIR is empty): give -o FILE"};
    output = tuneFileOf(dir, fingerprint);
  }
  TuneDatabase tuned(fingerprint);
  tuned.builtBy = kBuildId;
  bool live = ::isatty(STDERR_FILENO);
  for (size_t r = 0; r < requests.size(); ++r) {
    auto progress = [&](const TuneProgress &p) {
      std::fprintf(stderr, "%skey %zu/%zu candidate %zu/%zu best %.4f ms, %.0f ms left: %s%s",
                   live ? "\r\033[K" : "", r + 1, requests.size(), p.candidate, p.candidates,
                   p.bestMs, p.leftMs, p.key.c_str(), live ? "" : "\n");
      std::fflush(stderr);
    };
    auto entries = Autotuner::instance().tune(**backend, requests[r].first, requests[r].second,
                                              {}, budget, progress);
    if (live)
      std::fprintf(stderr, "\n");
    if (!entries)
      return fail(entries.error());
    if (entries->empty())
      std::printf("request %zu: no tunable kernel\n", r + 1);
    for (TuneEntry &e : *entries) {
      std::printf("%s: best %s\n", e.key.text().c_str(), TuneSpace::configText(e.best).c_str());
      tuned.insert(std::move(e));
    }
  }
  if (auto ok = tuned.write(output); !ok)
    return fail(ok.error());
  std::printf("wrote %zu entr%s to %s\n", tuned.entries().size(),
              tuned.entries().size() == 1 ? "y" : "ies", output.c_str());
  return 0;
}

int runMain(const std::vector<std::string> &args) {
  std::string command = args.empty() ? "" : args[0];
  std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
  if (command == "show" || command == "validate") {
    if (rest.size() != 1)
      throw UsageError{command + " takes one FILE"};
    TuneDatabase db = readOrThrow(rest[0]);
    if (command == "show") {
      show(db);
      return 0;
    }
    auto problems = staleEntries(db);
    for (const std::string &p : problems)
      std::printf("%s: stale entry %s\n", rest[0].c_str(), p.c_str());
    std::printf("%s: %zu entr%s, %zu stale\n", rest[0].c_str(), db.entries().size(),
                db.entries().size() == 1 ? "y" : "ies", problems.size());
    return problems.empty() ? 0 : 1;
  }
  if (command == "merge") {
    if (rest.size() != 4 || rest[2] != "-o")
      throw UsageError{"merge takes A B -o C"};
    TuneDatabase a = readOrThrow(rest[0]), b = readOrThrow(rest[1]);
    if (a.device() != b.device())
      return fail({ErrorKind::InvalidArgument, rest[0] + " is for " + a.device() + ", " +
                                                   rest[1] + " for " + b.device()});
    a.merge(b); // B's entries win where both have a key
    a.builtBy = kBuildId;
    std::filesystem::remove(rest[3]);
    if (auto ok = a.write(rest[3]); !ok)
      return fail(ok.error());
    std::printf("wrote %zu entries to %s\n", a.entries().size(), rest[3].c_str());
    return 0;
  }
  if (command == "diff") {
    if (rest.size() != 2)
      throw UsageError{"diff takes A B"};
    return diff(readOrThrow(rest[0]), readOrThrow(rest[1]), rest[0], rest[1]);
  }
  if (command == "-h" || command == "--help") {
    std::printf("%s", kUsage);
    return 0;
  }
  return tuneMain(args);
}

} // namespace

int main(int argc, char **argv) {
  try {
    return runMain(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const UsageError &e) {
    std::fprintf(stderr, "kiln-tune: %s\n%s", e.message.c_str(), kUsage);
    return 2;
  } catch (const Error &e) {
    return fail(e);
  }
}
