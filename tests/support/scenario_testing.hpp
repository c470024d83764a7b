#pragma once
// Checks every scenario test shares: Gymnasium's golden transitions (tests/support/scenario_golden.hpp),
// reset distributions, episodes run through an engine to audit time limits, auto-reset and the episode
// tally, and domain randomisation.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "scenarios/registry.hpp"
#include "sim/engine.hpp"
#include "sim/memory.hpp"
#include "sim/stream.hpp"
#include "tests/support/scenario_golden.hpp"

namespace surge::testing {

// The states of n freshly reset environments, [n][state_dim].
inline std::vector<float> reset_states(const std::string& name, std::int64_t n, std::uint64_t seed) {
  auto engine = make_engine(name, Device::cpu(), n, seed);
  Stream stream(Device::cpu());
  return to_host(engine->states(), stream);
}

// Coordinate k of rows of width `width` must look like U(low, high): inside the bounds, with mean
// within four standard errors and variance within 3% of (high - low)^2 / 12.
inline void check_uniform(const std::vector<float>& rows, int width, int k, double low, double high,
                          const std::string& what) {
  const std::size_t n = rows.size() / width;
  double sum = 0, sum_sq = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double v = rows[i * width + k];
    INFO(what << " of row " << i << " = " << v);
    REQUIRE(v >= low);
    REQUIRE(v <= high);
    sum += v;
    sum_sq += v * v;
  }
  const double mean = sum / n, variance = sum_sq / n - mean * mean;
  const double expected_variance = (high - low) * (high - low) / 12.0;
  INFO(what << ": mean " << mean << ", variance " << variance);
  CHECK(std::abs(mean - 0.5 * (low + high)) < 4.0 * std::sqrt(expected_variance / n));
  CHECK(std::abs(variance - expected_variance) < 0.03 * expected_variance);
}

// Coordinate k of every row must equal `value` exactly.
inline void check_constant(const std::vector<float>& rows, int width, int k, float value, const std::string& what) {
  for (std::size_t i = 0; i < rows.size() / width; ++i) {
    INFO(what << " of row " << i);
    REQUIRE(rows[i * width + k] == value);
  }
}

// Where a reset puts one state coordinate: U(low, high), or exactly `low` when high == low; the bounds
// as float32 has them, as the draws do.
struct ResetRange {
  float low, high;
};

// The states of many freshly reset environments, coordinate by coordinate.
inline void check_resets(const std::string& name, std::uint64_t seed, const std::vector<ResetRange>& ranges) {
  const ScenarioSpec& spec = scenario_spec(name);
  REQUIRE(static_cast<int>(ranges.size()) == spec.state_dim);
  const std::vector<float> states = reset_states(name, 20000, seed);
  for (int k = 0; k < spec.state_dim; ++k) {
    const ResetRange& range = ranges[static_cast<std::size_t>(k)];
    if (range.low == range.high)
      check_constant(states, spec.state_dim, k, range.low, spec.state_names[k]);
    else
      check_uniform(states, spec.state_dim, k, range.low, range.high, spec.state_names[k]);
  }
}

// Both MountainCar tasks start at rest somewhere in U(-0.6, -0.4) (scenarios/mountain_car_valley.hpp),
// and observe their state as it is.
inline const std::vector<ResetRange> kValleyStart = {{-0.6f, -0.4f}, {0.0f, 0.0f}};
inline bool is_valley_start(const float* obs) { return obs[0] >= -0.6f && obs[0] <= -0.4f && obs[1] == 0.0f; }

// A policy writes the action for one observation: action[0] is the index for discrete scenarios.
using Policy = std::function<void(const float* obs, float* action)>;

// T steps of every environment of an engine under `policy` (run on the host), as a rollout records them.
struct PolicyRun {
  std::int64_t steps = 0, envs = 0;
  std::vector<float> obs;                           // [T+1][N][obs_dim]; obs[t] is what the policy saw at step t
  std::vector<float> final_obs;                     // [T][N][obs_dim]; meaningful where the episode ended at t
  std::vector<float> reward;                        // [T][N]
  std::vector<std::uint8_t> terminated, truncated;  // [T][N]
};

