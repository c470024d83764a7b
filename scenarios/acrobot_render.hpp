#pragma once
// Acrobot as Gymnasium's AcrobotEnv.render draws it (500 x 500): the scene spans 2.2 link lengths
// (link_length_1 + 1 + 0.2) either way of the pivot; the black line at the height the tip must pass
// (one unit above the pivot); each link a cyan bar 0.2 wide from its joint, with a yellow disc at the
// joint. Corners are truncated to whole pixels as pygame's gfxdraw does; discs have whole-pixel
// centres and radii.
#include "scenarios/acrobot.hpp"
#include "sim/render.hpp"

namespace surge::render {

template <>
struct SceneOf<Acrobot> {
  static constexpr int kWidth = 500;  // square, as Gymnasium's SCREEN_DIM
  static constexpr int kHeight = kWidth;

  SURGE_HD_INLINE static void build(const Acrobot::State& s, const Acrobot::Params& p, Scene& scene) {
    const float link_1 = static_cast<float>(p.link_length_1), link_2 = 1.0f;  // Gymnasium's LINK_LENGTH_2
    const float scale = static_cast<float>(kWidth) / (2.0f * (link_1 + link_2 + 0.2f));
    const float offset = 0.5f * static_cast<float>(kWidth);
    add_line(scene, truncated({-2.2f * scale + offset, scale + offset}),
             truncated({2.2f * scale + offset, scale + offset}), {0, 0, 0});
    const Point joints[2] = {{offset, offset},
                             {link_1 * sinf(s.theta1) * scale + offset, -link_1 * cosf(s.theta1) * scale + offset}};
    const float angles[2] = {s.theta1 - 1.5707963267948966f, s.theta1 + s.theta2 - 1.5707963267948966f};
    const float lengths[2] = {link_1 * scale, link_2 * scale};
    const float half_width = 0.1f * scale;
    for (int k = 0; k < 2; ++k) {
      const Point corners[4] = {{0, -half_width}, {0, half_width}, {lengths[k], half_width}, {lengths[k], -half_width}};
      add_placed_polygon(scene, corners, 4, angles[k], joints[k], {0, 204, 204});
      add_disc(scene, truncated(joints[k]), truncf(half_width) + 0.5f, {204, 204, 0});
    }
  }
};

}  // namespace surge::render
