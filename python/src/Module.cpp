//===- Module.cpp - kiln._kiln: tensors, ops and backends for Python ------===//
//
// The thin layer under the `kiln` package: Python names and keyword
// attributes live in python/kiln; here tensors, the typed ops' generic call,
// programs, backend services and errors as exception classes per kind.
//
//===----------------------------------------------------------------------===//
#include "Module.h"

#include "kiln/backend/Ops.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <map>

namespace py = pybind11;

namespace kiln::python {
namespace {
struct DTypeName {
  DType type;
  std::string_view numpy;
};
constexpr DTypeName kNames[] = {
    {DType::F64, "float64"}, {DType::F32, "float32"}, {DType::F16, "float16"},
    {DType::BF16, "bfloat16"}, {DType::I8, "int8"},   {DType::I16, "int16"},
    {DType::I32, "int32"},   {DType::I64, "int64"},   {DType::U8, "uint8"},
    {DType::U16, "uint16"},  {DType::U32, "uint32"},  {DType::U64, "uint64"},
    {DType::Bool, "bool"},   {DType::F8E4M3FN, "float8_e4m3fn"},
    {DType::F8E5M2, "float8_e5m2"},
};

struct ElementName {
  ElementType type;
  std::string_view name;
};
constexpr ElementName kElementNames[] = {
    {ElementType::F64, "float64"},        {ElementType::F32, "float32"},
    {ElementType::TF32, "tfloat32"},      {ElementType::F16, "float16"},
    {ElementType::BF16, "bfloat16"},      {ElementType::F8E4M3, "float8_e4m3fn"},
    {ElementType::F8E5M2, "float8_e5m2"}, {ElementType::I8, "int8"},
    {ElementType::I16, "int16"},          {ElementType::I32, "int32"},
    {ElementType::I64, "int64"},          {ElementType::U8, "uint8"},
    {ElementType::U16, "uint16"},         {ElementType::U32, "uint32"},
    {ElementType::U64, "uint64"},         {ElementType::Bool, "bool"},
};

ElementType elementFromName(std::string_view name) {
  for (const ElementName &e : kElementNames)
    if (e.name == name)
      return e.type;
  throw KilnException{{ErrorKind::InvalidArgument, "unknown element type '" + std::string(name) + "'"}};
}

/// A capability query's type: an element, with its quantized scale's.
DataType dataTypeOf(std::string_view element, const std::optional<std::string> &scale) {
  DataType type{elementFromName(element)};
  if (scale)
    type.quantizedScale = elementFromName(*scale);
  return type;
}

/// A compiled program and the backend it runs on: kiln.compile's callable.
struct PyProgram {
  std::shared_ptr<Backend> backend;
  std::string source;
  CompileOptions options;
  std::shared_ptr<Program> program;
};

py::tuple shapeTuple(const std::vector<int64_t> &shape) {
  py::tuple t(shape.size());
  for (size_t i = 0; i < shape.size(); ++i)
    t[i] = shape[i];
  return t;
}

HostTensor hostTensor(py::array array) {
  // Big-endian data ('>f4') was copied as it stands, each element read
  // byte-swapped: NumPy converts it to this machine's order first.
  if (!array.dtype().attr("isnative").cast<bool>())
    array = array.attr("astype")(array.dtype().attr("newbyteorder")("="));
  std::string name = py::str(array.dtype().attr("name"));
  DType type = dtypeFromNumpyName(name);
  if (!(array.flags() & py::array::c_style))
    throw KilnException{{ErrorKind::InvalidArgument, "the array is not C-contiguous"}};
  std::vector<int64_t> shape(array.shape(), array.shape() + array.ndim());
  HostTensor host(type, shape);
  if (!host.data.empty())
    std::memcpy(host.data.data(), array.data(), host.data.size());
  return host;
}

py::array toNumpy(const Tensor &tensor) {
  if (tensor.dtype() == DType::BF16 || isFloat8DType(tensor.dtype()))
    throw KilnException{{ErrorKind::Unsupported,
                         "numpy has no " + std::string(numpyName(tensor.dtype())) +
                             ": cast the tensor to float32 first"}};
  auto host = std::make_unique<HostTensor>(unwrap(backendOf(tensor.device())->download(tensor)));
  py::dtype dtype = py::dtype::from_args(py::str(std::string(numpyName(tensor.dtype()))));
  void *data = host->data.data();
  std::vector<py::ssize_t> shape(host->shape.begin(), host->shape.end());
  py::capsule owner(host.release(), [](void *p) { delete static_cast<HostTensor *>(p); });
  return py::array(dtype, shape, data, owner);
}

py::dict poolReport(const PoolReport &r) {
  py::dict d;
  d["name"] = r.name;
  d["page_size"] = r.pageSize;
  d["pages"] = r.pages;
  d["pages_peak"] = r.pagesPeak;
  d["largest_alloc"] = r.largestAlloc;
  return d;
}

/// kiln.Error and its subclass per kind (bindErrors makes them).
py::handle errorBase;
std::map<ErrorKind, py::handle> errorClasses;

void bindErrors(py::module_ &m) {
  // One base class and one class per kind; each also derives from the
  // Python exception that means the same, so generic handlers catch it.
  errorBase = PyErr_NewException("kiln.Error", PyExc_RuntimeError, nullptr);
  py::handle base = errorBase;
  m.attr("Error") = base;
  struct Kind {
    ErrorKind kind;
    const char *name;
    PyObject *python;
  };
  static const Kind kinds[] = {
      {ErrorKind::InvalidArgument, "InvalidArgument", PyExc_ValueError},
      {ErrorKind::Compile, "CompileError", PyExc_RuntimeError},
      {ErrorKind::Launch, "LaunchError", PyExc_RuntimeError},
      {ErrorKind::OutOfMemory, "OutOfMemory", PyExc_MemoryError},
      {ErrorKind::Unsupported, "Unsupported", PyExc_NotImplementedError},
      {ErrorKind::DevicePoisoned, "DevicePoisoned", PyExc_RuntimeError},
  };
  for (const Kind &k : kinds) {
    // pybind11 3 types make_tuple's result by its arity: convert each arm.
    py::tuple bases = k.python == PyExc_RuntimeError
                          ? py::tuple(py::make_tuple(base))
                          : py::tuple(py::make_tuple(base, py::handle(k.python)));
    std::string qualified = std::string("kiln.") + k.name;
    py::handle cls = PyErr_NewException(qualified.c_str(), bases.ptr(), nullptr);
    m.attr(k.name) = cls;
    errorClasses[k.kind] = cls;
  }
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const KilnException &e) {
      setPythonError(e.error);
    }
  });
}

