#pragma once
// surge bench env --render WxH: rendering every environment's frame after each step; and
// surge bench env --observation pixels: pixel observations stepped into a frame store.
#include <cstdint>

#include "scenarios/scene_render.hpp"
#include "sim/device.hpp"
#include "sim/engine.hpp"

namespace surge::cli {

struct RenderBenchConfig {
  const ScenarioSpec* spec = nullptr;
  Device device;
  std::int64_t num_envs = 4096, steps = 16;
  int repeats = 5;
  std::uint64_t seed = 1;
  FrameSize frame;
};

// Steps N environments T times with random actions, drawing all N frames after every step into one
// [N][H][W][C] uint8 buffer on the device; prints the median rates (frames alone, and step + frame)
// and the bytes written per env-step. Returns the process exit code.
int run_render_bench(const RenderBenchConfig& config);

// Pixel observations as a rollout collects them (scenarios/pixel_obs.hpp): T steps into a frame store
// of T rows (each step: the engine's step, every frame drawn, the final frames of ended episodes), then
// the stacks the policy would read gathered for every row. Prints the store's memory plan against
// storing every stack, the median env-steps/s without and with the gather, and the bytes written per
// env-step. `frame_stack` is the stack length; config.steps the rollout's T; `dry_run` prints the memory
// plan and stops. Returns the exit code.
int run_pixel_bench(const RenderBenchConfig& config, int frame_stack, bool dry_run);

}  // namespace surge::cli
