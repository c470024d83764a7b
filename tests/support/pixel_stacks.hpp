#pragma once
// Frame stacks as Gymnasium's FrameStackObservation(env, stack, padding_type="reset") keeps them, per
// environment, on the host: at a reset the stack is the first frame repeated; each step drops the oldest
// frame and appends the new one; the step that ends an episode returns the stack with the final frame
// appended, and the next stack starts afresh from the reset frame. Stacks are laid out as the frame
// store gathers them, [H][W][stack * C].
#include <cstdint>
#include <deque>
#include <vector>

#include "scenarios/scene_render.hpp"

namespace surge::testing {

using Frame = std::vector<std::uint8_t>;  // [H][W][C]

class ReferenceStacks {
 public:
  ReferenceStacks(std::int64_t num_envs, FrameSize size, int stack)
      : size_(size), stack_(stack), stacks_(static_cast<std::size_t>(num_envs)) {}

  void reset(std::int64_t env, const Frame& first) { stacks_[index(env)].assign(stack_, first); }
  // The step's new frame; with `ended`, the frame is the final one and `next_first` starts the next episode.
  // Returns the stack the step returned (the final stack where it ended).
  Frame step(std::int64_t env, const Frame& frame, bool ended, const Frame& next_first) {
    std::deque<Frame>& s = stacks_[index(env)];
    s.pop_front();
    s.push_back(frame);
    const Frame returned = layout(s);
    if (ended) reset(env, next_first);
    return returned;
  }
  Frame current(std::int64_t env) const { return layout(stacks_[index(env)]); }

 private:
  static std::size_t index(std::int64_t env) { return static_cast<std::size_t>(env); }
  Frame layout(const std::deque<Frame>& s) const {
    const std::int64_t pixels = static_cast<std::int64_t>(size_.width) * size_.height, c = size_.channels;
    Frame out(static_cast<std::size_t>(pixels * c * stack_));
    for (int k = 0; k < stack_; ++k)
      for (std::int64_t p = 0; p < pixels; ++p)
        for (std::int64_t j = 0; j < c; ++j)
          out[static_cast<std::size_t>((p * stack_ + k) * c + j)] = s[static_cast<std::size_t>(k)][p * c + j];
    return out;
  }

  FrameSize size_;
  int stack_;
  std::vector<std::deque<Frame>> stacks_;
};

// Frame `env` of a batch [N][H][W][C].
inline Frame frame_of(const std::vector<std::uint8_t>& frames, std::int64_t env, std::int64_t frame_bytes) {
  return Frame(frames.begin() + env * frame_bytes, frames.begin() + (env + 1) * frame_bytes);
}

}  // namespace surge::testing
