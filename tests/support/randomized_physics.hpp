#pragma once
// CartPole's default physics with the pole's mass redrawn at every reset, so that parameters travel
// through resets: for the engine tests on both backends.
#include "scenarios/registry.hpp"
#include "sim/engine.hpp"

namespace surge::testing {

inline PhysicsConfig randomized_physics() {
  const ScenarioSpec& spec = scenario_spec("cartpole");
  PhysicsConfig physics = PhysicsConfig::defaults(spec);
  const int masspole = spec.param_index("masspole");
  physics.randomized[masspole] = 1;
  physics.low[masspole] = 0.05f;
  physics.high[masspole] = 0.2f;
  return physics;
}

}  // namespace surge::testing
