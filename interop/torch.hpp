#pragma once
// Zero-copy libtorch tensors over Surge's views, and Surge views over libtorch tensors. Only this
// target includes torch headers; sim/ and rl/ describe their buffers with sim/tensor_view.hpp.
//
// Lifetime: a tensor made by to_torch borrows Surge's memory. With an `owner`, the tensor's deleter
// holds a reference to it, so the memory lives as long as the tensor or any tensor sharing its storage
// (slices, views, reshapes), whichever goes last. Without one, the caller promises that the memory
// outlives every such tensor.
//
// Streams (CUDA): Surge enqueues its writes on the surge::Stream given to each call; torch runs its ops
// on its current stream. Order the two as docs/interop.md says, or run torch on Surge's stream with
// interop::TorchStreamGuard (interop/torch_stream.hpp).
#include <ATen/core/Tensor.h>
#include <torch/ordered_dict.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/tensor_view.hpp"

namespace surge::interop {

// A tensor over the memory of `view`, with its dtype, device, shape and strides; no copy. uint64 views
// have no torch dtype and are refused (InputError); CUDA views need a libtorch built with CUDA.
at::Tensor to_torch(const TensorView& view, ViewOwner owner = nullptr);
// Every view of a list, by name and in order, each keeping `owner` alive.
torch::OrderedDict<std::string, at::Tensor> to_torch(const std::vector<NamedTensorView>& views,
                                                     const ViewOwner& owner = nullptr);

// A view of the memory of `tensor`, checked against `expected`: dtype, device, shape (kAnyExtent matches
// any extent) and contiguity. A mismatch throws InputError naming `what`, the expectation and the
// difference. The tensor keeps ownership: the view is valid while the tensor's storage lives.
TensorView from_torch(const at::Tensor& tensor, const TensorSpec& expected, std::string_view what = "tensor");
// The same, as a flat span of T, e.g. span_from_torch<std::int32_t>(actions, device, {num_envs}, "actions").
template <class T>
Span<T> span_from_torch(const at::Tensor& tensor, Device device, std::vector<std::int64_t> shape,
                        std::string_view what = "tensor") {
  return from_torch(tensor, TensorSpec{dtype_of<T>, device, std::move(shape)}, what).template span<T>();
}

// The torch counterparts of Surge's dtypes and devices, and back. Unsupported ones throw InputError.
at::ScalarType torch_dtype(DType dtype);
DType surge_dtype(at::ScalarType dtype);
at::Device torch_device(Device device);
Device surge_device(const at::Device& device);

}  // namespace surge::interop
