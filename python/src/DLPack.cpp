//===- DLPack.cpp - kiln tensors in and out through DLPack, zero-copy -----===//
//
// Exports: a capsule over the tensor's own memory, which the capsule keeps
// alive. Queued work that writes the tensor is waited for first (the
// backend's dataAddress), so every stream the consumer names (None, -1, 1,
// 2 or a stream pointer, the array API's rules) may use it at once.
//
// Imports: the producer's memory adopted by the backend, kept alive by the
// producer's DLManagedTensor until the last kiln tensor over it goes. On
// CUDA, kiln asks for the legacy default stream (1): kiln's stream is a
// blocking one, so its later work is ordered after the producer's.
//
//===----------------------------------------------------------------------===//
#include "Module.h"

#include <dlpack/dlpack.h>

namespace py = pybind11;

namespace kiln::python {
namespace {
// DLPack 0.8's bool code (Debian's header is 0.6); torch and NumPy use it.
constexpr uint8_t kDLBoolCode = 6;

DLDataType dlType(DType type) {
  uint8_t bits = static_cast<uint8_t>(dtypeSize(type) * 8);
  switch (type) {
  case DType::F64:
  case DType::F32:
  case DType::F16:
    return {kDLFloat, bits, 1};
  case DType::BF16:
    return {kDLBfloat, bits, 1};
  case DType::I8:
  case DType::I16:
  case DType::I32:
  case DType::I64:
    return {kDLInt, bits, 1};
  case DType::U8:
  case DType::U16:
  case DType::U32:
  case DType::U64:
    return {kDLUInt, bits, 1};
  case DType::Bool:
    return {kDLBoolCode, 8, 1};
  case DType::F8E4M3FN:
  case DType::F8E5M2:
    break; // DLPack 0.6 has no f8 codes
  }
  return {kDLOpaqueHandle, 0, 0};
}

std::optional<DType> kilnType(DLDataType type) {
  if (type.lanes != 1)
    return std::nullopt;
  for (DType t : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I8, DType::I16,
                  DType::I32, DType::I64, DType::U8, DType::U16, DType::U32, DType::U64,
                  DType::Bool}) {
    DLDataType want = dlType(t);
    if (want.code == type.code && want.bits == type.bits)
      return t;
  }
  return std::nullopt;
}

DLDevice dlDevice(const DeviceId &device) {
  switch (device.type) {
  case DeviceType::Cpu:
    return {kDLCPU, 0};
  case DeviceType::Cuda:
    return {kDLCUDA, device.index};
  case DeviceType::Vulkan:
    return {kDLVulkan, device.index};
  }
  return {kDLExtDev, device.index};
}

/// What an exported capsule owns: the tensor (its memory) and its shape.
struct Export {
  Tensor tensor;
  std::vector<int64_t> shape;
  DLManagedTensor managed{};
};

py::capsule exportTensor(const Tensor &given, py::object stream, py::object maxVersion,
                         py::object dlDeviceWanted, py::object copy) {
  // DLPack 1.0's keywords (the array API's __dlpack__) were a TypeError.
  // max_version: the capsule stays DLPack 0.x's "dltensor", which consumers
  // asking for 1.0 accept from producers without versioned capsules.
  (void)maxVersion;
  if (!dlDeviceWanted.is_none()) {
    DLDevice d = dlDevice(given.device());
    if (!dlDeviceWanted.equal(py::make_tuple(static_cast<int>(d.device_type), d.device_id)))
      throw py::buffer_error("__dlpack__: the tensor is on " + given.device().toString() +
                             ", not the dl_device asked for; copy it there first");
  }
  // copy=True: the capsule owns a copy of the tensor on its device.
  Tensor tensor = given;
  if (!copy.is_none() && copy.cast<bool>()) {
    std::shared_ptr<Backend> backend = backendOf(given.device());
    tensor = unwrap(backend->upload(unwrap(backend->download(given))));
  }
  if (tensor.device().type == DeviceType::Cpu && !stream.is_none())
    throw py::buffer_error("__dlpack__: a CPU tensor takes stream=None");
  if (tensor.device().type == DeviceType::Cuda && !stream.is_none() &&
      stream.cast<int64_t>() == 0)
    throw py::buffer_error("__dlpack__: stream 0 is ambiguous on CUDA (the array API "
                           "disallows it); use 1 for the legacy default stream");
  if (isFloat8DType(tensor.dtype()))
    throw py::buffer_error("__dlpack__: DLPack 0.6 has no " +
                           std::string(dtypeName(tensor.dtype())) +
                           " type; cast the tensor to float32 or bfloat16 first");
  uint64_t address = unwrap(backendOf(tensor.device())->dataAddress(tensor));
  auto owned = std::make_unique<Export>();
  owned->tensor = tensor;
  owned->shape = tensor.shape();
  DLTensor &dl = owned->managed.dl_tensor;
  dl.data = reinterpret_cast<void *>(address);
  dl.device = dlDevice(tensor.device());
  dl.ndim = static_cast<int32_t>(owned->shape.size());
  dl.dtype = dlType(tensor.dtype());
  dl.shape = owned->shape.data();
  dl.strides = nullptr; // dense row-major
  dl.byte_offset = 0;
  owned->managed.manager_ctx = owned.get();
  owned->managed.deleter = [](DLManagedTensor *self) {
    delete static_cast<Export *>(self->manager_ctx);
  };
  DLManagedTensor *managed = &owned.release()->managed;
  // A capsule never consumed frees its tensor; a consumed one is renamed
  // "used_dltensor" and its consumer calls the deleter.
  PyObject *capsule = PyCapsule_New(managed, "dltensor", [](PyObject *self) {
    if (PyCapsule_IsValid(self, "dltensor"))
      if (auto *m = static_cast<DLManagedTensor *>(PyCapsule_GetPointer(self, "dltensor")))
        m->deleter(m);
  });
  if (!capsule) {
    managed->deleter(managed);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(capsule);
}

bool rowMajor(const DLTensor &dl) {
  if (!dl.strides)
    return true;
  int64_t expected = 1;
  for (int32_t d = dl.ndim - 1; d >= 0; --d) {
    if (dl.shape[d] != 1 && dl.strides[d] != expected)
      return false;
    expected *= dl.shape[d];
  }
  return true;
}

/// The kiln device of a DLPack device; nullopt for a kind kiln cannot adopt.
std::optional<DeviceId> kilnDevice(DLDevice device) {
  if (device.device_type == kDLCPU)
    return DeviceId{DeviceType::Cpu, 0};
  if (device.device_type == kDLCUDA)
    return DeviceId{DeviceType::Cuda, device.device_id};
  return std::nullopt;
}

/// Adopts a consumed "dltensor" capsule's tensor. Returns None, leaving the
/// capsule unconsumed, where the memory cannot be used in place (strided,
/// misaligned): the caller then copies, on the CPU.
py::object importCapsule(py::capsule capsule) {
  if (!PyCapsule_IsValid(capsule.ptr(), "dltensor"))
    throw py::value_error("from_dlpack: not an unconsumed DLPack capsule (\"dltensor\")");
  auto *managed = static_cast<DLManagedTensor *>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  const DLTensor &dl = managed->dl_tensor;
  std::optional<DeviceId> device = kilnDevice(dl.device);
  if (!device)
    throw KilnException{{ErrorKind::Unsupported,
                         "from_dlpack: kiln cannot use memory of DLPack device type " +
                             std::to_string(dl.device.device_type)}};
  std::optional<DType> type = kilnType(dl.dtype);
  if (!type)
    throw KilnException{{ErrorKind::Unsupported,
                         "from_dlpack: kiln has no dtype for DLPack code " +
                             std::to_string(dl.dtype.code) + " of " +
                             std::to_string(dl.dtype.bits) + " bits, " +
                             std::to_string(dl.dtype.lanes) + " lanes"}};
  uint64_t address = reinterpret_cast<uint64_t>(dl.data) + dl.byte_offset;
  std::vector<int64_t> shape(dl.shape, dl.shape + dl.ndim);
  if (!rowMajor(dl) || address % 16 != 0)
    return py::none();
  std::shared_ptr<void> owner(managed, [](void *p) {
    // The producer's deleter may release Python objects.
    py::gil_scoped_acquire gil;
    auto *m = static_cast<DLManagedTensor *>(p);
    if (m->deleter)
      m->deleter(m);
  });
  // Consumed from here on: `owner` calls the deleter, even if adopt fails.
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  return py::cast(unwrap(backendOf(*device)->adopt(address, *type, std::move(shape), owner)));
}
} // namespace

void bindDLPack(py::module_ &m, py::class_<Tensor> &tensor) {
  tensor.def("__dlpack__", &exportTensor, py::kw_only(), py::arg("stream") = py::none(),
             py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(),
             py::arg("copy") = py::none())
      .def("__dlpack_device__", [](const Tensor &t) {
        DLDevice d = dlDevice(t.device());
        return py::make_tuple(static_cast<int>(d.device_type), d.device_id);
      });
  m.def("import_capsule", &importCapsule, py::arg("capsule"),
        "A kiln tensor over a DLPack capsule's memory, or None where it must be copied.");
}

} // namespace kiln::python
