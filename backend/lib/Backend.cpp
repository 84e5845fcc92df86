//===- Backend.cpp - the backend frameworks call, over every device ------===//
#include "kiln/backend/Backend.h"
#include "kiln/backend/Autotune.h"
#include "kiln/runtime/common/Switch.h"

#include "DeviceQueue.h"
#include "RunTimeSizes.h"

#include <mutex>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace kiln {

/// A tensor's buffer: a pool allocation, a persistent one, or memory of
/// another library's that `external` keeps alive.
struct TensorStorage {
  std::shared_ptr<DeviceQueue> queue;
  MemoryPool::Allocation allocation;
  bool persistent = false;
  std::shared_ptr<void> external;
  ~TensorStorage() {
    if (external)
      return;
    if (persistent)
      queue->releasePersistent(allocation.address, allocation.bytes);
    else
      queue->pool().free(allocation);
  }
};

struct Graph::Recording {
  struct Launch {
    std::shared_ptr<Program> program;
    std::vector<uint64_t> buffers;
    LaunchSizes sizes; // the run-time sizes it was captured with
  };
  std::shared_ptr<DeviceQueue> queue;
  std::vector<Launch> launches;
  std::vector<std::shared_ptr<TensorStorage>> buffers; // kept where captured
  std::shared_ptr<void> deviceGraph;                   // CUDA graph, if any
  std::vector<std::function<Expected<void>()>> afterReplay;
};

size_t Graph::launchCount() const { return recording ? recording->launches.size() : 0; }

int64_t Tensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

namespace {
Error notWhileCapturing(const char *what) {
  return {ErrorKind::InvalidArgument,
          std::string(what) + " is not allowed while a graph is being captured "
                              "(graph_stop_capture first)"};
}

/// A negative dim is `?` (a size known at run time).
std::string tensorType(DType type, const std::vector<int64_t> &shape) {
  std::string text = "tensor<";
  for (int64_t d : shape)
    text += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
  return text + std::string(dtypeName(type)) + ">";
}

/// `value` as an MLIR f64 literal: its bits in hex, exact for every double
/// (decimal "1e+20" is no MLIR float literal, nor are "inf" and "nan").
std::string floatLiteral(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%016llX",
                static_cast<unsigned long long>(std::bit_cast<uint64_t>(value)));
  return text;
}

/// splitmix64: a well-mixed seed per draw from (seed, draw number).
int64_t mixSeed(uint64_t seed, uint64_t draw) {
  uint64_t z = seed + (draw + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<int64_t>((z ^ (z >> 31)) >> 1);
}
} // namespace

int Backend::deviceCount(DeviceType type) { return targetKind(type).deviceCount(); }

Expected<std::unique_ptr<Backend>> Backend::create(DeviceId device) {
  auto engine = Engine::create(device);
  if (!engine)
    return std::unexpected(engine.error());
  std::shared_ptr<Engine> shared = std::move(*engine);
  auto queue = shared->target().makeQueue(shared);
  if (!queue)
    return std::unexpected(queue.error());
  return std::unique_ptr<Backend>(new Backend(std::move(*queue)));
}

Expected<std::shared_ptr<Backend>> Backend::shared(DeviceId device) {
  static std::mutex mutex;
  // Never destroyed: devices would otherwise be torn down during static
  // destruction, after the drivers' own exit handlers.
  // Keyed by kind and index: every op looks its backend up here.
  static auto *backends = new std::map<std::pair<DeviceType, int>, std::shared_ptr<Backend>>;
  std::lock_guard lock(mutex);
  std::pair key{device.type, device.index};
  if (auto it = backends->find(key); it != backends->end())
    return it->second;
  auto created = create(device);
  if (!created)
    return std::unexpected(created.error());
  return (*backends)[key] = std::move(*created);
}

