#pragma once
// CartPole as Gymnasium's CartPoleEnv.render draws it (600 x 400): a world 4.8 wide, the black cart
// (50 x 30, its top at y = 115), the pole (10 wide, 2 * length long, rotated by -theta about the
// axle a quarter of the cart's height above its centre), the axle (radius 5) and the track (y = 100).
// Polygon corners are truncated to whole pixels as pygame's gfxdraw does.
#include "scenarios/cartpole.hpp"
#include "sim/render.hpp"

namespace surge::render {

template <>
struct SceneOf<CartPole> {
  static constexpr int kWidth = 600, kHeight = 400;

  SURGE_HD_INLINE static void build(const CartPole::State& s, const CartPole::Params& p, Scene& scene) {
    const float scale = 0.5f * kWidth / CartPole::kXThreshold;  // 125 pixels per unit
    const float pole_width = 10.0f, pole_length = scale * 2.0f * p.length;
    const float cart_half_width = 25.0f, cart_half_height = 15.0f, axle_offset = 7.5f;
    const float cart_x = s.x * scale + 0.5f * static_cast<float>(kWidth), cart_y = 100.0f;
    const Point cart[4] = {{-cart_half_width, -cart_half_height},
                           {-cart_half_width, cart_half_height},
                           {cart_half_width, cart_half_height},
                           {cart_half_width, -cart_half_height}};
    add_placed_polygon(scene, cart, 4, 0.0f, {cart_x, cart_y}, {0, 0, 0});
    const float half = 0.5f * pole_width;
    const Point corners[4] = {{-half, -half}, {-half, pole_length - half}, {half, pole_length - half}, {half, -half}};
    add_placed_polygon(scene, corners, 4, -s.theta, {cart_x, cart_y + axle_offset}, {202, 152, 101});
    add_disc(scene, truncated({cart_x, cart_y + axle_offset}), half + 0.5f, {129, 132, 203});
    add_line(scene, {0.0f, cart_y}, {static_cast<float>(kWidth), cart_y}, {0, 0, 0});
  }
};

}  // namespace surge::render
