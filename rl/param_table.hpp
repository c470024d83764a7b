#pragma once
// The table that carves one flat allocation into named, shaped slices. Parameters, gradients and the
// two Adam moments are each one buffer of table.total() elements laid out by the same table, so the
// optimiser runs over one flat range and a slice means the same thing in all four.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/memory.hpp"
#include "sim/tensor_view.hpp"

namespace surge::rl {

struct ParamSlice {
  std::string name;   // "actor.0.weight"
  std::int64_t rows;  // a weight is [out][in]; a bias is [out][1]
  std::int64_t cols;
  std::int64_t offset;  // in elements, a multiple of ParamTable::kAlignElements
  std::int64_t size() const { return rows * cols; }
};

class ParamTable {
 public:
  // 64 elements: 256 bytes of float (512 of double), so every slice starts on a 256-byte boundary
  // of a 256-byte-aligned allocation.
  static constexpr std::int64_t kAlignElements = 64;

  // Appends a slice and returns its index. Names must be unique.
  int add(const std::string& name, std::int64_t rows, std::int64_t cols);

  int count() const { return static_cast<int>(slices_.size()); }
  const ParamSlice& operator[](int index) const { return slices_.at(static_cast<std::size_t>(index)); }
  const std::vector<ParamSlice>& slices() const { return slices_; }
  int find(const std::string& name) const;  // -1 if absent
  // Elements of one buffer carved by this table, padding included.
  std::int64_t total() const { return total_; }
  // Elements that are real parameters (no padding).
  std::int64_t parameter_count() const;

  // One view per slice of `buffer` (parameters, gradients or an Adam moment; [total()] elements),
  // named as the slice and shaped [rows][cols] (a bias is [out][1]), padding left out.
  template <class T>
  std::vector<NamedTensorView> tensor_views(Span<T> buffer) const {
    SURGE_CHECK(buffer.size == total_, "buffer of " + std::to_string(buffer.size) +
                                           " elements is not carved by a table of " + std::to_string(total_));
    std::vector<NamedTensorView> views;
    for (const ParamSlice& slice : slices_)
      views.push_back({slice.name, TensorView::of(buffer.slice(slice.offset, slice.size()), {slice.rows, slice.cols})});
    return views;
  }

 private:
  std::vector<ParamSlice> slices_;
  std::int64_t total_ = 0;
};

}  // namespace surge::rl
