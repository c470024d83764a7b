// The pixel minibatch's rollout rows (rl/pixel_minibatch.hpp): one item per sample, on either backend.
#include "rl/pixel_minibatch.hpp"

#include "sim/parallel.cuh"

namespace surge::rl {
namespace {

struct MinibatchIndices {
  Permutation base;
  const TrainState* state;
  std::int64_t epochs, epoch, first;
  std::int64_t* indices;
  SURGE_HD void operator()(std::int64_t j) const {
    const Permutation p = base.with_shuffle(static_cast<std::uint64_t>(state->iteration * epochs + epoch));
    indices[j] = p(first + j);
  }
};

}  // namespace

void pixel_minibatch_indices(const Stream& stream, const Permutation& permutation, const TrainState* state,
                             std::int64_t epochs, std::int64_t epoch, std::int64_t minibatch,
                             std::int64_t minibatch_size, std::int64_t* indices) {
  parallel_for(stream, minibatch_size,
               MinibatchIndices{permutation, state, epochs, epoch, minibatch * minibatch_size, indices}, 64);
}

}  // namespace surge::rl
