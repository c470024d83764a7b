#include "interop/torch.hpp"

#include <ATen/Context.h>
#include <ATen/ops/from_blob.h>

#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "sim/error.hpp"

namespace surge::interop {

at::ScalarType torch_dtype(DType dtype) {
  switch (dtype) {
    case DType::Float32: return at::kFloat;
    case DType::Float64: return at::kDouble;
    case DType::Int32: return at::kInt;
    case DType::Int64: return at::kLong;
    case DType::UInt8: return at::kByte;
    case DType::UInt64: break;
  }
  throw InputError(std::string("to_torch: torch has no dtype for ") + dtype_name(dtype) +
                   " (Surge's uint64 buffers, such as rng_offsets, are exported through DLPack only)");
}

namespace {

std::optional<DType> maybe_surge_dtype(at::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat: return DType::Float32;
    case at::kDouble: return DType::Float64;
    case at::kInt: return DType::Int32;
    case at::kLong: return DType::Int64;
    case at::kByte: return DType::UInt8;
    default: return std::nullopt;
  }
}

std::optional<Device> maybe_surge_device(const at::Device& device) {
  if (device.is_cpu()) return Device::cpu();
  if (device.is_cuda()) return Device::cuda(device.has_index() ? device.index() : 0);
  return std::nullopt;
}

}  // namespace

DType surge_dtype(at::ScalarType dtype) {
  if (const std::optional<DType> surge = maybe_surge_dtype(dtype)) return *surge;
  throw InputError(std::string("Surge has no dtype for torch's ") + c10::toString(dtype) +
                   " (it takes float32, float64, int32, int64 and uint8)");
}

at::Device torch_device(Device device) {
  if (device.is_cpu()) return at::Device(at::kCPU);
  return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device.index));
}

Device surge_device(const at::Device& device) {
  if (const std::optional<Device> surge = maybe_surge_device(device)) return *surge;
  throw InputError("tensors on " + device.str() + " cannot be handed to Surge (it takes cpu and cuda)");
}

at::Tensor to_torch(const TensorView& view, ViewOwner owner) {
  SURGE_CHECK(view.rank >= 0 && view.rank <= kMaxTensorRank, "tensor view of an impossible rank");
  const at::ScalarType dtype = torch_dtype(view.dtype);
  if (view.device.is_cuda() && !at::hasCUDA())
    throw InputError("to_torch: the view is on " + view.device.str() +
                     " but this libtorch has no CUDA; build against a CUDA-enabled libtorch (SURGE_TORCH_PREFIX)");
  const at::Device device = torch_device(view.device);
  const at::IntArrayRef sizes(view.shape.data(), static_cast<std::size_t>(view.rank));
  const at::IntArrayRef strides(view.strides.data(), static_cast<std::size_t>(view.rank));
  // The deleter runs once, when the last tensor sharing this storage goes; destroying it then drops
  // the owner reference it holds.
  return at::for_blob(view.data, sizes)
      .strides(strides)
      .deleter([owner = std::move(owner)](void*) mutable { owner.reset(); })
      .options(at::TensorOptions().dtype(dtype).device(device))
      .target_device(device)
      .make_tensor();
}

torch::OrderedDict<std::string, at::Tensor> to_torch(const std::vector<NamedTensorView>& views,
                                                     const ViewOwner& owner) {
  torch::OrderedDict<std::string, at::Tensor> tensors;
  tensors.reserve(views.size());
  for (const NamedTensorView& entry : views) tensors.insert(entry.name, to_torch(entry.view, owner));
  return tensors;
}

TensorView from_torch(const at::Tensor& tensor, const TensorSpec& expected, std::string_view what) {
  const std::string expectation = std::string(what) + ": expected " + expected.describe() + ", got ";
  if (!tensor.defined()) throw InputError(expectation + "an undefined tensor");
  if (tensor.layout() != at::kStrided) {
    std::ostringstream layout;
    layout << tensor.layout();
    throw InputError(expectation + "a " + layout.str() + " tensor (only dense, strided tensors can be shared)");
  }
  const std::optional<DType> dtype = maybe_surge_dtype(tensor.scalar_type());
  if (!dtype)
    throw InputError(expectation + "a " + c10::toString(tensor.scalar_type()) +
                     " tensor (dtype differs; Surge takes float32, float64, int32, int64 and uint8)");
  const std::optional<Device> device = maybe_surge_device(tensor.device());
  if (!device) throw InputError(expectation + "a tensor on " + tensor.device().str() + " (device differs)");
  if (tensor.dim() > kMaxTensorRank)
    throw InputError(expectation + "a tensor of rank " + std::to_string(tensor.dim()) + " (rank differs)");
  TensorView view;
  view.dtype = *dtype;
  view.device = *device;
  view.rank = static_cast<int>(tensor.dim());
  for (int d = 0; d < view.rank; ++d) {
    view.shape[static_cast<std::size_t>(d)] = tensor.size(d);
    view.strides[static_cast<std::size_t>(d)] = tensor.stride(d);
  }
  view.data = tensor.data_ptr();  // already includes the storage offset
  require_matches(view, expected, what);
  return view;
}

}  // namespace surge::interop
