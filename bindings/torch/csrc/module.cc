// The Python module weft_torch._C: the creator torch.distributed calls for backend "weft".
#include <pybind11/chrono.h>
#include <torch/extension.h>

#include "process_group_weft.h"

namespace py = pybind11;

PYBIND11_MODULE(_C, module) {
  module.doc() = "weft collectives as a torch.distributed backend";
  // torch registers its ProcessGroup/Backend and Store types when torch.distributed loads; the
  // class below derives from them, so they must be known first.
  py::module::import("torch.distributed");

  py::class_<weft_torch::ProcessGroupWeft, weft_torch::WeftBase,
             c10::intrusive_ptr<weft_torch::ProcessGroupWeft>>(module, "ProcessGroupWeft");

  module.def("create_process_group", &weft_torch::createProcessGroupWeft, py::arg("store"),
             py::arg("rank"), py::arg("size"), py::arg("timeout"),
             py::call_guard<py::gil_scoped_release>(),
             "Creates a weft process group; torch.distributed calls it for backend 'weft'.");
  module.def(
      "empty_bytes",
      [](int64_t bytes) {
        if (bytes < 0) throw std::invalid_argument("empty_bytes: bytes is negative");
        void* memory = nullptr;
        if (weftMemAlloc(&memory, bytes > 0 ? static_cast<size_t>(bytes) : 1) != weftSuccess) {
          throw std::runtime_error(std::string("weftMemAlloc failed: ") +
                                   weftGetLastError(nullptr));
        }
        return torch::from_blob(
            memory, {bytes}, [](void* freed) { weftMemFree(freed); },
            torch::TensorOptions().dtype(torch::kUInt8));
      },
      py::arg("bytes"),
      "A uint8 tensor of `bytes` in weftMemAlloc memory, freed with the tensor's storage.");
  module.def("weft_version", [] {
    int version = 0;
    weftGetVersion(&version);
    return version;
  });
}