namespace {
/// A one-op program's verifier error as the op's own, as inferred ops
/// report theirs ("kiln.reshape: 'kiln.reshape' op cannot reshape ..."):
/// without the position in a program the caller never wrote, and the note
/// quoting the op in generic form.
Error asOpError(std::string_view op, Error error) {
  std::string &message = error.message;
  size_t at = message.find(": error: ");
  if (error.kind != ErrorKind::InvalidArgument || !message.starts_with("program:") ||
      at == std::string::npos)
    return error;
  std::string text = message.substr(at + 9);
  message = std::string(op) + ": " + text.substr(0, text.find("\n  note:"));
  return error;
}

/// KILN_AUTO_DYNAMIC=0 turns automatic dynamic shapes off in new backends.
bool autoDynamicByDefault() {
  static const bool on = switchSetting("KILN_AUTO_DYNAMIC", true);
  return on;
}
} // namespace

Backend::Backend(std::shared_ptr<DeviceQueue> queue)
    : queue(std::move(queue)), autoDynamicShapes(autoDynamicByDefault()) {}
Backend::~Backend() = default;

const DeviceId &Backend::device() const { return queue->kernels().device(); }
Engine &Backend::kernels() { return queue->kernels(); }

std::string Backend::name() const {
  return device().toString() + " (" + queue->kernels().target().model() + ")";
}

void Backend::seed(uint64_t value) {
  seedValue = value;
  randomDraws = 0;
}

Expected<void> Backend::checkUsable() const {
  if (queue->poisoned())
    return makeError(ErrorKind::DevicePoisoned,
                     device().toString() + " is poisoned by an earlier fault; "
                                           "create a new backend for it");
  return {};
}

Expected<void> Backend::checkOwned(const Tensor &tensor, std::string_view what,
                                   std::optional<size_t> index) const {
  auto named = [&] {
    return std::string(what) + (index ? " #" + std::to_string(*index) : "");
  };
  if (!tensor.valid())
    return makeError(ErrorKind::InvalidArgument, named() + " is an empty tensor (no buffer)");
  if (tensor.device() != device())
    return makeError(ErrorKind::InvalidArgument, named() + " lives on " +
                                                     tensor.device().toString() +
                                                     "; this backend runs on " +
                                                     device().toString());
  // Addresses mean something only in the memory of the backend that made
  // them (Vulkan: its own VkDevice and pages; CUDA: its own pool and
  // stream; the CPU: its own pool): another backend of the same device
  // would read or write its own buffer at that address.
  if (tensor.storage->queue != queue)
    return makeError(ErrorKind::InvalidArgument,
                     named() + " belongs to another backend of " + device().toString() +
                         " (one that is destroyed, or another instance); a tensor is used "
                         "by the backend that made it");
  return {};
}

Expected<void> Backend::checkInputs(const std::vector<Tensor> &inputs) const {
  if (auto ok = checkUsable(); !ok)
    return ok;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (auto ok = checkOwned(inputs[i], "input", i); !ok)
      return ok;
  return {};
}

Expected<void> Backend::sync() {
  if (capturing)
    return std::unexpected(notWhileCapturing("sync"));
  return queue->sync();
}

Expected<void> Backend::flush() {
  if (auto ok = checkUsable(); !ok)
    return ok;
  return queue->flush();
}

Expected<Tensor> Backend::allocate(DType type, std::vector<int64_t> shape) {
  if (auto ok = checkUsable(); !ok)
    return std::unexpected(ok.error());
  auto bytes = tensorBytes(type, shape);
  if (!bytes)
    return std::unexpected(bytes.error());
  Tensor t;
  t.type = type;
  t.dims = std::move(shape);
  t.deviceId = device();
  auto storage = std::make_shared<TensorStorage>();
  storage->queue = queue;
  if (persistentAllocations) {
    auto address = queue->allocatePersistent(*bytes);
    if (!address)
      return std::unexpected(address.error());
    storage->allocation = {*address, *bytes};
    storage->persistent = true;
  } else {
    auto allocation = queue->pool().allocate(*bytes);
    if (!allocation)
      return std::unexpected(allocation.error());
    storage->allocation = *allocation;
  }
  t.storage = std::move(storage);
  return t;
}

