#pragma once
// The work of one environment step, counted from the scenario's shapes and source, for the roofline.
//
// Bytes are the traffic every step must make, in the layout VecEnv keeps (sim/vec_env.cuh): a
// step reads and writes the env's state, reads its physics parameters, reads and writes its step
// counter and running return, and writes the observation, the reward and the two flags. Episode ends
// (the reset, the tally, the parameter redraw) come once in tens to hundreds of steps and are left
// out. FLOPs are those of the scenario's step() and observe() and of drawing a random action, counted
// by hand from the source (add, subtract, multiply, divide, and each sqrt/sin/cos/fmod as one);
// comparisons, clamps and integer work are not counted.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/engine.hpp"
#include "tools/bench/roofline.hpp"

namespace surge::throughput {

// FLOPs of one step() plus observe() of the scenario. Throws surge::Error for a scenario without a
// count (add one to tools/bench/env_cost.cpp beside the others).
double scenario_step_flops(const std::string& scenario);

// FLOPs of drawing one uniform random action (0 for discrete scenarios: integer work only).
double random_action_flops(const ScenarioSpec& spec);

// Bytes VecEnv keeps per environment: state, parameters, step counter, running return, the two RNG
// offsets and the finished-episode tally.
std::size_t engine_bytes_per_env(const ScenarioSpec& spec);

// Bytes of the step kernel alone for one env: its action read, state read and written, parameters
// read, step counter and return read and written, the outputs written.
std::size_t env_step_kernel_bytes(const ScenarioSpec& spec);

// One env-step of `surge bench env --mode fused`: one launch runs T steps with the env held in
// registers, so only the rollout writes are paid per step, plus the env's load and store once per
// launch, shared among its T steps.
PhaseWork fused_env_step_work(const ScenarioSpec& spec, std::int64_t steps_per_launch);

// One env-step of `surge bench env --mode step`, as training runs it: a kernel draws the actions into
// a buffer (reading and writing each env's action RNG offset), then the step kernel reads them back.
PhaseWork stepwise_env_step_work(const ScenarioSpec& spec);

}  // namespace surge::throughput
