#pragma once
// Drawing environment states as pictures: on the host (`surge render`, the policy videos) or for every
// environment of an engine on its device.
// The drawing itself is the single-source code in sim/render.hpp and scenarios/<name>_render.hpp.
#include <cstdint>
#include <string>

#include "sim/engine.hpp"
#include "sim/memory.hpp"

namespace surge {

struct FrameSize {
  int width = 0, height = 0;
  int channels = 3;  // 3 (RGB) or 1 (grey)
  std::int64_t bytes() const { return static_cast<std::int64_t>(width) * height * channels; }
};

// The size Gymnasium's render_mode="rgb_array" draws `scenario` at (600 x 400, 500 x 500), RGB.
FrameSize reference_frame_size(const std::string& scenario);

// Draws `n` states ([n][state_dim], the engine's layout) under their parameters ([n][param_count] as
// doubles, or null for the defaults) into `frames` ([n][height][width][channels]).
void render_states(const std::string& scenario, const float* states, const double* params, std::int64_t n,
                   FrameSize size, std::uint8_t* frames);

// Draws every environment of `engine` (its current states, under its parameters) into `frames`
// ([N][height][width][channels] on the engine's device), enqueued on `stream`; does not wait.
void render_engine(Engine& engine, FrameSize size, Span<std::uint8_t> frames, const Stream& stream);

}  // namespace surge
