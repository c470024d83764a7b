// The analytic work of each PPO phase against hand-computed values for a small network (4 -> 8 -> 2
// actions, 4 -> 8 -> 1 value) on N = 4 environments, T = 2 steps, E = 1 epoch of M = 2 minibatches;
// the parameter count against the learner's own parameter table.
#include <catch2/catch.hpp>

#include "rl/actor_critic.hpp"
#include "scenarios/registry.hpp"
#include "tools/bench/env_cost.hpp"
#include "tools/bench/ppo_cost.hpp"

using namespace surge;
using namespace surge::throughput;

namespace {

PpoShapes small_shapes() {
  PpoShapes s;
  s.obs_dim = 4;
  s.num_actions = 2;
  s.hidden = {8};
  s.num_envs = 4;
  s.num_steps = 2;
  s.update_epochs = 1;
  s.num_minibatches = 2;
  return s;
}

}  // namespace

TEST_CASE("an MLP's forward and backward work, layer by layer") {
  // Forward on 3 rows of 4 -> 8 -> 2: GEMM 2*3*8*4 + bias 24 = 216 FLOP, reading x 12, W 32, b 8 and
  // writing y 24 floats (304 B); tanh 24 FLOP, 24 floats read and written (192 B); GEMM 2*3*2*8 + 6 =
  // 102 FLOP, x 24 + W 16 + b 2 + y 6 floats (192 B).
  const PhaseWork forward = mlp_forward_work({4, 8, 2}, 3);
  CHECK(forward.flops == Approx(342));
  CHECK(forward.bytes == Approx(688));
  // Backward: layer 1 dW 96 FLOP / 184 B, db 12 / 44, dx 96 / 184, slope 72 / 288; layer 0 dW 192 / 272,
  // db 48 / 140 (no input gradient below the first layer).
  const PhaseWork backward = mlp_backward_work({4, 8, 2}, 3);
  CHECK(backward.flops == Approx(516));
  CHECK(backward.bytes == Approx(1112));
}

TEST_CASE("the parameter table's size matches the learner's own table") {
  const PpoShapes s = small_shapes();
  // Every slice rounded up to 64 floats: 4 slices per network, all under 64 floats.
  CHECK(parameter_table_floats(s) == 8 * 64);
  rl::NetworkConfig config;
  config.hidden = s.hidden;
  const rl::ActorCritic net(s.obs_dim, s.num_actions, config);
  CHECK(parameter_table_floats(s) == net.table().total());
  PpoShapes wide = s;
  wide.hidden = {64, 64};
  config.hidden = wide.hidden;
  const rl::ActorCritic wide_net(wide.obs_dim, wide.num_actions, config);
  CHECK(parameter_table_floats(wide) == wide_net.table().total());
  // A Gaussian head: the means' layer and the log-std slice.
  PpoShapes gaussian = wide;
  gaussian.num_actions = 0;
  gaussian.action_dim = 3;
  const rl::ActorCritic gaussian_net(gaussian.obs_dim, ActionKind::Continuous, gaussian.action_dim, config);
  CHECK(parameter_table_floats(gaussian) == gaussian_net.table().total());
}

TEST_CASE("one PPO iteration's phases on cartpole, by hand") {
  const auto phases = ppo_iteration_work(small_shapes(), scenario_spec("cartpole"));
  REQUIRE(phases.size() == 7);
  auto check = [&](std::size_t k, const char* name, double flops, double bytes) {
    INFO(name);
    CHECK(phases[k].name == name);
    CHECK(phases[k].flops == Approx(flops));
    CHECK(phases[k].bytes == Approx(bytes));
  };
  // Actor on 4 rows: 456 FLOP / 840 B; critic 388 / 788. Two steps of actor + 2 critics, one more critic.
  check(0, "policy forward", 2 * 456 + 5 * 388, 2 * 840 + 5 * 788);
  // 8 slots: 8 A + 3 = 19 FLOP, logits 8 B + action and log-probability 8 B.
  check(1, "sampling", 8 * 19, 8 * 16);
  // 30 FLOP per cartpole step; the step kernel moves 98 B.
  CHECK(env_step_kernel_bytes(scenario_spec("cartpole")) == 98);
  check(2, "env step", 8 * 30, 8 * 98);
  check(3, "GAE", 8 * 7, 8 * 18 + 4 * 4);
  // Per minibatch of 4: gather 4 * 2 * (16 + 4 + 16) = 288 B; actor and critic forward on 4 rows.
  check(4, "update forward", 2 * (456 + 388), 2 * (288 + 840 + 788));
  // Per minibatch: loss 4 * (16 * 2 + 40) = 288 FLOP / 4 * (16 + 32) = 192 B; actor backward 688 / 1384;
  // critic backward 552 / 1268.
  check(5, "update backward", 2 * (288 + 688 + 552), 2 * (192 + 1384 + 1268));
  // Adam over 512 floats, twice: 16 FLOP and 32 B each.
  check(6, "optimiser", 2 * 16 * 512, 2 * 32 * 512);
}

TEST_CASE("one PPO iteration's phases with a Gaussian policy on pendulum, by hand") {
  PpoShapes s = small_shapes();
  s.obs_dim = 3;
  s.num_actions = 0;
  s.action_dim = 1;
  const auto phases = ppo_iteration_work(s, scenario_spec("pendulum"));
  REQUIRE(phases.size() == 7);
  // 8 slots: 16 FLOP per dimension; the mean, sample, clipped sample and log-probability (16 B).
  CHECK(phases[1].flops == Approx(8 * 16));
  CHECK(phases[1].bytes == Approx(8 * 16));
  // Per minibatch of 4: gather 4 * 2 * (12 + 4 + 16) = 256 B, then the actor (3 -> 8 -> 1) and critic.
  const PhaseWork actor = mlp_forward_work({3, 8, 1}, 4), critic = mlp_forward_work({3, 8, 1}, 4);
  CHECK(phases[4].bytes == Approx(2 * (256 + actor.bytes + critic.bytes)));
  // Per minibatch: loss 4 * (14 + 40) = 216 FLOP / 4 * (16 + 32) = 192 B; the log-std GEMM 2 * 4 = 8 FLOP
  // / (4 + 4 + 1) * 4 = 36 B; both backward passes.
  const PhaseWork actor_back = mlp_backward_work({3, 8, 1}, 4), critic_back = mlp_backward_work({3, 8, 1}, 4);
  CHECK(phases[5].flops == Approx(2 * (216 + 8 + actor_back.flops + critic_back.flops)));
  CHECK(phases[5].bytes == Approx(2 * (192 + 36 + actor_back.bytes + critic_back.bytes)));
  // Adam over the table: 8 slices under 64 floats and the log-std, 9 * 64 floats.
  CHECK(phases[6].flops == Approx(2 * 16 * 9 * 64));
  CHECK_THROWS(ppo_iteration_work(s, scenario_spec("cartpole")));
}
