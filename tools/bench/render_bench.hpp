#pragma once
// surge bench env --render WxH: rendering every environment's frame after each step.
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

}  // namespace surge::cli
