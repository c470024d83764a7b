#include "rl/shuffle.hpp"
#include "sim/parallel.cuh"

namespace surge::rl {

void write_permutation(const Stream& stream, const Permutation& permutation, const std::int64_t* shuffle_index,
                       std::int64_t* out) {
  const Permutation base = permutation;
  parallel_for(stream, permutation.size, [=] SURGE_HD(std::int64_t j) {
    const Permutation p = shuffle_index ? base.with_shuffle(static_cast<std::uint64_t>(*shuffle_index)) : base;
    out[j] = p(j);
  });
}

}  // namespace surge::rl