inline PolicyRun run_policy(Engine& engine, std::int64_t steps, const Policy& policy) {
  const Device device = engine.device();
  Stream stream(device);
  const ScenarioSpec& spec = engine.spec();
  const std::int64_t n = engine.num_envs();
  const int obs_dim = spec.obs_dim;
  const bool discrete = spec.action_kind == ActionKind::Discrete;
  const int action_width = discrete ? 1 : spec.action_dim;
  PolicyRun run;
  run.steps = steps;
  run.envs = n;
  DeviceBuffer<float> obs(device, n * obs_dim), final_obs(device, n * obs_dim), reward(device, n);
  DeviceBuffer<std::uint8_t> terminated(device, n), truncated(device, n);
  DeviceBuffer<std::int32_t> discrete_actions(device, discrete ? n : 0);
  DeviceBuffer<float> continuous_actions(device, discrete ? 0 : n * spec.action_dim);
  engine.observe(obs.span(), stream);
  std::vector<float> current = to_host(obs.cspan(), stream);
  run.obs = current;
  std::vector<float> action(action_width);
  for (std::int64_t t = 0; t < steps; ++t) {
    std::vector<std::int32_t> discrete_host;
    std::vector<float> continuous_host;
    for (std::int64_t i = 0; i < n; ++i) {
      policy(&current[i * obs_dim], action.data());
      if (discrete)
        discrete_host.push_back(static_cast<std::int32_t>(action[0]));
      else
        continuous_host.insert(continuous_host.end(), action.begin(), action.end());
    }
    if (discrete)
      from_host(discrete_actions.span(), discrete_host, stream);
    else
      from_host(continuous_actions.span(), continuous_host, stream);
    engine.step(ActionView{discrete_actions.cspan(), continuous_actions.cspan()},
                StepViews{obs.span(), reward.span(), terminated.span(), truncated.span(), final_obs.span()}, stream);
    current = to_host(obs.cspan(), stream);
    run.obs.insert(run.obs.end(), current.begin(), current.end());
    const auto final_host = to_host(final_obs.cspan(), stream);
    run.final_obs.insert(run.final_obs.end(), final_host.begin(), final_host.end());
    const auto reward_host = to_host(reward.cspan(), stream);
    run.reward.insert(run.reward.end(), reward_host.begin(), reward_host.end());
    const auto terminated_host = to_host(terminated.cspan(), stream);
    run.terminated.insert(run.terminated.end(), terminated_host.begin(), terminated_host.end());
    const auto truncated_host = to_host(truncated.cspan(), stream);
    run.truncated.insert(run.truncated.end(), truncated_host.begin(), truncated_host.end());
  }
  return run;
}

// What the flags of a run say about its episodes, after checking them against the time limit.
struct EpisodeAudit {
  std::int64_t ended = 0, terminated = 0, truncated = 0;
  double return_sum = 0, length_sum = 0;
  std::vector<std::int64_t> lengths;  // of every episode that ended, in order of (env, time)
};

// Walks each environment's run: an episode is truncated exactly when its step count reaches the
// limit, and the observation after every end must be a first observation (`is_reset_obs`).
inline EpisodeAudit audit_episodes(const PolicyRun& run, const ScenarioSpec& spec,
                                   const std::function<bool(const float* obs)>& is_reset_obs) {
  EpisodeAudit audit;
  const int obs_dim = spec.obs_dim;
  for (std::int64_t i = 0; i < run.envs; ++i) {
    std::int64_t length = 0;
    double episode_return = 0;
    for (std::int64_t t = 0; t < run.steps; ++t) {
      const std::int64_t slot = t * run.envs + i;
      length += 1;
      episode_return += run.reward[slot];
      INFO("env " << i << ", step " << t << ", episode length " << length);
      REQUIRE(run.truncated[slot] == (length >= spec.max_episode_steps ? 1 : 0));
      if (run.terminated[slot] || run.truncated[slot]) {
        audit.ended += 1;
        audit.terminated += run.terminated[slot];
        audit.truncated += run.truncated[slot];
        audit.return_sum += episode_return;
        audit.length_sum += length;
        audit.lengths.push_back(length);
        REQUIRE(is_reset_obs(&run.obs[((t + 1) * run.envs + i) * obs_dim]));
        length = 0;
        episode_return = 0;
      }
    }
  }
  return audit;
}

// Every episode ran out of time: `episodes` of them ended, each truncated at exactly `time_limit` steps.
inline void check_all_truncated(const EpisodeAudit& audit, std::int64_t episodes, std::int64_t time_limit) {
  CHECK(audit.ended == episodes);
  CHECK(audit.terminated == 0);
  CHECK(audit.truncated == episodes);
  for (auto length : audit.lengths) CHECK(length == time_limit);
}

// Every environment reached its goal at least once, and none ran out of time.
inline void check_all_reach_goal(const EpisodeAudit& audit, std::int64_t envs) {
  CHECK(audit.terminated >= envs);
  CHECK(audit.truncated == 0);
}

// The engine's own tally must agree with the audit of the flags and rewards.
inline void check_episode_stats(Engine& engine, const EpisodeAudit& audit) {
  Stream stream(engine.device());
  const EpisodeStats stats = engine.episode_stats(stream);
  CHECK(stats.episodes == audit.ended);
  CHECK(stats.length_sum == audit.length_sum);
  // The engine accumulates each return in float32.
  CHECK(stats.return_sum == Approx(audit.return_sum).epsilon(1e-5).margin(1e-3));
}

