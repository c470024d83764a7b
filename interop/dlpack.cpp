#include "interop/dlpack.hpp"

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "sim/error.hpp"

namespace surge::interop {

namespace {

// What a DLManagedTensor made by to_dlpack points at: its shape and strides, and the owner reference.
struct Exported {
  DLManagedTensor managed{};
  std::int64_t shape[kMaxTensorRank] = {};
  std::int64_t strides[kMaxTensorRank] = {};
  ViewOwner owner;
};

void delete_exported(DLManagedTensor* managed) { delete static_cast<Exported*>(managed->manager_ctx); }

std::optional<DType> maybe_surge_dtype(DLDataType dtype) {
  if (dtype.lanes != 1) return std::nullopt;
  if (dtype.code == kDLFloat && dtype.bits == 32) return DType::Float32;
  if (dtype.code == kDLFloat && dtype.bits == 64) return DType::Float64;
  if (dtype.code == kDLInt && dtype.bits == 32) return DType::Int32;
  if (dtype.code == kDLInt && dtype.bits == 64) return DType::Int64;
  if (dtype.code == kDLUInt && dtype.bits == 8) return DType::UInt8;
  if (dtype.code == kDLUInt && dtype.bits == 64) return DType::UInt64;
  return std::nullopt;
}

std::optional<Device> maybe_surge_device(DLDevice device) {
  switch (device.device_type) {
    case kDLCPU:
    case kDLCUDAHost: return Device::cpu();
    case kDLCUDA: return Device::cuda(device.device_id);
    default: return std::nullopt;
  }
}

}  // namespace

DLDataType dlpack_dtype(DType dtype) {
  const auto bits = static_cast<std::uint8_t>(8 * dtype_size(dtype));
  switch (dtype) {
    case DType::Float32:
    case DType::Float64: return {kDLFloat, bits, 1};
    case DType::Int32:
    case DType::Int64: return {kDLInt, bits, 1};
    case DType::UInt8:
    case DType::UInt64: return {kDLUInt, bits, 1};
  }
  SURGE_CHECK(false, "unknown dtype");
  return {};
}

DLDevice dlpack_device(Device device) {
  return device.is_cpu() ? DLDevice{kDLCPU, 0} : DLDevice{kDLCUDA, device.index};
}

DLManagedTensor* to_dlpack(const TensorView& view, ViewOwner owner) {
  SURGE_CHECK(view.rank >= 0 && view.rank <= kMaxTensorRank, "tensor view of an impossible rank");
  auto exported = std::make_unique<Exported>();
  for (int d = 0; d < view.rank; ++d) {
    exported->shape[d] = view.shape[static_cast<std::size_t>(d)];
    exported->strides[d] = view.strides[static_cast<std::size_t>(d)];
  }
  exported->owner = std::move(owner);
  DLTensor& tensor = exported->managed.dl_tensor;
  tensor.data = view.data;
  tensor.device = dlpack_device(view.device);
  tensor.ndim = view.rank;
  tensor.dtype = dlpack_dtype(view.dtype);
  tensor.shape = exported->shape;
  tensor.strides = exported->strides;
  tensor.byte_offset = 0;
  exported->managed.manager_ctx = exported.get();
  exported->managed.deleter = delete_exported;
  return &exported.release()->managed;
}

DlpackTensor::DlpackTensor(DlpackTensor&& other) noexcept { *this = std::move(other); }

DlpackTensor& DlpackTensor::operator=(DlpackTensor&& other) noexcept {
  if (this != &other) {
    reset();
    managed_ = std::exchange(other.managed_, nullptr);
    view_ = std::exchange(other.view_, TensorView{});
  }
  return *this;
}

DLManagedTensor* DlpackTensor::release() {
  view_ = TensorView{};
  return std::exchange(managed_, nullptr);
}

void DlpackTensor::reset() noexcept {
  DLManagedTensor* managed = std::exchange(managed_, nullptr);
  view_ = TensorView{};
  if (managed && managed->deleter) managed->deleter(managed);
}

DlpackTensor from_dlpack(DLManagedTensor* managed, const TensorSpec& expected, std::string_view what) {
  const std::string expectation = std::string(what) + ": expected " + expected.describe() + ", got ";
  if (!managed) throw InputError(expectation + "a null DLManagedTensor");
  DlpackTensor imported(managed);  // from here on the deleter runs exactly once, whatever happens
  const DLTensor& tensor = managed->dl_tensor;
  const std::optional<DType> dtype = maybe_surge_dtype(tensor.dtype);
  if (!dtype)
    throw InputError(expectation + "DLPack dtype (code " + std::to_string(tensor.dtype.code) + ", bits " +
                     std::to_string(tensor.dtype.bits) + ", lanes " + std::to_string(tensor.dtype.lanes) +
                     ") (dtype differs; Surge takes float32/64, int32/64, uint8 and uint64 with 1 lane)");
  const std::optional<Device> device = maybe_surge_device(tensor.device);
  if (!device)
    throw InputError(expectation + "DLPack device type " + std::to_string(static_cast<int>(tensor.device.device_type)) +
                     " (device differs; Surge takes kDLCPU, kDLCUDAHost and kDLCUDA)");
  if (tensor.ndim < 0 || tensor.ndim > kMaxTensorRank)
    throw InputError(expectation + "a tensor of rank " + std::to_string(tensor.ndim) + " (rank differs)");
  if (tensor.ndim > 0 && !tensor.shape) throw InputError(expectation + "a tensor without a shape");
  TensorView view;
  view.dtype = *dtype;
  view.device = *device;
  view.rank = tensor.ndim;
  view.data = static_cast<char*>(tensor.data) + tensor.byte_offset;
  std::int64_t compact_stride = 1;
  for (int d = view.rank - 1; d >= 0; --d) {
    const auto k = static_cast<std::size_t>(d);
    view.shape[k] = tensor.shape[d];
    view.strides[k] = tensor.strides ? tensor.strides[d] : compact_stride;
    compact_stride *= tensor.shape[d];
  }
  require_matches(view, expected, what);
  imported.view_ = view;
  return imported;
}

}  // namespace surge::interop
