// The trainer's pixel-observation path: the frame store takes the place of the engine's step and of the
// vector observations wherever the policy reads them (the rollout's forward passes, the truncation
// bootstrap, each minibatch), and its last frames are part of the resumable state. Both backends: on
// CUDA nothing here reads device memory from the host inside an iteration, so the graph holds it all.
#include <algorithm>
#include <cstring>

#include "rl/pixel_minibatch.hpp"
#include "rl/trainer.hpp"
#include "sim/error.hpp"

namespace surge::rl {

void Trainer::add_pixel_buffers(BufferTable& table, const TrainConfig& config, const ActorCritic& network, Buffers& b) {
  const std::int64_t n = config.num_envs, mb = config.minibatch_size(), stack = config.frame_stack;
  const std::int64_t stack_bytes = network.encoder()->frame_size(), frame_bytes = stack_bytes / stack;
  b.rollout_stacks = table.add<std::uint8_t>("pixels.rollout_stacks", {n, stack_bytes}, "[N][H][W][stack*C]",
                                             "the stacks the policy reads at a rollout step");
  b.mb_stacks = table.add<std::uint8_t>("pixels.minibatch_stacks", {mb, stack_bytes}, "[B][H][W][stack*C]",
                                        "a minibatch's stacks");
  b.mb_indices = table.add<std::int64_t>("pixels.minibatch_indices", {mb}, "[B]", "its rows, as t * N + env");
  b.carried_frames = table.add<std::uint8_t>("pixels.carried_frames", {stack, n, frame_bytes}, "[stack][N][H][W][C]",
                                             "the frames the next iteration's first stacks read", kSaved);
  b.carried_first =
      table.add<std::uint8_t>("pixels.carried_first", {stack, n}, "[stack][N]", "their first-of-episode flags", kSaved);
}

void Trainer::start_pixels() {
  if (!network_.pixels()) {
    SURGE_CHECK(!frames_, "a frame store given for vector observations");
    return;
  }
  if (!frames_)
    throw InputError(
        "observation = \"pixels\" trains through surge train only so far (this command gives the trainer no "
        "frames); use observation = \"vector\"");
  SURGE_CHECK(frames_->num_steps() == config_.num_steps && frames_->num_envs() == config_.num_envs &&
                  frames_->stack() == config_.frame_stack && frames_->stack_bytes() == network_.encoder()->frame_size(),
              "the frame store does not fit the config");
  // The first frames go to row T, as the first observation goes to obs[T]: every iteration starts by
  // carrying the last rows over, and a stack that starts an episode reaches no further back.
  frames_->begin(stream_);
  const std::int64_t n = config_.num_envs, t = config_.num_steps;
  copy_bytes(frames_->frames(t), device_, frames_->frames(0), device_,
             static_cast<std::size_t>(n * frames_->frame_bytes()), stream_);
  copy_bytes(frames_->first_flags(t), device_, frames_->first_flags(0), device_, static_cast<std::size_t>(n), stream_);
  stream_.synchronize();
}

const float* Trainer::encode_stacks(std::int64_t t, bool final_stacks) {
  const Span<std::uint8_t> stacks = arena_[b_.rollout_stacks];
  if (final_stacks)
    frames_->gather_final(t, stacks, stream_);
  else
    frames_->gather_row(t, stacks, stream_);
  return workspace_.encode(stream_, data(b_.params), stacks.data, config_.num_envs);
}

bool Trainer::any_truncated(std::int64_t t) const {
  // On CUDA the flags stay on the device: every step's final stacks are valued (GAE reads them only
  // where an episode was truncated, so the values elsewhere change nothing).
  if (!device_.is_cpu()) return true;
  stream_.synchronize();  // the flags are host memory on the CPU backend
  const std::uint8_t* truncated = rollout_.truncated(t);
  const std::uint8_t* terminated = rollout_.terminated(t);
  for (std::int64_t i = 0; i < config_.num_envs; ++i)
    if (truncated[i] && !terminated[i]) return true;
  return false;
}

void Trainer::gather_minibatch_stacks(std::int64_t epoch, std::int64_t m) {
  // The rows gather_minibatch took, from the same shuffle.
  pixel_minibatch_indices(stream_, permutation_, data(b_.state), config_.update_epochs, epoch, m, minibatch_size_,
                          data(b_.mb_indices));
  frames_->gather(arena_[b_.mb_indices], arena_[b_.mb_stacks], stream_);
  minibatch_.frames = data(b_.mb_stacks);
}

void Trainer::carry_frames(bool into_store) const {
  const std::int64_t n = config_.num_envs, stack = config_.frame_stack, first_row = config_.num_steps - stack + 1;
  const std::int64_t frame_bytes = frames_->frame_bytes();
  for (std::int64_t k = 0; k < stack; ++k) {
    std::uint8_t* saved_frames = data(b_.carried_frames) + k * n * frame_bytes;
    std::uint8_t* saved_first = data(b_.carried_first) + k * n;
    std::uint8_t* store_frames = frames_->frames(first_row + k);
    std::uint8_t* store_first = frames_->first_flags(first_row + k);
    if (into_store) {
      copy_bytes(store_frames, device_, saved_frames, device_, static_cast<std::size_t>(n * frame_bytes), stream_);
      copy_bytes(store_first, device_, saved_first, device_, static_cast<std::size_t>(n), stream_);
    } else {
      copy_bytes(saved_frames, device_, store_frames, device_, static_cast<std::size_t>(n * frame_bytes), stream_);
      copy_bytes(saved_first, device_, store_first, device_, static_cast<std::size_t>(n), stream_);
    }
  }
  stream_.synchronize();
}

}  // namespace surge::rl
