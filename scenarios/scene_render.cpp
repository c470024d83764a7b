#include "scenarios/scene_render.hpp"

#include <cstring>

#include "scenarios/acrobot_render.hpp"
#include "scenarios/cartpole_render.hpp"
#include "scenarios/mountain_car_render.hpp"
#include "scenarios/pendulum_render.hpp"
#include "sim/error.hpp"

namespace surge {
namespace {

struct Drawer {
  const char* name;
  int width, height, state_dim, param_count;
  void (*draw)(const float* state, const double* params, const render::FrameView& frame);
};

template <class S>
void draw_one(const float* state, const double* params, const render::FrameView& frame) {
  typename S::State s;
  static_assert(sizeof(s) == sizeof(float) * S::kStateNames.size(), "a state is its floats, in order");
  std::memcpy(&s, state, sizeof(s));
  typename S::ParamType values[S::kParams.size()];
  static_assert(sizeof(typename S::Params) == sizeof(values), "parameters are their values, in order");
  for (std::size_t k = 0; k < S::kParams.size(); ++k)
    values[k] = static_cast<typename S::ParamType>(params ? params[k] : S::kParams[k].default_value);
  typename S::Params p;
  std::memcpy(&p, values, sizeof(p));
  render::draw_state<S>(s, p, frame);
}

template <class S>
Drawer drawer() {
  return {S::kName,
          render::SceneOf<S>::kWidth,
          render::SceneOf<S>::kHeight,
          static_cast<int>(S::kStateNames.size()),
          static_cast<int>(S::kParams.size()),
          &draw_one<S>};
}

const Drawer& find_drawer(const std::string& scenario) {
  static const Drawer drawers[] = {drawer<CartPole>(), drawer<MountainCar>(), drawer<Acrobot>(), drawer<Pendulum>(),
                                   drawer<MountainCarContinuous>()};
  for (const Drawer& d : drawers)
    if (scenario == d.name) return d;
  throw InputError("scenario '" + scenario + "' has no renderer");
}

}  // namespace

FrameSize reference_frame_size(const std::string& scenario) {
  const Drawer& d = find_drawer(scenario);
  return {d.width, d.height, 3};
}

void render_states(const std::string& scenario, const float* states, const double* params, std::int64_t n,
                   FrameSize size, std::uint8_t* frames) {
  const Drawer& d = find_drawer(scenario);
  SURGE_CHECK(size.width > 0 && size.height > 0 && (size.channels == 1 || size.channels == 3), "bad frame size");
  for (std::int64_t i = 0; i < n; ++i) {
    const render::FrameView frame{frames + i * size.bytes(), size.width, size.height, size.channels,
                                  static_cast<std::int64_t>(size.width) * size.channels};
    d.draw(states + i * d.state_dim, params ? params + i * d.param_count : nullptr, frame);
  }
}

}  // namespace surge
