#pragma once
// DLPack export and import (interop/dlpack.hpp) on one device, shared by the CPU and the GPU test:
// shared memory in both directions, the fields' shapes and strides, the deleter and the owner's
// lifetime, foreign layouts and every error path.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "interop/dlpack.hpp"
#include "rl/actor_critic.hpp"
#include "scenarios/registry.hpp"
#include "sim/engine_views.hpp"
#include "sim/memory.hpp"
#include "sim/stream.hpp"
#include "sim/tensor_view.hpp"
#include "tests/support/interop_buffers.hpp"

namespace surge::testing {

// A DLManagedTensor as another library would make one, over memory it does not own, counting the
// calls of its deleter.
struct ForeignTensor {
  DLManagedTensor managed{};
  std::vector<std::int64_t> shape, strides;
  int* deleter_calls = nullptr;

  static DLManagedTensor* make(void* data, Device device, DLDataType dtype, std::vector<std::int64_t> shape,
                               std::vector<std::int64_t> strides, int* deleter_calls, std::uint64_t byte_offset = 0) {
    auto* foreign = new ForeignTensor{};
    foreign->shape = std::move(shape);
    foreign->strides = std::move(strides);
    foreign->deleter_calls = deleter_calls;
    DLTensor& tensor = foreign->managed.dl_tensor;
    tensor.data = data;
    tensor.device = interop::dlpack_device(device);
    tensor.ndim = static_cast<int>(foreign->shape.size());
    tensor.dtype = dtype;
    tensor.shape = foreign->shape.data();
    tensor.strides = foreign->strides.empty() ? nullptr : foreign->strides.data();
    tensor.byte_offset = byte_offset;
    foreign->managed.manager_ctx = foreign;
    foreign->managed.deleter = [](DLManagedTensor* self) {
      auto* owner = static_cast<ForeignTensor*>(self->manager_ctx);
      ++*owner->deleter_calls;
      delete owner;
    };
    return &foreign->managed;
  }
};

// Counts its destructions: shared as a view's owner, it shows when the last reference went.
struct CountedOwner {
  int* destroyed;
  ~CountedOwner() { ++*destroyed; }
};

inline std::vector<std::int64_t> dl_shape(const DLTensor& tensor) {
  return std::vector<std::int64_t>(tensor.shape, tensor.shape + tensor.ndim);
}
inline std::vector<std::int64_t> dl_strides(const DLTensor& tensor) {
  return std::vector<std::int64_t>(tensor.strides, tensor.strides + tensor.ndim);
}

inline void dlpack_shares_memory(Device device) {
  Stream stream(device);
  DeviceBuffer<float> buffer(device, 12);
  std::vector<float> values(12);
  std::iota(values.begin(), values.end(), 1.0f);
  from_host(buffer.span(), values, stream);
  const TensorView view = TensorView::of(buffer.span(), {3, 4});

  DLManagedTensor* managed = interop::to_dlpack(view);
  const DLTensor& tensor = managed->dl_tensor;
  CHECK(tensor.data == buffer.data());
  CHECK(tensor.byte_offset == 0);
  CHECK(tensor.ndim == 2);
  CHECK(dl_shape(tensor) == std::vector<std::int64_t>{3, 4});
  CHECK(dl_strides(tensor) == std::vector<std::int64_t>{4, 1});
  CHECK(tensor.dtype.code == kDLFloat);
  CHECK(tensor.dtype.bits == 32);
  CHECK(tensor.dtype.lanes == 1);
  CHECK(tensor.device.device_type == (device.is_cuda() ? kDLCUDA : kDLCPU));
  CHECK(tensor.device.device_id == (device.is_cuda() ? device.index : 0));

  interop::DlpackTensor imported = interop::from_dlpack(managed, TensorSpec::like(view), "obs");
  CHECK(imported.view().data == buffer.data());
  CHECK(imported.view().device == device);
  // A write through the imported view is seen in Surge's buffer, and the other way round.
  std::vector<float> written(12);
  std::iota(written.begin(), written.end(), -5.0f);
  from_host(imported.span<float>(), written, stream);
  CHECK(to_host(buffer.cspan(), stream) == written);
  from_host(buffer.span(), values, stream);
  CHECK(to_host(imported.span<float>(), stream) == values);
}

inline void dlpack_exports_every_field(Device device) {
  ExportedFields exported(device, 5, 1);
  const std::vector<NamedTensorView> views = exported.views();
  CHECK(views.size() == exported.view_count());

  for (const NamedTensorView& field : views) {
    INFO(field.name);
    DLManagedTensor* managed = interop::to_dlpack(field.view);
    const DLTensor& tensor = managed->dl_tensor;
    CHECK(tensor.data == field.view.data);
    CHECK(dl_shape(tensor) ==
          std::vector<std::int64_t>(field.view.shape.begin(), field.view.shape.begin() + field.view.rank));
    CHECK(dl_strides(tensor) ==
          std::vector<std::int64_t>(field.view.strides.begin(), field.view.strides.begin() + field.view.rank));
    CHECK(static_cast<std::size_t>(tensor.dtype.bits) == 8 * dtype_size(field.view.dtype));
    const interop::DlpackTensor imported = interop::from_dlpack(managed, TensorSpec::like(field.view), field.name);
    CHECK(imported.view().data == field.view.data);
    CHECK(imported.view().dtype == field.view.dtype);
    CHECK(imported.view().shape == field.view.shape);
    CHECK(imported.view().strides == field.view.strides);
  }
}

inline void dlpack_deleter_and_lifetime(Device device) {
  int owner_destroyed = 0;
  auto buffer = std::make_shared<DeviceBuffer<std::int32_t>>(device, 8);
  const TensorView view = TensorView::of(buffer->span(), {8});
  {
    // The owner lives as long as the exported tensor, whoever else lets go of it.
    auto owner = std::shared_ptr<CountedOwner>(new CountedOwner{&owner_destroyed});
    DLManagedTensor* managed = interop::to_dlpack(view, owner);
    owner.reset();
    CHECK(owner_destroyed == 0);
    interop::DlpackTensor first = interop::from_dlpack(managed, TensorSpec::like(view));
    interop::DlpackTensor second = std::move(first);  // owners move: one deleter call, by `second`
    CHECK(first.view().data == nullptr);
    CHECK(owner_destroyed == 0);
  }
  CHECK(owner_destroyed == 1);

  // Foreign tensors: the deleter runs exactly once, on destruction, on reassignment, or never after release().
  int calls = 0;
  {
    interop::DlpackTensor imported = interop::from_dlpack(
        ForeignTensor::make(buffer->data(), device, {kDLInt, 32, 1}, {8}, {1}, &calls), TensorSpec::like(view));
    CHECK(calls == 0);
  }
  CHECK(calls == 1);
  calls = 0;
  interop::DlpackTensor held = interop::from_dlpack(
      ForeignTensor::make(buffer->data(), device, {kDLInt, 32, 1}, {8}, {1}, &calls), TensorSpec::like(view));
  held = interop::from_dlpack(ForeignTensor::make(buffer->data(), device, {kDLInt, 32, 1}, {8}, {1}, &calls),
                              TensorSpec::like(view));
  CHECK(calls == 1);
  DLManagedTensor* released = held.release();
  held = interop::DlpackTensor();
  CHECK(calls == 1);
  released->deleter(released);
  CHECK(calls == 2);
}

inline void dlpack_reads_foreign_layouts(Device device) {
  DeviceBuffer<double> buffer(device, 16);
  int calls = 0;
  // NULL strides mean compact row-major.
  {
    const interop::DlpackTensor imported =
        interop::from_dlpack(ForeignTensor::make(buffer.data(), device, {kDLFloat, 64, 1}, {4, 4}, {}, &calls),
                             {DType::Float64, device, {4, 4}});
    CHECK(imported.view().strides[0] == 4);
    CHECK(imported.view().strides[1] == 1);
  }
  // byte_offset moves the first element.
  {
    const interop::DlpackTensor imported = interop::from_dlpack(
        ForeignTensor::make(buffer.data(), device, {kDLFloat, 64, 1}, {8}, {1}, &calls, 8 * sizeof(double)),
        {DType::Float64, device, {8}});
    CHECK(imported.view().data == buffer.data() + 8);
  }
  CHECK(calls == 2);
}

// The InputError message of importing `managed` against `expected`, and how often its deleter ran.
struct ImportFailure {
  std::string message;
  int deleter_calls = 0;
};
inline ImportFailure import_failure(void* data, Device device, DLDataType dtype, std::vector<std::int64_t> shape,
                                    std::vector<std::int64_t> strides, const TensorSpec& expected,
                                    DLDeviceType device_type = DLDeviceType(0)) {
  ImportFailure failure;
  DLManagedTensor* managed =
      ForeignTensor::make(data, device, dtype, std::move(shape), std::move(strides), &failure.deleter_calls);
  if (device_type != DLDeviceType(0)) managed->dl_tensor.device.device_type = device_type;
  try {
    interop::from_dlpack(managed, expected, "policy logits");
  } catch (const InputError& error) {
    failure.message = error.what();
  }
  return failure;
}

inline void dlpack_error_paths(Device device) {
  DeviceBuffer<float> buffer(device, 12);
  const TensorSpec expected{DType::Float32, device, {3, 4}};
  const std::string prefix = "policy logits: expected contiguous float32[3][4] on " + device.str() + ", got ";
  const std::vector<std::pair<ImportFailure, std::string>> failures = {
      {import_failure(buffer.data(), device, {kDLFloat, 16, 1}, {3, 4}, {4, 1}, expected),
       "DLPack dtype (code 2, bits 16, lanes 1) (dtype differs; Surge takes float32/64, int32/64, uint8 and uint64 "
       "with 1 lane)"},
      {import_failure(buffer.data(), device, {kDLFloat, 32, 4}, {3, 1}, {1, 1}, expected),
       "DLPack dtype (code 2, bits 32, lanes 4) (dtype differs; Surge takes float32/64, int32/64, uint8 and uint64 "
       "with 1 lane)"},
      {import_failure(buffer.data(), device, {kDLFloat, 32, 1}, {3, 4}, {4, 1}, expected, kDLOpenCL),
       "DLPack device type 4 (device differs; Surge takes kDLCPU, kDLCUDAHost and kDLCUDA)"},
      {import_failure(buffer.data(), device, {kDLFloat, 32, 1}, {1, 1, 1, 3, 4}, {12, 12, 12, 4, 1}, expected),
       "a tensor of rank 5 (rank differs)"},
      {import_failure(buffer.data(), device, {kDLInt, 32, 1}, {3, 4}, {4, 1}, expected),
       "int32[3][4] on " + device.str() + " (dtype differs)"},
      {import_failure(buffer.data(), device, {kDLFloat, 32, 1}, {4, 3}, {3, 1}, expected),
       "float32[4][3] on " + device.str() + " (extent of dimension 0 differs)"},
      {import_failure(buffer.data(), device, {kDLFloat, 32, 1}, {12}, {1}, expected),
       "float32[12] on " + device.str() + " (rank differs)"},
      {import_failure(buffer.data(), device, {kDLFloat, 32, 1}, {3, 4}, {1, 3}, expected),
       "float32[3][4] on " + device.str() + " with strides (1, 3) (not contiguous (make a contiguous copy first))"},
  };
  for (const auto& [failure, reason] : failures) {
    CHECK(failure.message == prefix + reason);
    CHECK(failure.deleter_calls == 1);  // ownership was taken, so the deleter ran, once
  }
  const Device other = device.is_cuda() ? Device::cpu() : Device::cuda(0);
  const ImportFailure wrong_device = import_failure(buffer.data(), other, {kDLFloat, 32, 1}, {3, 4}, {4, 1}, expected);
  CHECK(wrong_device.message == prefix + "float32[3][4] on " + other.str() + " (device differs)");
  CHECK(wrong_device.deleter_calls == 1);
  CHECK_THROWS_WITH(interop::from_dlpack(nullptr, expected, "policy logits"), prefix + "a null DLManagedTensor");
}

}  // namespace surge::testing
