//===- CpuDevice.cpp - running native kernels on the host ----------------===//
#include "kiln/runtime/CpuDevice.h"

#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"

namespace kiln {

CpuDevice::CpuDevice(std::unique_ptr<llvm::orc::LLJIT> jit,
                     std::string fingerprint)
    : jit(std::move(jit)), fingerprint_(std::move(fingerprint)) {}

// The JIT'd code is never unmapped: a program's parallel loops run as tasks
// of MLIR's process-wide async runtime, whose workers may still be finishing
// a task's epilogue (reference counting, in JIT'd code) after the awaiting
// caller has resumed; freeing the code then crashed those workers at random
// (seen as SIGSEGV at exit under load). The runtime joins its workers at
// process exit, so the JIT lives until then.
CpuDevice::~CpuDevice() { (void)jit.release(); }

Expected<std::unique_ptr<CpuDevice>> CpuDevice::create() {
  static const bool initialised = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)initialised;
  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit)
    return makeError(ErrorKind::Unsupported,
                     "cpu: cannot create the JIT: " + llvm::toString(jit.takeError()));
  std::string fingerprint = "cpu-" + llvm::sys::getProcessTriple() + "-" +
                            llvm::sys::getHostCPUName().str();
  return std::unique_ptr<CpuDevice>(
      new CpuDevice(std::move(*jit), std::move(fingerprint)));
}

Expected<std::shared_ptr<CpuExecutable>> CpuDevice::load(std::string_view object) {
  std::lock_guard lock(mutex);
  auto &es = jit->getExecutionSession();
  auto lib = es.createJITDylib("kiln" + std::to_string(nextLibrary++));
  if (!lib)
    return makeError(ErrorKind::Launch, "cpu: " + llvm::toString(lib.takeError()));
  // libc, libm and the MLIR runtime support libraries come from the process.
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      jit->getDataLayout().getGlobalPrefix());
  if (!process)
    return makeError(ErrorKind::Launch, "cpu: " + llvm::toString(process.takeError()));
  lib->addGenerator(std::move(*process));
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(
      llvm::StringRef(object.data(), object.size()), "kiln-kernel.o");
  if (auto err = jit->addObjectFile(*lib, std::move(buffer)))
    return makeError(ErrorKind::Launch,
                     "cpu: cannot load kernel object: " + llvm::toString(std::move(err)));
  auto entry = jit->lookup(*lib, "_kiln_entry");
  if (!entry)
    return makeError(ErrorKind::Launch, "cpu: kernel object has no entry: " +
                                            llvm::toString(entry.takeError()));
  return std::make_shared<CpuExecutable>(
      entry->toPtr<CpuExecutable::EntryFn>());
}

} // namespace kiln