namespace {
/// `host`'s bytes must be what its shape says (its fields are public).
Expected<void> checkHostData(const HostTensor &host, const char *what) {
  auto bytes = tensorBytes(host.dtype, host.shape);
  if (!bytes)
    return makeError(ErrorKind::InvalidArgument, std::string(what) + ": " + bytes.error().message);
  if (*bytes != host.data.size())
    return makeError(ErrorKind::InvalidArgument,
                     std::string(what) + ": " + tensorType(host.dtype, host.shape) + " needs " +
                         std::to_string(*bytes) + " bytes, the data has " +
                         std::to_string(host.data.size()));
  return {};
}
} // namespace

Expected<Tensor> Backend::upload(const HostTensor &host) {
  if (capturing)
    return std::unexpected(notWhileCapturing("upload"));
  if (auto ok = checkHostData(host, "upload"); !ok)
    return std::unexpected(ok.error());
  auto t = allocate(host.dtype, host.shape);
  if (!t)
    return t;
  if (auto ok = queue->write(t->storage->allocation.address, host.data.data(), t->bytes()); !ok)
    return std::unexpected(ok.error());
  return t;
}

Expected<void> Backend::write(const Tensor &tensor, const HostTensor &host) {
  if (capturing)
    return std::unexpected(notWhileCapturing("write"));
  if (auto ok = checkUsable(); !ok)
    return ok;
  if (auto ok = checkOwned(tensor, "write: the tensor"); !ok)
    return ok;
  if (auto ok = checkHostData(host, "write"); !ok)
    return ok;
  if (tensor.dtype() != host.dtype || tensor.shape() != host.shape)
    return makeError(ErrorKind::InvalidArgument,
                     "write: the tensor is " + tensorType(tensor.dtype(), tensor.shape()) +
                         ", the data " + tensorType(host.dtype, host.shape));
  return queue->write(tensor.storage->allocation.address, host.data.data(), tensor.bytes());
}

Expected<HostTensor> Backend::download(const Tensor &tensor) {
  if (capturing)
    return std::unexpected(notWhileCapturing("download"));
  if (auto ok = checkUsable(); !ok)
    return std::unexpected(ok.error());
  if (auto ok = checkOwned(tensor, "download: the tensor"); !ok)
    return std::unexpected(ok.error());
  HostTensor host(tensor.dtype(), tensor.shape());
  if (auto ok = queue->read(host.data.data(), tensor.storage->allocation.address, tensor.bytes());
      !ok)
    return std::unexpected(ok.error());
  return host;
}

Expected<Tensor> Backend::adopt(uint64_t address, DType type, std::vector<int64_t> shape,
                                std::shared_ptr<void> owner) {
  if (auto ok = checkUsable(); !ok)
    return std::unexpected(ok.error());
  if (!queue->kernels().target().sharesAddresses())
    return makeError(ErrorKind::Unsupported,
                     "adopt: " + device().toString() + " cannot use memory it did not allocate");
  auto bytes = tensorBytes(type, shape);
  if (!bytes)
    return std::unexpected(bytes.error());
  if (address == 0 && *bytes != 0)
    return makeError(ErrorKind::InvalidArgument,
                     "adopt: the data of " + tensorType(type, shape) + " is a null pointer");
  if (address % 16 != 0)
    return makeError(ErrorKind::InvalidArgument,
                     "adopt: the data of " + tensorType(type, shape) +
                         " is not 16-byte aligned (address % 16 = " +
                         std::to_string(address % 16) + ")");
  Tensor t;
  t.type = type;
  t.dims = std::move(shape);
  t.deviceId = device();
  auto storage = std::make_shared<TensorStorage>();
  storage->queue = queue;
  storage->allocation = {address, *bytes};
  // A non-null keeper even for an owner-less adoption: the storage is external.
  storage->external = owner ? std::move(owner) : std::make_shared<int>(0);
  t.storage = std::move(storage);
  return t;
}

