#include "sim/tensor_view.hpp"

#include <cstdint>
#include <string>

namespace surge {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::UInt8: return "uint8";
    case DType::UInt64: return "uint64";
  }
  return "unknown";
}

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::Float32: return 4;
    case DType::Float64: return 8;
    case DType::Int32: return 4;
    case DType::Int64: return 8;
    case DType::UInt8: return 1;
    case DType::UInt64: return 8;
  }
  return 0;
}

std::int64_t TensorView::numel() const {
  std::int64_t count = 1;
  for (int d = 0; d < rank; ++d) count *= shape[static_cast<std::size_t>(d)];
  return count;
}

bool TensorView::is_contiguous() const {
  std::int64_t expected = 1;
  for (int d = rank - 1; d >= 0; --d) {
    const auto k = static_cast<std::size_t>(d);
    if (shape[k] != 1 && strides[k] != expected) return numel() == 0;
    expected *= shape[k];
  }
  return true;
}

namespace {

std::string extents(const std::int64_t* values, int rank) {
  if (rank == 0) return "[]";
  std::string text;
  for (int d = 0; d < rank; ++d) {
    text += '[';
    text += values[d] == kAnyExtent ? std::string("*") : std::to_string(values[d]);
    text += ']';
  }
  return text;
}

std::string stride_list(const TensorView& view) {
  std::string text = "(";
  for (int d = 0; d < view.rank; ++d)
    text += (d ? ", " : "") + std::to_string(view.strides[static_cast<std::size_t>(d)]);
  return text + ")";
}

}  // namespace

std::string TensorView::describe() const {
  std::string text = std::string(dtype_name(dtype)) + extents(shape.data(), rank) + " on " + device.str();
  if (!is_contiguous()) text += " with strides " + stride_list(*this);
  return text;
}

const TensorView& find_view(const std::vector<NamedTensorView>& views, std::string_view name) {
  std::string known;
  for (const NamedTensorView& entry : views) {
    if (entry.name == name) return entry.view;
    known += (known.empty() ? "" : ", ") + entry.name;
  }
  throw InputError("no tensor view named '" + std::string(name) + "' (there are: " + known + ")");
}

TensorSpec TensorSpec::like(const TensorView& view) {
  return {view.dtype, view.device, std::vector<std::int64_t>(view.shape.begin(), view.shape.begin() + view.rank)};
}

std::string TensorSpec::describe() const {
  return "contiguous " + std::string(dtype_name(dtype)) + extents(shape.data(), static_cast<int>(shape.size())) +
         " on " + device.str();
}

void require_matches(const TensorView& view, const TensorSpec& expected, std::string_view what) {
  std::string differs;
  if (view.dtype != expected.dtype) {
    differs = "dtype differs";
  } else if (!(view.device == expected.device)) {
    differs = "device differs";
  } else if (view.rank != static_cast<int>(expected.shape.size())) {
    differs = "rank differs";
  } else {
    for (int d = 0; d < view.rank && differs.empty(); ++d) {
      const std::int64_t want = expected.shape[static_cast<std::size_t>(d)];
      if (want != kAnyExtent && want != view.shape[static_cast<std::size_t>(d)])
        differs = "extent of dimension " + std::to_string(d) + " differs";
    }
  }
  if (differs.empty() && !view.is_contiguous()) differs = "not contiguous (make a contiguous copy first)";
  if (differs.empty() && view.numel() > 0 && view.data == nullptr) differs = "no data pointer";
  if (differs.empty() && reinterpret_cast<std::uintptr_t>(view.data) % dtype_size(view.dtype) != 0)
    differs = "data pointer not aligned to its element size";
  if (differs.empty()) return;
  throw InputError(std::string(what) + ": expected " + expected.describe() + ", got " + view.describe() + " (" +
                   differs + ")");
}

}  // namespace surge
