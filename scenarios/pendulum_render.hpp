#pragma once
// Pendulum as Gymnasium's PendulumEnv.render draws it (500 x 500, 2.2 units either way of the pivot):
// the red rod (1 long, 0.2 wide) at angle theta from upright, a red disc at each end and the black
// axle. Gymnasium also lays its "clockwise" arrow image over the pivot, scaled by the last torque;
// a frame here is a function of the state alone, so it is drawn as Gymnasium draws a state with no
// torque applied yet (after reset), without the arrow.
#include "scenarios/pendulum.hpp"
#include "sim/render.hpp"

namespace surge::render {

template <>
struct SceneOf<Pendulum> {
  static constexpr int kWidth = 500, kHeight = 500;

  SURGE_HD_INLINE static void build(const Pendulum::State& s, const Pendulum::Params&, Scene& scene) {
    const float scale = static_cast<float>(kWidth) / 4.4f;
    const float offset = static_cast<float>(kWidth / 2);
    const float rod_length = scale, half_width = 0.1f * scale;
    const float angle = s.theta + 1.5707963267948966f;
    const Colour red = {204, 77, 77};
    const Point corners[4] = {{0, -half_width}, {0, half_width}, {rod_length, half_width}, {rod_length, -half_width}};
    add_placed_polygon(scene, corners, 4, angle, {offset, offset}, red);
    const float end_radius = truncf(half_width) + 0.5f;
    add_disc(scene, {offset, offset}, end_radius, red);
    const Point end = rotated({rod_length, 0}, angle);
    add_disc(scene, truncated({end.x + offset, end.y + offset}), end_radius, red);
    add_disc(scene, {offset, offset}, truncf(0.05f * scale) + 0.5f, {0, 0, 0});
  }
};

}  // namespace surge::render