Expected<uint64_t> Backend::dataAddress(const Tensor &tensor) {
  if (auto ok = checkOwned(tensor, "data_address: the tensor"); !ok)
    return std::unexpected(ok.error());
  if (!queue->kernels().target().sharesAddresses())
    return makeError(ErrorKind::Unsupported,
                     "data_address: " + device().toString() +
                         " memory has no address another library can use");
  if (auto ok = sync(); !ok)
    return std::unexpected(ok.error());
  return tensor.storage->allocation.address;
}

Expected<std::vector<Tensor>> Backend::run(std::string_view source,
                                           const std::vector<Tensor> &inputs,
                                           const CompileOptions &options) {
  if (auto ok = checkInputs(inputs); !ok)
    return std::unexpected(ok.error());
  auto program = compile(source, options);
  if (!program)
    return std::unexpected(program.error());
  return launch(*program, inputs);
}

Expected<std::shared_ptr<Program>> Backend::compile(std::string_view source,
                                                    const CompileOptions &options) {
  auto program = queue->kernels().compile(source, options);
  Autotuner &tuner = Autotuner::instance();
  // The tuner's own compiles force a config (options.tuned): never nested.
  if (!program || !options.tuned.empty() || tuner.config().mode != AutotuneMode::On)
    return program;
  const std::string &device = queue->kernels().target().fingerprint();
  auto keys = tuner.untuned(device, (*program)->tuneKeys());
  if (keys.empty())
    return program;
  auto entries = tuner.tune(*this, source, options, keys, tuner.config().budgetMs);
  if (!entries) {
    std::fprintf(stderr, "kiln: autotune: %s (defaults are used)\n",
                 entries.error().message.c_str());
    return program;
  }
  for (const TuneEntry &entry : *entries)
    if (auto ok = tuner.record(device, entry); !ok)
      std::fprintf(stderr, "kiln: autotune: %s\n", ok.error().message.c_str());
  return queue->kernels().compile(source, options);
}

Expected<std::vector<Tensor>> Backend::launch(const std::shared_ptr<Program> &program,
                                              const std::vector<Tensor> &inputs) {
  const auto &want = program->inputs();
  if (inputs.size() != want.size())
    return makeError(ErrorKind::InvalidArgument,
                     "program takes " + std::to_string(want.size()) + " inputs, got " +
                         std::to_string(inputs.size()));
  bool dynamic = program->hasDynamicDims();
  std::vector<uint64_t> buffers;
  buffers.reserve(inputs.size() + program->outputs().size() + program->temporaryBytes().size());
  // Buffers a capture keeps; temporaries are also kept until the launch is queued.
  std::vector<std::shared_ptr<TensorStorage>> used;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor &in = inputs[i];
    if (in.dtype() != want[i].dtype || (!dynamic && in.shape() != want[i].shape))
      return makeError(ErrorKind::InvalidArgument,
                       "input #" + std::to_string(i) + " is " +
                           tensorType(in.dtype(), in.shape()) + ", the program expects " +
                           want[i].describe());
    buffers.push_back(in.storage->allocation.address);
    if (capturing)
      used.push_back(in.storage);
  }
  // A program with `?` dims: its sizes bound from the inputs' shapes
  // (mismatches name the dims), and its GPU plan at them.
  LaunchSizes sizes;
  std::vector<std::vector<int64_t>> outputShapes;
  if (dynamic) {
    std::vector<std::vector<int64_t>> shapes;
    for (const Tensor &in : inputs)
      shapes.push_back(in.shape());
    auto bound = bindRunTimeSizes(want, program->outputs(), program->sizeRules(), shapes);
    if (!bound)
      return std::unexpected(bound.error());
    auto sized = queue->sizesOf(*program, std::move(bound->dims));
    if (!sized)
      return std::unexpected(sized.error());
    sizes = std::move(*sized);
    outputShapes = std::move(bound->outputShapes);
  }
  std::vector<Tensor> outputs;
  outputs.reserve(program->outputs().size());
  for (size_t o = 0; o < program->outputs().size(); ++o) {
    const TensorSignature &s = program->outputs()[o];
    auto out = allocate(s.dtype, dynamic ? outputShapes[o] : s.shape);
    if (!out)
      return std::unexpected(out.error());
    buffers.push_back(out->storage->allocation.address);
    if (capturing)
      used.push_back(out->storage);
    outputs.push_back(std::move(*out));
  }
  // Intermediate buffers live as long as the launch needs them: on the
  // stream, a later allocation reusing them runs after it; in a capture,
  // the graph keeps them.
  for (size_t bytes : sizes.plan ? temporaryBytesOf(*sizes.plan) : program->temporaryBytes()) {
    auto temporary = allocate(DType::U8, {static_cast<int64_t>(bytes)});
    if (!temporary)
      return std::unexpected(temporary.error());
    buffers.push_back(temporary->storage->allocation.address);
    used.push_back(temporary->storage);
  }
  if (capturing) {
    capturing->launches.push_back({program, buffers, sizes});
    capturing->buffers.insert(capturing->buffers.end(), used.begin(), used.end());
    if (!queue->capturesNatively())
      return outputs; // the recorded list runs on replay
  }
  if (auto ok = queue->launch(*program, buffers, sizes); !ok)
    return std::unexpected(ok.error());
  return outputs;
}

