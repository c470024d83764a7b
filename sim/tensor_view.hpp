#pragma once
// A shaped, typed, non-owning view of device memory: the pointer, dtype, shape, strides and device
// that foreign tensor libraries (libtorch, DLPack) need, and nothing of theirs. Surge's own views are
// flat Span<T>s; a TensorView gives one a shape. sim/ and rl/ describe their buffers with these;
// interop/ turns them into torch tensors and DLPack capsules and back.
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "sim/device.hpp"
#include "sim/error.hpp"
#include "sim/memory.hpp"

namespace surge {

// The element types Surge's buffers hold. Flags are uint8 holding 0 or 1.
enum class DType : std::uint8_t { Float32, Float64, Int32, Int64, UInt8, UInt64 };
const char* dtype_name(DType dtype);  // "float32", "int32", ...
std::size_t dtype_size(DType dtype);  // bytes per element

// The dtype of an element type T (const or not); no other type compiles.
template <class T>
constexpr DType dtype_for() {
  using U = std::remove_const_t<T>;
  if constexpr (std::is_same_v<U, float>)
    return DType::Float32;
  else if constexpr (std::is_same_v<U, double>)
    return DType::Float64;
  else if constexpr (std::is_same_v<U, std::int32_t>)
    return DType::Int32;
  else if constexpr (std::is_same_v<U, std::int64_t>)
    return DType::Int64;
  else if constexpr (std::is_same_v<U, std::uint8_t>)
    return DType::UInt8;
  else if constexpr (std::is_same_v<U, std::uint64_t>)
    return DType::UInt64;
  else
    static_assert(sizeof(U) == 0, "no dtype for this element type");
}
template <class T>
inline constexpr DType dtype_of = dtype_for<T>();

// Rollout observations ([T+1][N][obs_dim]) are the deepest buffers Surge has.
inline constexpr int kMaxTensorRank = 4;

// What keeps a view's memory alive once the view is handed to a foreign library: any shared_ptr
// converts to it (a shared_ptr<Engine>, shared_ptr<RolloutStorage>, shared_ptr<DeviceBuffer<T>>...).
using ViewOwner = std::shared_ptr<const void>;

struct TensorView {
  void* data = nullptr;  // the first element; const-ness of the source is not tracked
  DType dtype = DType::Float32;
  Device device = Device::cpu();
  int rank = 0;
  std::array<std::int64_t, kMaxTensorRank> shape{};
  std::array<std::int64_t, kMaxTensorRank> strides{};  // in elements, as torch and DLPack count them

  // A contiguous row-major view of the whole of `span` with `shape`, whose product must be span.size.
  template <class T>
  static TensorView of(Span<T> span, std::initializer_list<std::int64_t> shape);

  std::int64_t numel() const;
  // Row-major without gaps; extents of 1 may carry any stride (as torch decides contiguity).
  bool is_contiguous() const;
  // "float32[4][2] on cpu", with the strides appended when the view is not contiguous.
  std::string describe() const;
  // The view as a flat span; throws unless the dtype is T's and the view is contiguous.
  template <class T>
  Span<T> span() const;
};

struct NamedTensorView {
  std::string name;  // "obs", "actor.0.weight", ...
  TensorView view;
};
// The view called `name`; throws InputError listing the names there are.
const TensorView& find_view(const std::vector<NamedTensorView>& views, std::string_view name);

// What Surge expects of memory handed to it: a dtype, a device and a shape (kAnyExtent matches any
// extent in that dimension). Surge's kernels read flat spans, so it must also be contiguous.
inline constexpr std::int64_t kAnyExtent = -1;
struct TensorSpec {
  DType dtype = DType::Float32;
  Device device = Device::cpu();
  std::vector<std::int64_t> shape;

  static TensorSpec like(const TensorView& view);  // the dtype, device and shape of an existing view
  std::string describe() const;                    // "contiguous int32[4096] on cuda:0" ("[*]" for any)
};
// Throws InputError when `view` does not meet `expected`: the message names `what`, what was expected,
// what was found and which property differs.
void require_matches(const TensorView& view, const TensorSpec& expected, std::string_view what);

template <class T>
TensorView TensorView::of(Span<T> span, std::initializer_list<std::int64_t> shape) {
  SURGE_CHECK(shape.size() <= static_cast<std::size_t>(kMaxTensorRank), "tensor view of too high a rank");
  TensorView view;
  view.data = const_cast<void*>(static_cast<const void*>(span.data));
  view.dtype = dtype_of<T>;
  view.device = span.device;
  view.rank = static_cast<int>(shape.size());
  std::int64_t count = 1;
  int d = 0;
  for (std::int64_t extent : shape) {
    SURGE_CHECK(extent >= 0, "negative extent in a tensor view's shape");
    view.shape[static_cast<std::size_t>(d++)] = extent;
    count *= extent;
  }
  SURGE_CHECK(count == span.size, "tensor view shape " + view.describe() + " does not cover the span's " +
                                      std::to_string(span.size) + " elements");
  std::int64_t stride = 1;
  for (d = view.rank - 1; d >= 0; --d) {
    view.strides[static_cast<std::size_t>(d)] = stride;
    stride *= view.shape[static_cast<std::size_t>(d)];
  }
  return view;
}

template <class T>
Span<T> TensorView::span() const {
  SURGE_CHECK(dtype == dtype_of<T>,
              std::string("tensor view holds ") + dtype_name(dtype) + ", not " + dtype_name(dtype_of<T>));
  SURGE_CHECK(is_contiguous(), "tensor view " + describe() + " is not contiguous");
  return {static_cast<T*>(data), numel(), device};
}

}  // namespace surge
