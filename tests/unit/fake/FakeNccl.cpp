//===- FakeNccl.cpp - an NCCL whose ranks join only when told -------------===//
//
// For tests/unit/FakeNcclTest.cpp: a communicator of more than one rank
// stays in ncclInProgress until fakeNcclJoin(1); collectives are accepted
// and do nothing; calls are counted (fakeNcclCount).
//
//===----------------------------------------------------------------------===//
#include "nccl/NcclTypes.h"

#include <atomic>
#include <random>
#include <string_view>

using namespace kiln::nccl;

namespace {
std::atomic<bool> joined{false};
std::atomic<int> aborts{0}, groupStarts{0}, groupEnds{0}, collectives{0};
struct FakeComm {
  int ranks;
};
} // namespace

extern "C" {
void fakeNcclJoin(int on) { joined = on != 0; }
int fakeNcclCount(const char *what) {
  std::string_view w(what);
  return w == "abort" ? aborts.load()
         : w == "groupStart" ? groupStarts.load()
         : w == "groupEnd" ? groupEnds.load()
                           : collectives.load();
}

ncclResult_t ncclGetVersion(int *version) {
  *version = 29901; // no real release: tests recognise the fake by it
  return ncclSuccess;
}
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  static std::random_device random; // a fresh board name per id, as NCCL's
  for (char &c : id->internal)
    c = static_cast<char>(random());
  return ncclSuccess;
}
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int ranks, ncclUniqueId, int,
                                    ncclConfig_t *config) {
  if (!config || config->magic != 0xcafebeef || config->blocking != 0)
    return ncclInvalidArgument; // kiln's communicators are non-blocking
  *comm = new FakeComm{ranks};
  return ncclInProgress;
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *state) {
  *state = static_cast<FakeComm *>(comm)->ranks == 1 || joined ? ncclSuccess : ncclInProgress;
  return ncclSuccess;
}
ncclResult_t ncclCommAbort(ncclComm_t comm) {
  ++aborts;
  delete static_cast<FakeComm *>(comm);
  return ncclSuccess;
}
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  delete static_cast<FakeComm *>(comm);
  return ncclSuccess;
}
ncclResult_t ncclGroupStart() {
  ++groupStarts;
  return ncclSuccess;
}
ncclResult_t ncclGroupEnd() {
  ++groupEnds;
  return ncclSuccess;
}
ncclResult_t ncclAllReduce(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                           cudaStream_t) {
  ++collectives;
  return ncclSuccess;
}
ncclResult_t ncclAllGather(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
                           cudaStream_t) {
  ++collectives;
  return ncclSuccess;
}
ncclResult_t ncclSend(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) {
  ++collectives;
  return ncclSuccess;
}
ncclResult_t ncclRecv(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) {
  ++collectives;
  return ncclSuccess;
}
}