Expected<Tensor> Backend::randomKey() {
  HostTensor key(DType::I64, {});
  *key.as<int64_t>() = mixSeed(seedValue, randomDraws++);
  return upload(key);
}

Expected<Tensor> Backend::apply(std::string_view op, const std::vector<Tensor> &givenInputs,
                                DType resultType, const std::vector<int64_t> &resultShape,
                                std::string_view attrs) {
  // A random op given no seed operand draws its key from the backend's seed.
  std::vector<Tensor> drawn;
  bool random = op == "kiln.random_uniform" || op == "kiln.random_normal";
  if (random && givenInputs.empty()) {
    auto key = randomKey();
    if (!key)
      return key;
    drawn.push_back(std::move(*key));
  }
  const std::vector<Tensor> &inputs = drawn.empty() ? givenInputs : drawn;
  if (auto ok = checkInputs(inputs); !ok)
    return std::unexpected(ok.error());
  if (auto bytes = tensorBytes(resultType, resultShape); !bytes)
    return makeError(ErrorKind::InvalidArgument,
                     std::string(op) + ": the result " + bytes.error().message);
  // Eager ops repeat: the program of (op, attrs, types) is looked up before
  // any program text is built, by a key that allocates nothing (OpKey.h).
  OpKey key;
  key.appendText(op);
  key.appendText(attrs);
  key.appendType(resultType, resultShape);
  for (const Tensor &in : inputs)
    key.appendType(in.dtype(), in.shape());
  if (auto it = appliedOps.find(key.view()); it != appliedOps.end()) {
    auto results = launch(it->second, inputs);
    if (!results)
      return std::unexpected(results.error());
    return std::move(results->front());
  }
  auto program = appliedProgram(key, op, inputs, resultType, resultShape, attrs);
  if (!program)
    return std::unexpected(program.error());
  auto results = launch(*program, inputs);
  if (!results)
    return std::unexpected(results.error());
  // A dynamic kernel computes its result's shape: it must be the one asked for.
  if (results->front().shape() != resultShape)
    return makeError(ErrorKind::InvalidArgument,
                     std::string(op) + ": the result is " +
                         tensorType(results->front().dtype(), results->front().shape()) +
                         ", not " + tensorType(resultType, resultShape));
  return std::move(results->front());
}

