// Drawing many environments' states: one parallel_for item per frame (CPU) or frame row (CUDA).
// Compiled by nvcc when CUDA is on, else as plain C++.
#include "scenarios/scene_render.hpp"

#include <vector>

#include "scenarios/acrobot_render.hpp"
#include "scenarios/cartpole_render.hpp"
#include "scenarios/mountain_car_render.hpp"
#include "scenarios/pendulum_render.hpp"
#include "sim/error.hpp"
#include "sim/parallel.cuh"

namespace surge {
namespace {

// Rows [band * rows_per_item, (band + 1) * rows_per_item) of one frame, item index = frame * bands + band.
// The scene is built once per item: on the CPU an item is a whole frame (the scene's trigonometry and
// the curve's samples once per frame, thousands of frames for the cores to share); on CUDA a single row,
// so that rows, not whole frames, spread over the device's threads.
template <class S>
struct DrawRows {
  const typename S::State* states;   // [N]
  const typename S::Params* params;  // [N]
  int width, height, channels, rows_per_item;
  std::uint8_t* frames;  // [N][height][width][channels]

  SURGE_HD void operator()(std::int64_t index) const {
    const int bands = (height + rows_per_item - 1) / rows_per_item;
    const std::int64_t env = index / bands;
    const int first_row = static_cast<int>(index - env * bands) * rows_per_item;
    const int end_row = first_row + rows_per_item < height ? first_row + rows_per_item : height;
    const std::int64_t row_bytes = static_cast<std::int64_t>(width) * channels;
    const render::FrameView frame{frames + env * height * row_bytes, width, height, channels, row_bytes};
    render::Scene scene;
    render::build_scene<S>(states[env], params[env], scene);
    for (int row = first_row; row < end_row; ++row) render::draw_row(scene, frame, row);
  }
};

template <class S>
void draw_frames(const Stream& stream, const void* states, const void* params, std::int64_t n, FrameSize size,
                 std::uint8_t* frames) {
  static_assert(sizeof(typename S::State) == sizeof(float) * S::kStateNames.size(), "a state is its floats");
  static_assert(sizeof(typename S::Params) == sizeof(typename S::ParamType) * S::kParams.size(),
                "parameters are their values, in order");
  const int rows_per_item = stream.device().is_cpu() ? size.height : 1;
  const DrawRows<S> draw{static_cast<const typename S::State*>(states),
                         static_cast<const typename S::Params*>(params),
                         size.width,
                         size.height,
                         size.channels,
                         rows_per_item,
                         frames};
  const std::int64_t bands = (size.height + rows_per_item - 1) / rows_per_item;
  parallel_for(stream, n * bands, draw, 64 * static_cast<std::int64_t>(size.width) * rows_per_item);
}

// Parameters as doubles ([n][count], or null for the defaults) -> the scenario's own Params rows.
template <class S>
std::vector<typename S::Params> params_rows(const double* params, std::int64_t n) {
  std::vector<typename S::Params> rows(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    auto* values = reinterpret_cast<typename S::ParamType*>(&rows[static_cast<std::size_t>(i)]);
    for (std::size_t k = 0; k < S::kParams.size(); ++k)
      values[k] =
          static_cast<typename S::ParamType>(params ? params[i * S::kParams.size() + k] : S::kParams[k].default_value);
  }
  return rows;
}

template <class S>
void draw_on_host(const float* states, const double* params, std::int64_t n, FrameSize size, std::uint8_t* frames) {
  const std::vector<typename S::Params> rows = params_rows<S>(params, n);
  draw_frames<S>(Stream(Device::cpu()), states, rows.data(), n, size, frames);
}

struct Drawer {
  const char* name;
  int width, height;
  void (*on_host)(const float*, const double*, std::int64_t, FrameSize, std::uint8_t*);
  void (*on_stream)(const Stream&, const void*, const void*, std::int64_t, FrameSize, std::uint8_t*);
};

template <class S>
Drawer drawer() {
  return {S::kName, render::SceneOf<S>::kWidth, render::SceneOf<S>::kHeight, &draw_on_host<S>, &draw_frames<S>};
}

const Drawer& find_drawer(const std::string& scenario) {
  static const Drawer drawers[] = {drawer<CartPole>(), drawer<MountainCar>(), drawer<Acrobot>(), drawer<Pendulum>(),
                                   drawer<MountainCarContinuous>()};
  for (const Drawer& d : drawers)
    if (scenario == d.name) return d;
  throw InputError("scenario '" + scenario + "' has no renderer");
}

void check_size(FrameSize size) {
  SURGE_CHECK(size.width > 0 && size.height > 0 && (size.channels == 1 || size.channels == 3), "bad frame size");
}

}  // namespace

FrameSize reference_frame_size(const std::string& scenario) {
  const Drawer& d = find_drawer(scenario);
  return {d.width, d.height, 3};
}

void render_states(const std::string& scenario, const float* states, const double* params, std::int64_t n,
                   FrameSize size, std::uint8_t* frames) {
  check_size(size);
  find_drawer(scenario).on_host(states, params, n, size, frames);
}

void render_engine(Engine& engine, FrameSize size, Span<std::uint8_t> frames, const Stream& stream) {
  check_size(size);
  const std::int64_t n = engine.num_envs();
  SURGE_CHECK(frames.size == n * size.bytes() && frames.device == engine.device() && stream.device() == engine.device(),
              "frames do not fit the engine");
  find_drawer(engine.spec().name).on_stream(stream, engine.states().data, engine.params().data, n, size, frames.data);
}

}  // namespace surge