/// A str argument's text; empty with TypeError set if it is no str.
std::optional<std::string_view> textOf(PyObject *object, const char *what) {
  Py_ssize_t size = 0;
  const char *text = PyUnicode_Check(object) ? PyUnicode_AsUTF8AndSize(object, &size) : nullptr;
  if (!text) {
    if (!PyErr_Occurred())
      PyErr_Format(PyExc_TypeError, "call: %s must be a str, not %s", what,
                   Py_TYPE(object)->tp_name);
    return std::nullopt;
  }
  return std::string_view(text, static_cast<size_t>(size));
}

/// kiln._kiln.call(op, operands, attrs="", element=None): the typed ops'
/// generic call (ops::call), behind every op function of the package. A
/// plain CPython function rather than a pybind11 one: on a cache hit the
/// op costs less than pybind11's dispatcher (overload matching, argument
/// casters), and every eager op from Python comes through here.
PyObject *callOp(PyObject *, PyObject *const *args, Py_ssize_t count) {
  if (count < 2 || count > 4) {
    PyErr_SetString(PyExc_TypeError, "call(op, operands, attrs='', element=None) takes 2 to 4 "
                                     "positional arguments");
    return nullptr;
  }
  try {
    auto op = textOf(args[0], "op");
    if (!op)
      return nullptr;
    std::string_view attrs;
    if (count > 2 && args[2] != Py_None) {
      auto text = textOf(args[2], "attrs");
      if (!text)
        return nullptr;
      attrs = *text;
    }
    std::optional<DType> element;
    if (count > 3 && args[3] != Py_None) {
      auto name = textOf(args[3], "element");
      if (!name)
        return nullptr;
      element = dtypeFromNumpyName(*name);
    }
    py::object sequence = py::reinterpret_steal<py::object>(
        PySequence_Fast(args[1], "call: operands must be a list of kiln.Tensor"));
    if (!sequence)
      return nullptr;
    Py_ssize_t size = PySequence_Fast_GET_SIZE(sequence.ptr());
    PyObject **items = PySequence_Fast_ITEMS(sequence.ptr());
    std::vector<Tensor> operands;
    operands.reserve(static_cast<size_t>(size));
    for (Py_ssize_t i = 0; i < size; ++i) {
      py::handle item(items[i]);
      if (!py::isinstance<Tensor>(item)) {
        PyErr_Format(PyExc_TypeError, "call: operand #%zd is a %s, not a kiln.Tensor", i,
                     Py_TYPE(items[i])->tp_name);
        return nullptr;
      }
      operands.push_back(item.cast<const Tensor &>());
    }
    return py::cast(unwrap(ops::call(*op, operands, attrs, element))).release().ptr();
  } catch (const KilnException &e) {
    setPythonError(e.error);
  } catch (py::error_already_set &e) {
    e.restore();
  } catch (const std::bad_alloc &) {
    PyErr_NoMemory();
  } catch (const std::exception &e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

void bindBackend(py::module_ &m) {
  py::class_<Graph>(m, "Graph")
      .def_property_readonly("device", [](const Graph &g) { return g.device().toString(); })
      .def_property_readonly("launch_count", &Graph::launchCount);
  py::class_<ProfileToken>(m, "ProfileToken");

  py::class_<Backend, std::shared_ptr<Backend>>(m, "Backend")
      .def_property_readonly("name", &Backend::name)
      .def_property_readonly("device", [](Backend &b) { return b.device().toString(); })
      .def(
          "seed",
          [](Backend &b, const py::object &seed) {
            // Any whole number of 64 bits; pybind11 refused others with
            // "incompatible function arguments".
            uint64_t value = 0;
            try {
              value = seed.cast<uint64_t>();
            } catch (const py::cast_error &) {
              throw KilnException{
                  {ErrorKind::InvalidArgument, "seed: " + std::string(py::repr(seed)) +
                                                   " is not a whole number in [0, 2**64)"}};
            }
            b.seed(value);
          },
          py::arg("seed"))
      .def("sync", [](Backend &b) { unwrap(b.sync()); })
      .def("flush", [](Backend &b) { unwrap(b.flush()); })
      .def("profile_start", [](Backend &b) { return unwrap(b.profileStart()); })
      .def("profile_end",
           [](Backend &b, ProfileToken t) -> std::optional<double> {
             return unwrap(b.profileEnd(t)).milliseconds;
           })
      .def("profile_abandon", &Backend::profileAbandon)
      .def("graph_prepare", [](Backend &b) { unwrap(b.graphPrepare()); })
      .def("graph_start_capture", [](Backend &b) { unwrap(b.graphStartCapture()); })
      .def("graph_stop_capture", [](Backend &b) { return unwrap(b.graphStopCapture()); })
      .def("graph_replay", [](Backend &b, const Graph &g) { unwrap(b.graphReplay(g)); })
      .def("memory_persistent_allocations", &Backend::memoryPersistentAllocations)
      .def("memory_cleanup", &Backend::memoryCleanup)
      .def("memory_pool_report",
           [](const Backend &b) {
             py::list reports;
             for (const PoolReport &r : b.memoryPoolReport())
               reports.append(poolReport(r));
             return reports;
           })
      .def("memory_pool_usage",
           [](const Backend &b) {
             MemoryUsage u = b.memoryPoolUsage();
             py::dict d;
             d["number_allocs"] = u.numberAllocs;
             d["bytes_in_use"] = u.bytesInUse;
             d["bytes_padding"] = u.bytesPadding;
             d["bytes_reserved"] = u.bytesReserved;
             return d;
           })
      .def(
          "supports_dtype",
          [](const Backend &b, std::string_view element, std::optional<std::string> scale) {
            return b.supportsDtype(dataTypeOf(element, scale));
          },
          py::arg("dtype"), py::arg("quantized_scale") = py::none())
      .def(
          "dtype_usage",
          [](const Backend &b, std::string_view element, std::optional<std::string> scale) {
            DTypeUsageSet usage = b.dtypeUsage(dataTypeOf(element, scale));
            constexpr std::pair<DTypeUsage, const char *> kUsages[] = {
                {DTypeUsage::Storage, "storage"},
                {DTypeUsage::Arithmetic, "arithmetic"},
                {DTypeUsage::Accelerated, "accelerated"}};
            std::vector<std::string> names;
            for (auto [flag, name] : kUsages)
              if (usage.contains(flag))
                names.push_back(name);
            return names;
          },
          py::arg("dtype"), py::arg("quantized_scale") = py::none())
      .def_property_readonly("compile_count", [](Backend &b) { return b.kernels().compileCount(); })
      .def_property("auto_dynamic", &Backend::autoDynamic, &Backend::setAutoDynamic);

  m.def("backend", [](const std::string &device) { return backendOf(device); },
        py::arg("device") = "cpu");
  m.def("device_count", [](const std::string &kind) {
    DeviceId id = unwrap(DeviceId::parse(kind));
    return Backend::deviceCount(id.type);
  });
}

void bindOps(py::module_ &m) {
  static PyMethodDef call = {"call", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(callOp)),
                             METH_FASTCALL,
                             "call(op, operands, attrs='', element=None): `op` ('kiln.add') on "
                             "`operands`, its result type inferred"};
  m.attr("call") = py::reinterpret_steal<py::object>(PyCFunction_NewEx(&call, nullptr, m.attr("__name__").ptr()));
  m.def("apply",
        [](std::string_view op, const std::vector<Tensor> &operands, std::string_view dtype,
           const std::vector<int64_t> &shape, std::string_view attrs, const std::string &device) {
          return unwrap(backendOf(device)->apply(op, operands, dtypeFromNumpyName(dtype), shape,
                                                 attrs));
        },
        py::arg("op"), py::arg("operands"), py::arg("dtype"), py::arg("shape"),
        py::arg("attrs"), py::arg("device"));
  m.def("covered_ops", [] {
    std::vector<std::string> names(ops::coveredOps().begin(), ops::coveredOps().end());
    return names;
  });
  m.def("inferred_signatures", &ops::inferredSignatures);

  py::class_<PyProgram>(m, "Program")
      .def_property_readonly("device", [](const PyProgram &p) { return p.backend->device().toString(); })
      .def_property_readonly("kernel_count", [](const PyProgram &p) { return p.program->kernelCount(); })
      .def_property_readonly("num_inputs", [](const PyProgram &p) { return p.program->inputs().size(); })
      .def_property_readonly("num_outputs", [](const PyProgram &p) { return p.program->outputs().size(); })
      .def("run", [](const PyProgram &p, const std::vector<Tensor> &inputs) {
        return unwrap(p.backend->run(p.source, inputs, p.options));
      });
  m.def("compile",
        [](std::string source, const std::string &device, bool tf32) {
          std::shared_ptr<Backend> backend = backendOf(device);
          CompileOptions options;
          options.tf32 = tf32;
          auto program = unwrap(backend->kernels().compile(source, options));
          return PyProgram{backend, std::move(source), options, std::move(program)};
        },
        py::arg("source"), py::arg("device") = "cpu", py::arg("tf32") = false);
}
} // namespace