namespace {
/// The program of one op: the generic op form, which reads the same for
/// every op of the dialect. `shapes`: the result's, then each input's (a
/// negative dim is `?`).
std::string appliedProgramText(std::string_view op, std::string_view attrs,
                               const std::vector<DType> &types,
                               const std::vector<std::vector<int64_t>> &shapes) {
  std::string result = tensorType(types[0], shapes[0]);
  std::ostringstream text, operandTypes, operands;
  text << "func.func @main(";
  for (size_t i = 1; i < types.size(); ++i) {
    std::string type = tensorType(types[i], shapes[i]);
    text << (i > 1 ? ", " : "") << "%a" << i - 1 << ": " << type;
    operands << (i > 1 ? ", " : "") << "%a" << i - 1;
    operandTypes << (i > 1 ? ", " : "") << type;
  }
  text << ") -> " << result << " {\n  %r = \"" << op << "\"(" << operands.str() << ")";
  if (!attrs.empty())
    text << " {" << attrs << "}";
  text << " : (" << operandTypes.str() << ") -> " << result << "\n  return %r : " << result
       << "\n}\n";
  return text.str();
}
} // namespace

Expected<std::shared_ptr<Program>>
Backend::appliedProgram(const OpKey &key, std::string_view op, const std::vector<Tensor> &inputs,
                        DType resultType, const std::vector<int64_t> &resultShape,
                        std::string_view attrs) {
  std::vector<DType> types{resultType};
  std::vector<std::vector<int64_t>> shapes{resultShape};
  for (const Tensor &in : inputs) {
    types.push_back(in.dtype());
    shapes.push_back(in.shape());
  }
  // Automatic dynamic: a signature whose dims keep changing takes one
  // kernel dynamic in them; where the op has no dynamic kernel (outside
  // lowersWithDynamicDims), the static one, from then on.
  if (AppliedSignature *signature = autoDynamicSignature(op, attrs, types, shapes)) {
    std::vector<bool> dynamicDims;
    std::vector<std::vector<int64_t>> dynamicShapes = shapes;
    bool dynamicInput = false;
    // Inputs first: a result dim is `?` only with some input's, from which
    // its size comes (a result size that changed alone is a wrong result
    // type, which the static verifier names).
    for (size_t t = shapes.size(), flat = signature->changed.size(); t-- > 0;)
      for (size_t d = shapes[t].size(); d-- > 0;) {
        // Sizes 1 stay static, as torch.compile's: they broadcast, a `?` never does.
        bool dynamic = signature->changed[--flat] && shapes[t][d] != 1 &&
                       (t > 0 || dynamicInput);
        dynamicInput |= dynamic && t > 0;
        dynamicDims.push_back(dynamic);
        dynamicShapes[t][d] = dynamic ? -1 : shapes[t][d];
      }
    if (dynamicInput) {
      if (auto it = signature->programs.find(dynamicDims); it != signature->programs.end())
        return it->second;
      auto program = compile(appliedProgramText(op, attrs, types, dynamicShapes));
      if (program)
        return signature->programs[dynamicDims] = *program;
      signature->dynamicCompiles = false;
    }
  }
  auto program = compile(appliedProgramText(op, attrs, types, shapes));
  if (!program)
    return std::unexpected(asOpError(op, std::move(program.error())));
  appliedOps.emplace(key.view(), *program);
  return program;
}

Backend::AppliedSignature *
Backend::autoDynamicSignature(std::string_view op, std::string_view attrs,
                              const std::vector<DType> &types,
                              const std::vector<std::vector<int64_t>> &shapes) {
  if (!autoDynamicShapes)
    return nullptr;
  std::string key = std::string(op) + '|' + std::string(attrs) + '|';
  std::vector<int64_t> dims;
  for (size_t t = 0; t < types.size(); ++t) {
    key += static_cast<char>('A' + static_cast<int>(types[t]));
    key += std::to_string(shapes[t].size()) + ';';
    dims.insert(dims.end(), shapes[t].begin(), shapes[t].end());
  }
  auto [it, fresh] = appliedSignatures.try_emplace(std::move(key));
  AppliedSignature &signature = it->second;
  if (fresh) {
    signature.firstDims = std::move(dims);
    signature.changed.assign(signature.firstDims.size(), false);
    return nullptr;
  }
  // Threshold 2, as torch.compile's: the second size of a dim makes it dynamic.
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != signature.firstDims[i])
      signature.changed[i] = true;
  return signature.dynamicCompiles ? &signature : nullptr;
}

