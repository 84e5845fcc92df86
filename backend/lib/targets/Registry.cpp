//===- Registry.cpp - the kinds of device kiln runs on -------------------===//
//
// The one list of targets. Adding a kind of device: a DeviceType value, a
// folder targets/<kind>/ defining its TargetKind, and a line here.
//
//===----------------------------------------------------------------------===//
#include "kiln/backend/Target.h"

#include <cstdlib>

namespace kiln {
namespace targets {
extern const TargetKind cpu, cuda, vulkan;
} // namespace targets

namespace {
const TargetKind *const kinds[] = {&targets::cpu, &targets::cuda, &targets::vulkan};
} // namespace

std::span<const TargetKind *const> targetKinds() { return kinds; }

const TargetKind &targetKind(DeviceType type) {
  for (const TargetKind *kind : kinds)
    if (kind->type == type)
      return *kind;
  // A DeviceType value without a kind here: a registry line is missing.
  std::abort();
}

} // namespace kiln
