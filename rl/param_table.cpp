#include "rl/param_table.hpp"

#include "sim/error.hpp"

namespace surge::rl {

int ParamTable::add(const std::string& name, std::int64_t rows, std::int64_t cols) {
  SURGE_CHECK(rows > 0 && cols > 0, "slice '" + name + "' has an empty shape");
  SURGE_CHECK(find(name) < 0, "slice '" + name + "' is in the table twice");
  const std::int64_t offset = (total_ + kAlignElements - 1) / kAlignElements * kAlignElements;
  slices_.push_back({name, rows, cols, offset});
  total_ = offset + rows * cols;
  // Round the end up too, so a buffer of total() elements ends on an aligned boundary.
  total_ = (total_ + kAlignElements - 1) / kAlignElements * kAlignElements;
  return count() - 1;
}

int ParamTable::find(const std::string& name) const {
  for (int k = 0; k < count(); ++k)
    if (slices_[static_cast<std::size_t>(k)].name == name) return k;
  return -1;
}

std::int64_t ParamTable::parameter_count() const {
  std::int64_t sum = 0;
  for (const ParamSlice& slice : slices_) sum += slice.size();
  return sum;
}

}  // namespace surge::rl
