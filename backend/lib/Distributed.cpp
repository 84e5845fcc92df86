//===- Distributed.cpp - collectives on kiln tensors across GPUs ---------===//
#include "kiln/backend/Distributed.h"
#include "kiln/runtime/cuda/CudaDevice.h"

#include "DeviceQueue.h"

namespace kiln {

int communicatorDeviceCount() {
  return ncclStatus().available ? CudaDevice::deviceCount() : 0;
}

std::string communicatorUnavailableReason() {
  if (!ncclStatus().available)
    return ncclStatus().unavailable;
  if (CudaDevice::deviceCount() == 0)
    return "no CUDA device: " + CudaDevice::unavailableReason();
  return "";
}

namespace {
Expected<std::chrono::milliseconds> timeoutOf(std::optional<std::chrono::milliseconds> given) {
  if (!given)
    return ncclTimeoutSetting();
  if (given->count() <= 0)
    return makeError(ErrorKind::InvalidArgument,
                     "a communicator's timeout must be positive, got " +
                         std::to_string(given->count()) + " ms");
  return *given;
}

/// The CUDA device of `backend`, which must be usable.
Expected<CudaDevice *> cudaDeviceOf(const std::shared_ptr<Backend> &backend) {
  if (!backend)
    return makeError(ErrorKind::InvalidArgument, "communicator: no backend given");
  CudaDevice *device = backend->kernels().target().cudaDevice();
  if (!device)
    return makeError(ErrorKind::Unsupported, "communicator: NCCL runs on CUDA devices, " +
                                                 backend->device().toString() + " is not one");
  if (device->poisoned())
    return makeError(ErrorKind::DevicePoisoned,
                     "communicator: " + backend->device().toString() + " is poisoned");
  return device;
}

std::string shapeText(const Tensor &t) { return describeTensorType(t.dtype(), t.shape()); }
} // namespace

Communicator::Communicator(std::shared_ptr<Backend> backend,
                           std::shared_ptr<NcclCommunicator> nccl)
    : backend(std::move(backend)), nccl(std::move(nccl)) {}

Communicator::~Communicator() = default;

Expected<std::unique_ptr<Communicator>>
Communicator::create(std::shared_ptr<Backend> backend, const NcclUniqueId &id, int rank,
                     int size, std::optional<std::chrono::milliseconds> timeout) {
  auto limit = timeoutOf(timeout);
  if (!limit)
    return std::unexpected(limit.error());
  auto device = cudaDeviceOf(backend);
  if (!device)
    return std::unexpected(device.error());
  auto nccl = NcclCommunicator::create(**device, id, rank, size, *limit);
  if (!nccl)
    return std::unexpected(nccl.error());
  return std::unique_ptr<Communicator>(new Communicator(std::move(backend), std::move(*nccl)));
}

Expected<std::vector<std::unique_ptr<Communicator>>>
Communicator::createLocal(std::vector<std::shared_ptr<Backend>> backends,
                          std::optional<std::chrono::milliseconds> timeout) {
  auto limit = timeoutOf(timeout);
  if (!limit)
    return std::unexpected(limit.error());
  std::vector<CudaDevice *> devices;
  for (size_t i = 0; i < backends.size(); ++i) {
    auto device = cudaDeviceOf(backends[i]);
    if (!device)
      return std::unexpected(device.error());
    for (size_t j = 0; j < i; ++j)
      if (backends[j]->device() == backends[i]->device())
        return makeError(ErrorKind::InvalidArgument,
                         "communicator: " + backends[i]->device().toString() +
                             " is given twice (one rank per device)");
    devices.push_back(*device);
  }
  auto ranks = NcclCommunicator::createLocal(devices, *limit);
  if (!ranks)
    return std::unexpected(ranks.error());
  std::vector<std::unique_ptr<Communicator>> result;
  for (size_t i = 0; i < backends.size(); ++i)
    result.push_back(std::unique_ptr<Communicator>(
        new Communicator(std::move(backends[i]), std::move((*ranks)[i]))));
  return result;
}

Expected<uint64_t> Communicator::operand(const Tensor &tensor, const std::string &what) {
  if (auto ok = backend->checkUsable(); !ok)
    return std::unexpected(ok.error());
  if (auto ok = backend->checkOwned(tensor, what); !ok)
    return std::unexpected(ok.error());
  return backend->collectiveAddress(tensor);
}

Expected<Tensor> Communicator::output(const char *op, DType type, std::vector<int64_t> shape) {
  auto t = backend->allocate(type, std::move(shape));
  if (!t)
    return makeError(t.error().kind, std::string(op) + ": the result: " + t.error().message);
  return t;
}

Expected<void> Communicator::checkRank(const char *op, const char *what, int rank) const {
  if (rank < 0 || rank >= size())
    return makeError(ErrorKind::InvalidArgument,
                     std::string(op) + ": " + what + " " + std::to_string(rank) +
                         " is not a rank of this communicator (0.." +
                         std::to_string(size() - 1) + ")");
  return {};
}

std::vector<std::string> *Communicator::followCapture() {
  const void *running = backend->runningCapture();
  nccl->setCapturing(running != nullptr);
  if (!running)
    return nullptr;
  if (running != capture) {
    // A new capture: its graph numbers and watches these ops on each replay.
    capture = running;
    captured = std::make_shared<std::vector<std::string>>();
    backend->afterEachReplay(
        [weak = std::weak_ptr<NcclCommunicator>(nccl), ops = captured]() -> Expected<void> {
          auto comm = weak.lock();
          if (!comm)
            return makeError(ErrorKind::InvalidArgument,
                             "graph_replay: the graph's NCCL communicator is destroyed (its "
                             "collectives were replayed unwatched)");
          return comm->replayed(*ops);
        });
  }
  return captured.get();
}

// Every collective: operands checked, then NCCL; during a capture the op is
// recorded for the graph once NCCL took it.
#define KILN_COLLECTIVE(op, call)                                              \
  do {                                                                         \
    std::vector<std::string> *recording = followCapture();                     \
    if (auto ok = (call); !ok)                                                 \
      return std::unexpected(ok.error());                                      \
    if (recording)                                                             \
      recording->push_back(op);                                                \
  } while (false)

Expected<void> Communicator::allReduceInPlace(const Tensor &x, ReduceOp op) {
  auto address = operand(x, "all_reduce: the tensor");
  if (!address)
    return std::unexpected(address.error());
  KILN_COLLECTIVE("all_reduce",
                  nccl->allReduce(*address, *address, x.numElements(), x.dtype(), op));
  return {};
}

Expected<Tensor> Communicator::allReduce(const Tensor &x, ReduceOp op) {
  auto in = operand(x, "all_reduce: the tensor");
  if (!in)
    return std::unexpected(in.error());
  // Checked before allocating, so that an unsupported dtype says so.
  if (auto type = ncclReductionType(x.dtype(), op, ncclStatus().version); !type)
    return makeError(type.error().kind, "all_reduce: " + type.error().message);
  auto out = output("all_reduce", x.dtype(), x.shape());
  if (!out)
    return out;
  KILN_COLLECTIVE("all_reduce", nccl->allReduce(*in, backend->collectiveAddress(*out),
                                                x.numElements(), x.dtype(), op));
  return out;
}

Expected<Tensor> Communicator::allGather(const Tensor &x) {
  auto in = operand(x, "all_gather: the tensor");
  if (!in)
    return std::unexpected(in.error());
  std::vector<int64_t> shape = x.shape();
  if (shape.empty())
    shape = {size()};
  else
    shape[0] *= size();
  auto out = output("all_gather", x.dtype(), std::move(shape));
  if (!out)
    return out;
  KILN_COLLECTIVE("all_gather", nccl->allGather(*in, backend->collectiveAddress(*out),
                                                x.numElements(), x.dtype()));
  return out;
}

Expected<Tensor> Communicator::reduceScatter(const Tensor &x, ReduceOp op) {
  auto in = operand(x, "reduce_scatter: the tensor");
  if (!in)
    return std::unexpected(in.error());
  if (x.shape().empty() || x.shape()[0] % size() != 0)
    return makeError(ErrorKind::InvalidArgument,
                     "reduce_scatter: " + shapeText(x) + " does not split along dim 0 into " +
                         std::to_string(size()) + " equal parts (one per rank)");
  if (auto type = ncclReductionType(x.dtype(), op, ncclStatus().version); !type)
    return makeError(type.error().kind, "reduce_scatter: " + type.error().message);
  std::vector<int64_t> shape = x.shape();
  shape[0] /= size();
  auto out = output("reduce_scatter", x.dtype(), std::move(shape));
  if (!out)
    return out;
  KILN_COLLECTIVE("reduce_scatter",
                  nccl->reduceScatter(*in, backend->collectiveAddress(*out), out->numElements(),
                                      x.dtype(), op));
  return out;
}

Expected<Tensor> Communicator::broadcast(const Tensor &x, int root) {
  if (auto ok = checkRank("broadcast", "root", root); !ok)
    return std::unexpected(ok.error());
  auto in = operand(x, "broadcast: the tensor");
  if (!in)
    return std::unexpected(in.error());
  auto out = output("broadcast", x.dtype(), x.shape());
  if (!out)
    return out;
  KILN_COLLECTIVE("broadcast", nccl->broadcast(*in, backend->collectiveAddress(*out),
                                               x.numElements(), x.dtype(), root));
  return out;
}

Expected<void> Communicator::send(const Tensor &x, int peer) {
  if (auto ok = checkRank("send", "peer", peer); !ok)
    return ok;
  auto in = operand(x, "send: the tensor");
  if (!in)
    return std::unexpected(in.error());
  KILN_COLLECTIVE("send", nccl->send(*in, x.numElements(), x.dtype(), peer));
  return {};
}

Expected<Tensor> Communicator::recv(DType type, const std::vector<int64_t> &shape, int peer) {
  if (auto ok = checkRank("recv", "peer", peer); !ok)
    return std::unexpected(ok.error());
  if (auto ok = backend->checkUsable(); !ok)
    return std::unexpected(ok.error());
  auto out = output("recv", type, shape);
  if (!out)
    return out;
  KILN_COLLECTIVE("recv", nccl->recv(backend->collectiveAddress(*out), out->numElements(),
                                     type, peer));
  return out;
}

#undef KILN_COLLECTIVE

Expected<void> Communicator::group(const std::function<Expected<void>()> &calls) {
  return NcclCommunicator::group(calls);
}

} // namespace kiln
