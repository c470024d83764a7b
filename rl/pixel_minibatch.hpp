#pragma once
// Which rollout rows a pixel minibatch reads: the same samples rl::gather_minibatch copies for the
// vector fields, as flat indices t * N + env for the frame store's gather (sim/frame_source.hpp).
// Computed on the device, reading the iteration from the train state there, so that a CUDA graph of
// the iteration holds it and no host read waits for the stream.
#include <cstdint>

#include "rl/shuffle.hpp"
#include "rl/train_state.hpp"
#include "sim/stream.hpp"

namespace surge::rl {

// indices[j] = permutation(minibatch * minibatch_size + j) for j in [0, minibatch_size), the permutation
// being shuffle number state->iteration * epochs + epoch of `permutation`'s family (as gather_minibatch).
void pixel_minibatch_indices(const Stream& stream, const Permutation& permutation, const TrainState* state,
                             std::int64_t epochs, std::int64_t epoch, std::int64_t minibatch,
                             std::int64_t minibatch_size, std::int64_t* indices);

}  // namespace surge::rl
