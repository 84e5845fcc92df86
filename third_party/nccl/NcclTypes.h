//===- NcclTypes.h - the NCCL ABI kiln uses ---------------------*- C++ -*-===//
//
// The few types and constants of nccl.h that kiln's calls need, written from
// NCCL's public ABI, so that kiln builds without NCCL and never links it (it
// is loaded with dlopen: NcclSymbols.def). Values are NCCL's.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_THIRD_PARTY_NCCL_NCCLTYPES_H
#define KILN_THIRD_PARTY_NCCL_NCCLTYPES_H

#include <climits>
#include <cstddef>

namespace kiln::nccl {

using ncclComm_t = void *;
using cudaStream_t = void *; // the same handle as the driver's CUstream

/// 128 opaque bytes, passed by value to ncclCommInitRank*.
struct ncclUniqueId {
  char internal[128];
};

enum ncclResult_t : int {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
};

enum ncclDataType_t : int {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclBfloat16 = 9,  // NCCL 2.10+
  ncclFloat8e4m3 = 10, // NCCL 2.24+
  ncclFloat8e5m2 = 11, // NCCL 2.24+
};

enum ncclRedOp_t : int { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 };

/// NCCL_VERSION(major, minor, patch) for releases 2.9 and later.
constexpr int ncclVersionCode(int major, int minor, int patch) {
  return major * 10000 + minor * 100 + patch;
}

/// ncclConfig_t as of NCCL 2.17. NCCL reads `size` bytes of it and, for
/// the fields `version` predates, its own defaults; later fields (2.18+)
/// keep NCCL's defaults. Fields left at kUndefined* take NCCL's default.
constexpr int kConfigUndefinedInt = INT_MIN;
struct ncclConfig_t {
  size_t size = sizeof(ncclConfig_t);
  unsigned magic = 0xcafebeef;
  unsigned version = ncclVersionCode(2, 17, 0);
  int blocking = kConfigUndefinedInt;
  int cgaClusterSize = kConfigUndefinedInt;
  int minCTAs = kConfigUndefinedInt;
  int maxCTAs = kConfigUndefinedInt;
  const char *netName = nullptr;
};

} // namespace kiln::nccl

#endif