void setPythonError(const Error &error) {
  auto it = errorClasses.find(error.kind);
  PyErr_SetString(it != errorClasses.end() ? it->second.ptr() : errorBase.ptr(),
                  error.message.c_str());
}

std::string_view numpyName(DType type) { return kNames[static_cast<int>(type)].numpy; }

DType dtypeFromNumpyName(std::string_view name) {
  for (const DTypeName &n : kNames)
    if (n.numpy == name)
      return n.type;
  throw KilnException{{ErrorKind::InvalidArgument,
                       "kiln has no dtype '" + std::string(name) +
                           "' (float64 float32 float16 bfloat16 float8_e4m3fn float8_e5m2, int8..int64, "
                           "uint8..uint64, bool)"}};
}

std::shared_ptr<Backend> backendOf(const DeviceId &device) {
  return unwrap(Backend::shared(device));
}

std::shared_ptr<Backend> backendOf(std::string_view device) {
  return backendOf(unwrap(DeviceId::parse(device)));
}

} // namespace kiln::python

using namespace kiln;
using namespace kiln::python;

PYBIND11_MODULE(_kiln, m) {
  m.doc() = "kiln's C++ backend (use the kiln package)";
  bindErrors(m);
  py::class_<Tensor> tensor(m, "Tensor");
  tensor.def_property_readonly("dtype", [](const Tensor &t) { return numpyName(t.dtype()); })
      .def_property_readonly("shape", [](const Tensor &t) { return shapeTuple(t.shape()); })
      .def_property_readonly("device", [](const Tensor &t) { return t.device().toString(); })
      .def_property_readonly("ndim", [](const Tensor &t) { return t.shape().size(); })
      .def_property_readonly("size", &Tensor::numElements)
      .def_property_readonly("nbytes", &Tensor::bytes)
      .def("numpy", &toNumpy);
  m.def("tensor",
        [](const py::array &array, const std::string &device) {
          return unwrap(backendOf(device)->upload(hostTensor(array)));
        },
        py::arg("array"), py::arg("device") = "cpu");
  m.def("write",
        [](const Tensor &t, const py::array &array) {
          unwrap(backendOf(t.device())->write(t, hostTensor(array)));
        },
        py::arg("tensor"), py::arg("array"));
  bindBackend(m);
  bindOps(m);
  bindDLPack(m, tensor);
  bindDistributed(m);
}
