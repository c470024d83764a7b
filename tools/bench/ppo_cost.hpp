#pragma once
// The work of each phase of one PPO iteration, counted from the shapes, kernel by kernel as rl/ runs
// them (rl/trainer.cpp): every kernel reads its inputs from memory and writes its outputs there, so
// the bytes are the traffic between kernels; FLOPs count add, subtract, multiply, divide and each
// exp, log, tanh or sqrt as one, a GEMM as 2 m n k.
#include <cstdint>
#include <vector>

#include "sim/engine.hpp"
#include "tools/bench/roofline.hpp"

namespace surge::throughput {

struct PpoShapes {
  int obs_dim = 0;
  int num_actions = 0;               // discrete actions: a categorical policy
  int action_dim = 0;                // continuous actions: a diagonal Gaussian's dimensions (num_actions 0)
  std::vector<int> hidden;           // both networks' hidden widths
  std::int64_t num_envs = 0;         // N
  std::int64_t num_steps = 0;        // T
  std::int64_t update_epochs = 0;    // E
  std::int64_t num_minibatches = 0;  // M

  std::int64_t batch() const { return num_envs * num_steps; }
  std::int64_t minibatch() const { return batch() / num_minibatches; }
  int head_width() const { return action_dim > 0 ? action_dim : num_actions; }
  std::vector<int> actor_dims() const;   // obs, hidden..., head_width
  std::vector<int> critic_dims() const;  // obs, hidden..., 1
};

// A multilayer perceptron of layer widths `dims` ([in, hidden..., out], tanh or ReLU between) on
// `rows` rows: each layer a GEMM with the bias in its epilogue, each hidden layer an activation
// kernel that reads and rewrites the GEMM's output.
PhaseWork mlp_forward_work(const std::vector<int>& dims, std::int64_t rows);
// Its backward pass as rl::mlp_backward runs it: per layer the weight and bias gradients as GEMMs,
// and below the first layer the input gradient GEMM and the activation-slope kernel.
PhaseWork mlp_backward_work(const std::vector<int>& dims, std::int64_t rows);
// Floats of the actor and critic parameter table: every weight and bias slice rounded up to 64
// floats (256 bytes), as the ParamTable aligns them, and a Gaussian's log-std slice. The optimiser
// runs over all of them.
std::int64_t parameter_table_floats(const PpoShapes& shapes);

// One iteration, phase by phase, in this order: policy forward (the actor and critic on every rollout
// step, the critic on the final observations and on the bootstrap observation), sampling, env step,
// GAE, update forward (minibatch gather and both networks, E M times), update backward (the PPO loss
// and both backward passes), optimiser (Adam with gradient-norm clipping).
std::vector<PhaseWork> ppo_iteration_work(const PpoShapes& shapes, const ScenarioSpec& spec);

}  // namespace surge::throughput
