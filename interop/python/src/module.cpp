// surge._surge: the Python extension. Surge's buffers leave as DLPack capsules made by
// interop/dlpack.hpp; actions arrive through any object's __dlpack__ and are checked by it too.
// Bad input becomes ValueError (TypeError for a wrong dtype) with the command line's message.
#include <Python.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>

#include "interop/dlpack.hpp"
#include "interop/python/src/vector_engine.hpp"
#include "sim/error.hpp"
#include "tools/cli/version.hpp"

namespace nb = nanobind;

namespace surge::python {

namespace {

// DLPack's bool code (kDLBool, DLPack 0.8 on); Debian 12's dlpack.h predates it.
constexpr std::uint8_t kDlpackBool = 6;

// A capsule no consumer took still owns its tensor.
void release_unused_capsule(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, "dltensor")) return;
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (managed && managed->deleter) managed->deleter(managed);
}

// One of Surge's buffers as a DLPack producer (__dlpack__, __dlpack_device__): numpy.from_dlpack,
// torch.from_dlpack and jax.dlpack.from_dlpack read its memory in place. Flags go out as bool.
struct Exported {
  TensorView view;
  ViewOwner owner;
  bool as_bool = false;

  nb::object dlpack(const nb::kwargs&) const {
    DLManagedTensor* managed = interop::to_dlpack(view, owner);
    if (as_bool) managed->dl_tensor.dtype = DLDataType{kDlpackBool, 8, 1};
    PyObject* capsule = PyCapsule_New(managed, "dltensor", release_unused_capsule);
    if (!capsule) {
      managed->deleter(managed);
      throw nb::python_error();
    }
    return nb::steal(capsule);
  }
  nb::tuple dlpack_device() const {
    const DLDevice device = interop::dlpack_device(view.device);
    return nb::make_tuple(static_cast<int>(device.device_type), device.device_id);
  }
  std::uintptr_t data_pointer() const { return reinterpret_cast<std::uintptr_t>(view.data); }
};

bool is_flag(const std::string& name) { return name == "terminated" || name == "truncated" || name == "ended"; }

nb::dict exported(const std::vector<NamedTensorView>& views, const ViewOwner& owner) {
  nb::dict out;
  for (const NamedTensorView& named : views) out[named.name.c_str()] = Exported{named.view, owner, is_flag(named.name)};
  return out;
}

// Takes the tensor behind `producer.__dlpack__()` and checks it against `expected`. On CUDA the
// producer is given Surge's stream (the DLPack protocol's `stream`), so it orders its writes before
// Surge's reads without a host wait.
interop::DlpackTensor import_tensor(nb::handle producer, const TensorSpec& expected, const char* what,
                                    void* stream = nullptr) {
  // Only a producer whose memory is on CUDA takes a stream (NumPy refuses one).
  const bool producer_on_cuda =
      stream && nb::cast<int>(producer.attr("__dlpack_device__")()[0]) == static_cast<int>(kDLCUDA);
  nb::object capsule = producer_on_cuda
                           ? producer.attr("__dlpack__")(nb::arg("stream") = reinterpret_cast<std::intptr_t>(stream))
                           : producer.attr("__dlpack__")();
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (!managed) throw nb::python_error();
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  const DLDataType dtype = managed->dl_tensor.dtype;
  const DLDataType wanted = interop::dlpack_dtype(expected.dtype);
  try {
    return interop::from_dlpack(managed, expected, what);
  } catch (const InputError& error) {
    if (dtype.code != wanted.code || dtype.bits != wanted.bits || dtype.lanes != wanted.lanes)
      throw nb::type_error(error.what());
    throw;
  }
}

int step(VectorEngine& engine, nb::handle actions) {
  const TensorSpec expected = engine.action_spec();
  void* stream = expected.device.is_cpu() ? nullptr : engine.stream_handle();
  const interop::DlpackTensor imported = import_tensor(actions, expected, "actions", stream);
  nb::gil_scoped_release unlocked;
  return engine.step(imported.view());
}

// Writes a host or device array into one of the engine's state views.
void write_state(VectorEngine& engine, const std::string& name, nb::handle values) {
  const std::vector<NamedTensorView> views = engine.state_views();
  const TensorView& view = find_view(views, name);
  TensorSpec expected = TensorSpec::like(view);
  expected.device = Device::cpu();
  const interop::DlpackTensor imported = import_tensor(values, expected, name.c_str());
  const Stream stream(view.device);
  copy_bytes(view.data, view.device, imported.view().data, Device::cpu(),
             static_cast<std::size_t>(view.numel()) * dtype_size(view.dtype), stream);
  stream.synchronize();
}

}  // namespace

}  // namespace surge::python

NB_MODULE(_surge, m) {
  using namespace surge::python;
  m.doc() = "Surge's vector environments (the engine under surge.make)";
  m.attr("__version__") = SURGE_VERSION;
  nb::register_exception_translator([](const std::exception_ptr& error, void*) {
    try {
      std::rethrow_exception(error);
    } catch (const surge::InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });

  nb::class_<Exported>(m, "Exported")
      .def("__dlpack__", &Exported::dlpack)
      .def("__dlpack_device__", &Exported::dlpack_device)
      .def("as_uint8",
           [](const Exported& e) {
             return Exported{e.view, e.owner, false};
           })
      .def_prop_ro("is_bool", [](const Exported& e) { return e.as_bool; })
      .def_prop_ro("data_pointer", &Exported::data_pointer);

  nb::class_<VectorEngine>(m, "VectorEngine")
      .def(nb::init<const std::string&, std::int64_t, const std::string&, std::uint64_t, const std::string&>(),
           nb::arg("scenario"), nb::arg("num_envs"), nb::arg("device"), nb::arg("seed"), nb::arg("physics"))
      .def_prop_ro("scenario", [](const VectorEngine& e) { return e.spec().name; })
      .def_prop_ro("gym_id", [](const VectorEngine& e) { return e.spec().gym_id; })
      .def_prop_ro("num_envs", &VectorEngine::num_envs)
      .def_prop_ro("device", [](const VectorEngine& e) { return e.device().str(); })
      .def_prop_ro("seed", &VectorEngine::seed)
      .def_prop_ro("obs_dim", [](const VectorEngine& e) { return e.spec().obs_dim; })
      .def_prop_ro("discrete",
                   [](const VectorEngine& e) { return e.spec().action_kind == surge::ActionKind::Discrete; })
      .def_prop_ro("num_actions", [](const VectorEngine& e) { return e.spec().num_actions; })
      .def_prop_ro("action_dim", [](const VectorEngine& e) { return e.spec().action_dim; })
      .def_prop_ro("action_low", [](const VectorEngine& e) { return e.spec().action_low; })
      .def_prop_ro("action_high", [](const VectorEngine& e) { return e.spec().action_high; })
      .def_prop_ro("max_episode_steps", [](const VectorEngine& e) { return e.spec().max_episode_steps; })
      .def_prop_ro("closed", &VectorEngine::closed)
      .def("reset", &VectorEngine::reset, nb::arg("seed").none())
      .def("step", &step)
      .def("outputs", [](const VectorEngine& e) { return exported(e.output_views(), e.owner()); })
      .def("state", [](const VectorEngine& e) { return exported(e.state_views(), e.owner()); })
      .def("write_state", &write_state)
      .def("observe", &VectorEngine::observe)
      .def("close", &VectorEngine::close);
}
