#pragma once
// MountainCar and MountainCarContinuous as Gymnasium's render draws them (600 x 400, the valley's
// 1.8 units across): the hill y = 0.45 sin(3x) + 0.55 as a 100-point anti-aliased polyline, the black
// car (40 x 20, 10 above the hill, tilted by cos(3 position) radians), two grey wheels (radius 8) and the
// flag (a black pole 50 high at the goal, a yellow pennant). The two differ only in the goal position.
#include "scenarios/mountain_car.hpp"
#include "scenarios/mountain_car_continuous.hpp"
#include "sim/render.hpp"

namespace surge::render {

struct MountainCarScene {
  static constexpr int kWidth = 600, kHeight = 400;

  SURGE_HD_INLINE static float hill(float position) { return 0.45f * sinf(3.0f * position) + 0.55f; }

  SURGE_HD_INLINE static void build(float position, float goal_position, Scene& scene) {
    using namespace mountain_car_valley;
    const float scale = static_cast<float>(kWidth) / (kMaxPosition - kMinPosition);
    scene.has_curve = true;
    scene.curve = {
        0.0f,     static_cast<float>(kWidth), 0.45f * scale, 3.0f / scale, 3.0f * kMinPosition, 0.55f * scale, 100,
        {0, 0, 0}};
    const float clearance = 10.0f, car_half_width = 20.0f, car_height = 20.0f;
    const float tilt = cosf(3.0f * position);
    const Point base = {(position - kMinPosition) * scale, clearance + hill(position) * scale};
    const Point corners[4] = {
        {-car_half_width, 0}, {-car_half_width, car_height}, {car_half_width, car_height}, {car_half_width, 0}};
    add_placed_polygon(scene, corners, 4, tilt, base, {0, 0, 0});
    const float wheel_offsets[2] = {0.5f * car_half_width, -0.5f * car_half_width};
    for (float along : wheel_offsets) {
      const Point c = rotated({along, 0}, tilt);
      add_disc(scene, truncated({c.x + base.x, c.y + base.y}), truncf(car_height / 2.5f) + 0.5f, {128, 128, 128});
    }
    const float flag_x = truncf((goal_position - kMinPosition) * scale);
    const float flag_bottom = truncf(hill(goal_position) * scale), flag_top = flag_bottom + 50.0f;
    add_line(scene, {flag_x, flag_bottom}, {flag_x, flag_top}, {0, 0, 0});
    const Point pennant[3] = {{flag_x, flag_top}, {flag_x, flag_top - 10.0f}, {flag_x + 25.0f, flag_top - 5.0f}};
    add_polygon(scene, pennant, 3, {204, 204, 0});
  }
};

template <>
struct SceneOf<MountainCar> : MountainCarScene {
  SURGE_HD_INLINE static void build(const MountainCar::State& s, const MountainCar::Params&, Scene& scene) {
    MountainCarScene::build(s.position, MountainCar::kGoalPosition, scene);
  }
};

template <>
struct SceneOf<MountainCarContinuous> : MountainCarScene {
  SURGE_HD_INLINE static void build(const MountainCarContinuous::State& s, const MountainCarContinuous::Params&,
                                    Scene& scene) {
    MountainCarScene::build(s.position, MountainCarContinuous::kGoalPosition, scene);
  }
};

}  // namespace surge::render