// `envs` CPU environments of `name` run `steps` steps under `policy`, their episodes audited (the
// observation after every end must satisfy `is_reset_obs`) and the engine's tally checked against it.
struct AuditedRun {
  PolicyRun run;
  EpisodeAudit audit;
};
inline AuditedRun run_audited(const std::string& name, std::int64_t envs, std::uint64_t seed, std::int64_t steps,
                              const Policy& policy, const std::function<bool(const float* obs)>& is_reset_obs) {
  auto engine = make_engine(name, Device::cpu(), envs, seed);
  AuditedRun audited{run_policy(*engine, steps, policy), {}};
  audited.audit = audit_episodes(audited.run, engine->spec(), is_reset_obs);
  check_episode_stats(*engine, audited.audit);
  return audited;
}

// Domain randomisation: with `ranges` randomised ({name, low, high}), every env's parameters lie in
// their ranges and differ across envs, the rest keep their defaults, and an episode's end redraws them.
struct ParamRange {
  const char* name;
  double low, high;
};

inline void check_randomized_params(const std::string& name, const std::vector<ParamRange>& ranges,
                                    const Policy& policy, std::int64_t steps_until_every_env_ended) {
  const ScenarioSpec& spec = scenario_spec(name);
  PhysicsConfig physics = PhysicsConfig::defaults(spec);
  std::vector<int> randomized;
  for (const ParamRange& range : ranges) {
    const int j = spec.param_index(range.name);
    INFO("parameter " << range.name);
    REQUIRE(j >= 0);
    physics.low[j] = spec.round_param(range.low);
    physics.high[j] = spec.round_param(range.high);
    physics.randomized[j] = 1;
    randomized.push_back(j);
  }
  const std::int64_t n = 256;
  auto engine = make_engine(name, Device::cpu(), n, 11, physics);
  Stream stream(Device::cpu());
  const int width = spec.param_count();
  auto check_params = [&](const std::vector<double>& params) {
    for (int j = 0; j < width; ++j) {
      const bool is_randomized = std::find(randomized.begin(), randomized.end(), j) != randomized.end();
      std::vector<double> values;
      for (std::int64_t i = 0; i < n; ++i) values.push_back(params[i * width + j]);
      INFO("parameter " << spec.params[j].name);
      if (is_randomized) {
        for (double v : values) {
          REQUIRE(v >= physics.low[j]);
          REQUIRE(v <= physics.high[j]);
        }
        std::sort(values.begin(), values.end());
        const auto distinct = std::unique(values.begin(), values.end()) - values.begin();
        CHECK(distinct > n * 9 / 10);
      } else {
        for (double v : values) REQUIRE(v == spec.params[j].default_value);
      }
    }
  };
  const std::vector<double> first = params_to_host(*engine, stream);
  check_params(first);
  const PolicyRun run = run_policy(*engine, steps_until_every_env_ended, policy);
  const std::vector<double> later = params_to_host(*engine, stream);
  check_params(later);
  // Every env has ended at least one episode, so each has drawn fresh parameters.
  for (std::int64_t i = 0; i < n; ++i) {
    bool ended = false;
    for (std::int64_t t = 0; t < run.steps; ++t) ended |= run.terminated[t * n + i] || run.truncated[t * n + i];
    REQUIRE(ended);
    for (int j : randomized) {
      INFO("env " << i << ", parameter " << spec.params[j].name);
      CHECK(later[i * width + j] != first[i * width + j]);
    }
  }
}

// A value outside physical sense is bad input, named in the message: a fixed `bad` value, a range
// from `bad`, a range whose low exceeds its high, and a range that is not a number.
inline void check_rejects_bad_physics(const std::string& name, const std::string& param, double bad) {
  const ScenarioSpec& spec = scenario_spec(name);
  const int j = spec.param_index(param);
  REQUIRE(j >= 0);
  const double fine = spec.params[j].default_value;
  auto check_rejected = [&](std::uint8_t randomized, double value, double low, double high) {
    PhysicsConfig physics = PhysicsConfig::defaults(spec);
    physics.randomized[j] = randomized;
    physics.value[j] = value;
    physics.low[j] = low;
    physics.high[j] = high;
    INFO("value " << value << ", range [" << low << ", " << high << "]" << (randomized ? "" : " unused"));
    CHECK_THROWS_AS(make_engine(name, Device::cpu(), 4, 1, physics), InputError);
    CHECK_THROWS_WITH(make_engine(name, Device::cpu(), 4, 1, physics), Catch::Contains(param));
  };
  check_rejected(0, bad, fine, fine);
  check_rejected(1, fine, bad, fine);
  check_rejected(1, fine, fine * 2 + 1, fine);
  check_rejected(1, fine, fine, std::nan(""));
}

}  // namespace surge::testing
