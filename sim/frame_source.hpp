#pragma once
// What a learner needs of a rollout's pixel observations, behind an interface so that rl/ can train on
// them without naming the renderers: scenarios/pixel_obs.hpp's PixelFrameStore implements it (every frame
// stored once, stacks gathered by index). Rows are the rollout's observation rows 0..T; rows
// -(stack - 1)..-1 hold the frames the current iteration's first stacks reach back to.
#include <cstdint>

#include "sim/engine.hpp"
#include "sim/memory.hpp"
#include "sim/stream.hpp"

namespace surge {

class FrameSource {
 public:
  virtual ~FrameSource() = default;

  virtual std::int64_t num_steps() const = 0;    // T
  virtual std::int64_t num_envs() const = 0;     // N
  virtual int stack() const = 0;                 // frames per observation
  virtual std::int64_t frame_bytes() const = 0;  // one frame, H * W * C
  std::int64_t stack_bytes() const { return frame_bytes() * stack(); }

  // After engine.reset(): row 0 is every environment's first frame.
  virtual void begin(const Stream& stream) = 0;
  // The engine's step t with out.terminated and out.truncated, then row t + 1's frames and the final
  // frames of the episodes that ended.
  virtual void step(std::int64_t t, const ActionView& actions, const StepViews& out, const Stream& stream) = 0;
  // Rows T - stack + 1 .. T become rows -(stack - 1) .. 0.
  virtual void next_iteration(const Stream& stream) = 0;

  // Row `row`'s frames [N][frame_bytes] and first-of-episode flags [N], row in [-(stack - 1), T].
  virtual std::uint8_t* frames(std::int64_t row) const = 0;
  virtual std::uint8_t* first_flags(std::int64_t row) const = 0;

  // Stacks as [rows][H][W][stack * C]: row t of every environment; flat indices t * N + env (t < T);
  // the final stacks of the episodes that ended at step t.
  virtual void gather_row(std::int64_t t, Span<std::uint8_t> out, const Stream& stream) const = 0;
  virtual void gather(Span<const std::int64_t> indices, Span<std::uint8_t> out, const Stream& stream) const = 0;
  virtual void gather_final(std::int64_t t, Span<std::uint8_t> out, const Stream& stream) const = 0;
};

}  // namespace surge