namespace {
/// `block_size` of a quantization of `x` by `scale`: 0 per tensor, else the
/// last dim over the scale's last dim.
Expected<int64_t> blockSizeOf(const Tensor &x, const Tensor &scale) {
  if (scale.shape().empty())
    return 0;
  if (x.shape().empty() || scale.shape().back() == 0 ||
      x.shape().back() % scale.shape().back() != 0)
    return makeError(ErrorKind::InvalidArgument,
                     "quantize: scale " + tensorType(scale.dtype(), scale.shape()) +
                         " splits no block of the last dim of " +
                         tensorType(x.dtype(), x.shape()));
  return x.shape().back() / scale.shape().back();
}

std::string blockAttr(int64_t blockSize) {
  return blockSize ? "block_size = " + std::to_string(blockSize) : "";
}
} // namespace

Expected<QuantizedTensor> Backend::quantize(const Tensor &x, const Tensor &scale) {
  auto block = blockSizeOf(x, scale);
  if (!block)
    return std::unexpected(block.error());
  auto values = apply("kiln.quantize", {x, scale}, DType::I8, x.shape(), blockAttr(*block));
  if (!values)
    return std::unexpected(values.error());
  return QuantizedTensor{std::move(*values), scale, *block};
}

Expected<Tensor> Backend::dequantize(const QuantizedTensor &q) {
  return apply("kiln.dequantize", {q.values, q.scale}, DType::F32, q.values.shape(),
               blockAttr(q.blockSize));
}

Expected<Tensor> Backend::randomUniform(DType type, const std::vector<int64_t> &shape,
                                        double low, double high) {
  return apply("kiln.random_uniform", {}, type, shape,
               "low = " + floatLiteral(low) + " : f64, high = " + floatLiteral(high) + " : f64");
}

Expected<Tensor> Backend::randomNormal(DType type, const std::vector<int64_t> &shape,
                                       double mean, double std) {
  return apply("kiln.random_normal", {}, type, shape,
               "mean = " + floatLiteral(mean) + " : f64, std = " + floatLiteral(std) + " : f64");
}

Expected<ProfileToken> Backend::profileStart() {
  if (capturing)
    return std::unexpected(notWhileCapturing("profile_start"));
  if (auto ok = checkUsable(); !ok)
    return std::unexpected(ok.error());
  auto start = queue->mark();
  if (!start)
    return std::unexpected(start.error());
  ProfileToken token{nextWindow++, /*stream=*/0};
  openWindows[token.id] = Window{std::move(*start)};
  return token;
}

Expected<ProfileDuration> Backend::profileEnd(ProfileToken token) {
  auto it = openWindows.find(token.id);
  if (it == openWindows.end() || token.stream != 0)
    return makeError(ErrorKind::InvalidArgument,
                     "profile_end: no open window #" + std::to_string(token.id) + " on stream " +
                         std::to_string(token.stream) + " of " + device().toString() +
                         " (ended or abandoned already, or opened elsewhere)");
  Window window = std::move(it->second);
  openWindows.erase(it);
  ProfileDuration duration{std::nullopt, queue->clockName()};
  // A capture inside the window recorded work instead of running it: the
  // window's time says nothing about that work.
  if (!window.measurable || capturing)
    return duration;
  auto end = queue->mark();
  if (!end)
    return std::unexpected(end.error());
  auto ms = queue->elapsedMs(window.start.get(), end->get());
  if (!ms)
    return std::unexpected(ms.error());
  duration.milliseconds = *ms;
  return duration;
}

void Backend::profileAbandon(ProfileToken token) { openWindows.erase(token.id); }

Expected<ProfileDuration> Backend::profile(const std::function<Expected<void>()> &work) {
  auto token = profileStart();
  if (!token)
    return std::unexpected(token.error());
  if (auto ok = work(); !ok) {
    profileAbandon(*token);
    return std::unexpected(ok.error());
  }
  return profileEnd(*token);
}

