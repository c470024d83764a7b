#pragma once
// Pixel observations: every environment drawn after each step into a rollout-long frame store that
// keeps each frame once, and stacks of the last `stack` frames read from it by index.
//
// Layout. Observation row t (t in [0, T]) is frame slot t + stack - 1; the stack - 1 slots before row 0
// hold the previous iteration's last frames, so a stack never reaches outside the store:
//   frames [T + stack][N][H][W][C]   uint8, each frame once
//   first  [T + stack][N]            1 where a frame is the first of its episode (a reset frame)
// The stack of (t, env) is the frames of rows t - stack + 1 .. t, oldest first, where every frame from
// before the episode's first frame is replaced by that first frame: Gymnasium's FrameStackObservation
// with its default padding_type="reset" (gymnasium 1.x), which fills the stack with the reset
// observation when an episode begins.
//
// Final observations. Where an episode ended at step t, its last frame (the state before the
// auto-reset) goes to final_frames [N][H][W][C], and its final stack is rows t - stack + 2 .. t and
// that frame: what Gymnasium's wrapper returns from the step that ended the episode, and what
// truncation bootstrapping values. Like the vector final_obs it is valid only where an episode ended at
// the latest step.
//
// Stacks are gathered as [rows][H][W][stack * C], channel k * C + c being channel c of the k-th oldest
// frame: the NHWC layout the CNN encoder reads, with the stack as input channels (the Atari encoder's
// first convolution mixes all frames at once).
#include <cstdint>
#include <memory>

#include "scenarios/scene_render.hpp"
#include "sim/buffer_table.hpp"
#include "sim/engine.hpp"
#include "sim/frame_source.hpp"
#include "sim/memory.hpp"

namespace surge {

// Bytes of a rollout's pixel observations kept as a frame store against every stack stored whole
// (obs [T+1][N] stacks plus the final stacks [N]).
struct PixelMemoryPlan {
  std::int64_t frame_bytes = 0;    // one frame, H * W * C
  std::int64_t store_bytes = 0;    // the frame store's buffers, as allocated
  std::int64_t stacked_bytes = 0;  // every observation's stack stored whole
  double saving() const { return store_bytes > 0 ? static_cast<double>(stacked_bytes) / store_bytes : 0.0; }
};

// Throws InputError for a stack below 1 or above the rollout's length (num_steps), or a bad frame.
void check_pixel_shape(std::int64_t num_steps, FrameSize frame, int stack);

class PixelFrameStore final : public FrameSource {
 public:
  // A store for `engine`'s environments (the engine must outlive it), num_steps >= stack.
  PixelFrameStore(Engine& engine, std::int64_t num_steps, FrameSize frame, int stack);

  std::int64_t num_steps() const override { return num_steps_; }
  std::int64_t num_envs() const override { return num_envs_; }
  FrameSize frame_size() const { return frame_; }
  int stack() const override { return stack_; }
  std::int64_t frame_bytes() const override { return frame_.bytes(); }

  // After engine.reset(): row 0 is every environment's first frame.
  void begin(const Stream& stream) override;
  // Step t of every environment: engine.step(actions, out) (out.terminated and out.truncated are
  // required), then row t + 1's frames, its first flags, and the final frames where an episode ended.
  void step(std::int64_t t, const ActionView& actions, const StepViews& out, const Stream& stream) override;
  // Rows T - stack + 1 .. T become rows -(stack - 1) .. 0: the next iteration starts where this one ended.
  void next_iteration(const Stream& stream) override;

  // Row `row`'s frames, [N][H][W][C], row in [-(stack - 1), T].
  std::uint8_t* frames(std::int64_t row) const override;
  std::uint8_t* first_flags(std::int64_t row) const override;                  // [N], 1 where a frame starts an episode
  std::uint8_t* final_frames() const { return arena_.data(b_.final_frames); }  // [N][H][W][C]

  // The stacks of row t for every environment, into out [N][H][W][stack * C].
  void gather_row(std::int64_t t, Span<std::uint8_t> out, const Stream& stream) const override;
  // The stacks of rows given as flat indices t * N + env (t in [0, T)), into out [rows][H][W][stack * C].
  void gather(Span<const std::int64_t> indices, Span<std::uint8_t> out, const Stream& stream) const override;
  // The final stacks of the episodes that ended at step t, into out [N][H][W][stack * C] (other
  // environments' stacks are meaningless, as final_obs is there).
  void gather_final(std::int64_t t, Span<std::uint8_t> out, const Stream& stream) const override;

  std::size_t device_bytes() const { return arena_.device_bytes(); }
  static BufferTable table(const ScenarioSpec& spec, std::int64_t num_steps, std::int64_t num_envs, FrameSize frame,
                           int stack);
  static PixelMemoryPlan plan(const ScenarioSpec& spec, std::int64_t num_steps, std::int64_t num_envs, FrameSize frame,
                              int stack);

 private:
  struct Buffers {
    Slot<std::uint8_t> frames, first, final_frames, previous_params;
    Slot<float> previous_states;
  };
  static BufferTable table(const ScenarioSpec& spec, std::int64_t num_steps, std::int64_t num_envs, FrameSize frame,
                           int stack, Buffers& b);
  std::int64_t slot(std::int64_t row) const { return row + stack_ - 1; }

  Engine& engine_;
  std::int64_t num_steps_, num_envs_;
  FrameSize frame_;
  int stack_;
  Buffers b_;
  BufferArena arena_;
};

// A store of `rows` rows for a run's pixel observations (square frames of frame_size, grey or RGB,
// `stack` to a stack), or null where `pixels` is false (vector observations).
inline std::unique_ptr<PixelFrameStore> make_frame_store(Engine& engine, bool pixels, std::int64_t rows,
                                                         std::int64_t frame_size, bool grayscale, std::int64_t stack) {
  if (!pixels) return nullptr;
  const int side = static_cast<int>(frame_size);
  return std::make_unique<PixelFrameStore>(engine, rows, FrameSize{side, side, grayscale ? 1 : 3},
                                           static_cast<int>(stack));
}

}  // namespace surge
