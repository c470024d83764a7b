#pragma once
// The reference the gradient tests compare with: central differences in double precision.
#include <cstdint>
#include <vector>

namespace surge::testing {

// d loss / d x[index], as (loss(x + h e_index) - loss(x - h e_index)) / 2h.
template <class Loss>
double central_difference(const Loss& loss, const std::vector<double>& x, std::int64_t index, double h) {
  std::vector<double> plus = x, minus = x;
  plus[static_cast<std::size_t>(index)] += h;
  minus[static_cast<std::size_t>(index)] -= h;
  return (loss(plus) - loss(minus)) / (2.0 * h);
}

}  // namespace surge::testing