Expected<void> Backend::graphPrepare() {
  if (auto ok = checkUsable(); !ok)
    return ok;
  persistentAllocations = true;
  return {};
}

Expected<void> Backend::graphStartCapture() {
  if (capturing)
    return makeError(ErrorKind::InvalidArgument,
                     "graph_start_capture: a capture is already running on " +
                         device().toString());
  if (auto ok = checkUsable(); !ok)
    return ok;
  if (queue->capturesNatively()) {
    if (auto ok = queue->beginCapture(); !ok)
      return ok;
  }
  for (auto &[id, window] : openWindows)
    window.measurable = false;
  capturing = std::make_shared<Graph::Recording>();
  capturing->queue = queue;
  return {};
}

Expected<Graph> Backend::graphStopCapture() {
  if (!capturing)
    return makeError(ErrorKind::InvalidArgument,
                     "graph_stop_capture: no capture is running on " + device().toString());
  std::shared_ptr<Graph::Recording> recording = std::move(capturing);
  capturing = nullptr;
  if (queue->capturesNatively()) {
    auto graph = queue->endCapture();
    if (!graph)
      return std::unexpected(graph.error());
    recording->deviceGraph = std::move(*graph);
  }
  Graph graph;
  graph.deviceId = device();
  graph.recording = std::move(recording);
  return graph;
}

Expected<void> Backend::graphReplay(const Graph &graph) {
  if (!graph.recording || graph.recording->queue != queue)
    return makeError(ErrorKind::InvalidArgument,
                     "graph_replay: the graph was captured on " + graph.device().toString() +
                         " and cannot replay on " + device().toString() +
                         (graph.device() == device()
                              ? " (another backend of the same device)"
                              : ""));
  if (capturing)
    return std::unexpected(notWhileCapturing("graph_replay"));
  if (auto ok = checkUsable(); !ok)
    return ok;
  if (graph.recording->deviceGraph) {
    if (auto ok = queue->replay(graph.recording->deviceGraph.get()); !ok)
      return ok;
  } else {
    for (const auto &launch : graph.recording->launches)
      if (auto ok = queue->launch(*launch.program, launch.buffers, launch.sizes); !ok)
        return ok;
  }
  for (const auto &hook : graph.recording->afterReplay)
    if (auto ok = hook(); !ok)
      return ok;
  return {};
}

uint64_t Backend::collectiveAddress(const Tensor &tensor) {
  if (capturing)
    capturing->buffers.push_back(tensor.storage);
  return tensor.storage->allocation.address;
}

void Backend::afterEachReplay(std::function<Expected<void>()> hook) {
  capturing->afterReplay.push_back(std::move(hook));
}

void Backend::memoryCleanup() { queue->pool().cleanup(); }

std::vector<PoolReport> Backend::memoryPoolReport() const {
  auto reports = queue->pool().reports();
  reports.push_back(queue->persistentReport());
  return reports;
}

MemoryUsage Backend::memoryPoolUsage() const {
  MemoryUsage usage = queue->pool().usage(), persistent = queue->persistentUsage();
  usage.numberAllocs += persistent.numberAllocs;
  usage.bytesInUse += persistent.bytesInUse;
  usage.bytesReserved += persistent.bytesReserved;
  return usage;
}

Expected<StagingBuffer> Backend::staging(size_t bytes) {
  auto pointer = queue->allocateStaging(bytes);
  if (!pointer)
    return std::unexpected(pointer.error());
  StagingBuffer buffer;
  buffer.pointer = std::move(*pointer);
  buffer.bytes = bytes;
  return buffer;
}

bool Backend::supportsDtype(const DataType &type) const {
  return kiln::supportsDtype(queue->kernels().capabilities(), type);
}

DTypeUsageSet Backend::dtypeUsage(const DataType &type) const {
  return kiln::dtypeUsage(queue->kernels().capabilities(), type);
}

} // namespace kiln
