//===- RunTimeSizes.cpp - one run's sizes from its inputs -----------------===//
#include "RunTimeSizes.h"

#include <map>

namespace kiln {

Expected<RunTimeSizes> bindRunTimeSizes(const std::vector<TensorSignature> &inputs,
                                        const std::vector<TensorSignature> &outputs,
                                        const std::vector<std::vector<int64_t>> &shapes) {
  struct Binding {
    int64_t size;
    size_t input, dim;
  };
  std::map<int64_t, Binding> bound; // run-time size name -> where it was first seen
  RunTimeSizes sizes;
  auto dimName = [](size_t input, size_t dim) {
    return "input #" + std::to_string(input) + " dim " + std::to_string(dim);
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<int64_t> &want = inputs[i].shape, &got = shapes[i];
    auto differs = [&](std::string where) {
      return makeError(ErrorKind::InvalidArgument,
                       "input #" + std::to_string(i) + " is " +
                           describeTensorType(inputs[i].dtype, got) + ", the program expects " +
                           inputs[i].describe() + where);
    };
    if (got.size() != want.size())
      return differs("");
    for (size_t d = 0; d < want.size(); ++d) {
      if (want[d] >= 0 && got[d] != want[d])
        return differs(" (dim " + std::to_string(d) + ")");
      if (want[d] < 0) {
        auto [it, fresh] = bound.try_emplace(want[d], Binding{got[d], i, d});
        if (!fresh && it->second.size != got[d])
          return makeError(ErrorKind::InvalidArgument,
                           dimName(i, d) + " is " + std::to_string(got[d]) + " but " +
                               dimName(it->second.input, it->second.dim) + " is " +
                               std::to_string(it->second.size) +
                               ": the program needs them equal (one run-time size)");
      }
      sizes.dims.push_back(got[d]);
    }
  }
  for (const TensorSignature &out : outputs) {
    std::vector<int64_t> shape;
    for (int64_t d : out.shape) {
      auto it = bound.find(d);
      if (d < 0 && it == bound.end()) // the compiler and the disk cache rule it out
        return makeError(ErrorKind::InvalidArgument,
                         "an output of the program has a run-time size no input gives");
      shape.push_back(d >= 0 ? d : it->second.size);
    }
    sizes.dims.insert(sizes.dims.end(), shape.begin(), shape.end());
    sizes.outputShapes.push_back(std::move(shape));
  }
  return sizes;
}

} // namespace kiln
