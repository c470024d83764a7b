#pragma once
// A training configuration small enough for a test on the CPU backend.
#include <cstdint>
#include <utility>
#include <vector>

#include "rl/train_config.hpp"

namespace surge::testing {

// `iterations` iterations of `num_envs` x `num_steps` env-steps, with the given hidden layers and seed;
// every other key at its default.
inline rl::TrainConfig small_train_config(std::int64_t num_envs, std::int64_t num_steps, std::int64_t iterations,
                                          std::vector<int> hidden, std::uint64_t seed) {
  rl::TrainConfig config;
  config.num_envs = num_envs;
  config.num_steps = num_steps;
  config.total_steps = num_envs * num_steps * iterations;
  config.hidden = std::move(hidden);
  config.seed = seed;
  return config;
}

}  // namespace surge::testing
