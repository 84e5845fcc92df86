//===- Distributed.cpp - kiln.distributed: collectives through NCCL ------===//
#include "Module.h"

#include "kiln/backend/Distributed.h"

#include <pybind11/functional.h>
#include <pybind11/stl.h>

namespace py = pybind11;

namespace kiln::python {
namespace {
ReduceOp reduceOpOf(const std::string &name) {
  if (auto op = reduceOpFromName(name))
    return *op;
  throw KilnException{{ErrorKind::InvalidArgument,
                       "no reduce op '" + name + "' (sum, prod, max, min, avg)"}};
}

std::optional<std::chrono::milliseconds> timeoutOf(std::optional<int64_t> ms) {
  if (!ms)
    return std::nullopt;
  return std::chrono::milliseconds(*ms);
}
} // namespace

void bindDistributed(py::module_ &parent) {
  py::module_ m = parent.def_submodule("_distributed", "kiln.distributed's C++ side");
  m.def("device_count", &communicatorDeviceCount);
  m.def("unavailable_reason", &communicatorUnavailableReason);
  m.def("nccl_version", []() -> std::optional<std::string> {
    if (!ncclStatus().available)
      return std::nullopt;
    return ncclStatus().versionText();
  });

  py::class_<NcclUniqueId>(m, "UniqueId")
      .def_static("create", [] { return unwrap(NcclUniqueId::create()); })
      .def_static("from_hex", [](const std::string &hex) { return unwrap(NcclUniqueId::fromHex(hex)); })
      .def_static("from_bytes",
                  [](const py::bytes &bytes) {
                    std::string_view view = bytes;
                    return unwrap(NcclUniqueId::fromBytes(
                        {reinterpret_cast<const uint8_t *>(view.data()), view.size()}));
                  })
      .def("hex", &NcclUniqueId::toHex)
      .def("__bytes__", [](const NcclUniqueId &id) {
        return py::bytes(reinterpret_cast<const char *>(id.bytes.data()), id.bytes.size());
      });

  py::class_<Communicator>(m, "Communicator")
      .def(py::init([](const NcclUniqueId &id, int rank, int size, const std::string &device,
                       std::optional<int64_t> timeoutMs) {
             py::gil_scoped_release release; // init waits for the other ranks
             return unwrap(Communicator::create(backendOf(device), id, rank, size,
                                                timeoutOf(timeoutMs)));
           }),
           py::arg("id"), py::arg("rank"), py::arg("size"), py::arg("device") = "cuda:0",
           py::arg("timeout_ms") = py::none())
      .def_static(
          "local",
          [](const std::vector<std::string> &devices, std::optional<int64_t> timeoutMs) {
            std::vector<std::shared_ptr<Backend>> backends;
            for (const std::string &device : devices)
              backends.push_back(backendOf(device));
            Expected<std::vector<std::unique_ptr<Communicator>>> comms;
            {
              py::gil_scoped_release release; // init waits for every rank
              comms = Communicator::createLocal(std::move(backends), timeoutOf(timeoutMs));
            }
            py::list ranks;
            for (auto &comm : unwrap(std::move(comms)))
              ranks.append(py::cast(std::move(comm)));
            return ranks;
          },
          py::arg("devices"), py::arg("timeout_ms") = py::none())
      .def_property_readonly("rank", &Communicator::rank)
      .def_property_readonly("size", &Communicator::size)
      .def_property_readonly("device", [](const Communicator &c) { return c.device().toString(); })
      .def_property_readonly("sequence", &Communicator::sequence)
      .def_property_readonly("poisoned", &Communicator::poisoned)
      .def("abort", &Communicator::abort)
      .def(
          "all_reduce",
          [](Communicator &c, const Tensor &x, const std::string &op, bool inPlace) {
            if (inPlace) {
              unwrap(c.allReduceInPlace(x, reduceOpOf(op)));
              return x;
            }
            return unwrap(c.allReduce(x, reduceOpOf(op)));
          },
          py::arg("x"), py::arg("op") = "sum", py::arg("in_place") = false)
      .def("all_gather", [](Communicator &c, const Tensor &x) { return unwrap(c.allGather(x)); })
      .def(
          "reduce_scatter",
          [](Communicator &c, const Tensor &x, const std::string &op) {
            return unwrap(c.reduceScatter(x, reduceOpOf(op)));
          },
          py::arg("x"), py::arg("op") = "sum")
      .def(
          "broadcast",
          [](Communicator &c, const Tensor &x, int root) { return unwrap(c.broadcast(x, root)); },
          py::arg("x"), py::arg("root"))
      .def(
          "send", [](Communicator &c, const Tensor &x, int peer) { unwrap(c.send(x, peer)); },
          py::arg("x"), py::arg("peer"))
      .def(
          "recv",
          [](Communicator &c, const std::string &dtype, const std::vector<int64_t> &shape,
             int peer) { return unwrap(c.recv(dtypeFromNumpyName(dtype), shape, peer)); },
          py::arg("dtype"), py::arg("shape"), py::arg("peer"));

  // A Python exception inside the group is kept until NCCL's group is
  // closed, then raised.
  m.def("group", [](const py::function &calls) {
    std::optional<py::error_already_set> raised;
    std::optional<Error> failed;
    auto grouped = Communicator::group([&]() -> Expected<void> {
      try {
        calls();
      } catch (py::error_already_set &e) {
        raised = std::move(e);
      } catch (const KilnException &e) {
        failed = e.error;
      }
      return {};
    });
    if (raised)
      throw std::move(*raised);
    if (failed)
      throw KilnException{*failed};
    unwrap(std::move(grouped));
  });
}

} // namespace kiln::python
