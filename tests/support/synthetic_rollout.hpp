#pragma once
// A small rollout on the CPU whose every value follows a formula of (iteration, step, env,
// component), for writing rollout logs in tests and reading them back. check_rollout_log.py holds
// the same formulas for h5py.
#include <cstdint>
#include <vector>

#include "rl/io/rollout_log.hpp"
#include "rl/io/rollout_schema.hpp"

namespace surge::testing {

struct SyntheticRollout {
  static constexpr std::int64_t num_envs = 10, steps = 6, obs_dim = 3;
  static constexpr std::int64_t first_env = 3, log_envs = 4;

  static float obs(std::int64_t i, std::int64_t t, std::int64_t e, std::int64_t c) {
    return static_cast<float>(i * 1000 + t * 10 + e) + 0.25f * static_cast<float>(c);
  }
  static std::int32_t action(std::int64_t i, std::int64_t t, std::int64_t e) {
    return static_cast<std::int32_t>((i + t + e) % 2);
  }
  static float reward(std::int64_t i, std::int64_t t, std::int64_t e) {
    return 0.5f + 0.25f * static_cast<float>((i + 2 * t + e) % 3);
  }
  static std::uint8_t terminated(std::int64_t i, std::int64_t t, std::int64_t e) {
    return (i * steps + t + e) % 7 == 6;
  }
  static std::uint8_t truncated(std::int64_t i, std::int64_t t, std::int64_t e) {
    return !terminated(i, t, e) && (i * steps + t + 2 * e) % 11 == 10;
  }
  static float value(std::int64_t i, std::int64_t t, std::int64_t e) {
    return -static_cast<float>(i) - 0.5f * static_cast<float>(t * 16 + e);
  }
  // Taken at the start of iteration i; the test overwrites them after begin_iteration.
  static float start_return(std::int64_t i, std::int64_t e) {
    return 0.5f * static_cast<float>(i) + static_cast<float>(e);
  }
  static std::int32_t start_length(std::int64_t i, std::int64_t e) { return static_cast<std::int32_t>(3 * i + e); }

  std::vector<float> obs_buffer = std::vector<float>((steps + 1) * num_envs * obs_dim);      // [T+1][N][obs_dim]
  std::vector<std::int32_t> actions = std::vector<std::int32_t>(steps * num_envs);           // [T][N]
  std::vector<float> rewards = std::vector<float>(steps * num_envs);                         // [T][N]
  std::vector<std::uint8_t> terminated_flags = std::vector<std::uint8_t>(steps * num_envs);  // [T][N]
  std::vector<std::uint8_t> truncated_flags = std::vector<std::uint8_t>(steps * num_envs);   // [T][N]
  std::vector<float> values = std::vector<float>((steps + 1) * num_envs);                    // [T+1][N]
  std::vector<float> start_returns = std::vector<float>(num_envs);                           // [N]
  std::vector<std::int32_t> start_lengths = std::vector<std::int32_t>(num_envs);             // [N]

  void fill_begin(std::int64_t i) {
    for (std::int64_t e = 0; e < num_envs; ++e) {
      start_returns[e] = start_return(i, e);
      start_lengths[e] = start_length(i, e);
    }
  }
  // What the rollout of iteration i writes; the extra time row of obs and value gets junk.
  void fill_rollout(std::int64_t i) {
    for (std::int64_t t = 0; t <= steps; ++t)
      for (std::int64_t e = 0; e < num_envs; ++e) {
        for (std::int64_t c = 0; c < obs_dim; ++c)
          obs_buffer[(t * num_envs + e) * obs_dim + c] = t < steps ? obs(i, t, e, c) : -1e9f;
        values[t * num_envs + e] = t < steps ? value(i, t, e) : -1e9f;
        if (t == steps) continue;
        actions[t * num_envs + e] = action(i, t, e);
        rewards[t * num_envs + e] = reward(i, t, e);
        terminated_flags[t * num_envs + e] = terminated(i, t, e);
        truncated_flags[t * num_envs + e] = truncated(i, t, e);
      }
  }
  void scribble_begin_fields() {  // what the rollout would do to the per-env accumulators
    for (std::int64_t e = 0; e < num_envs; ++e) {
      start_returns[e] = -7.0f;
      start_lengths[e] = -7;
    }
  }

  std::vector<rl::LogField> fields() const {
    using rl::LogCapture;
    using rl::LogDtype;
    return {
        {rl::kObsField,
         LogDtype::Float32,
         steps,
         {obs_dim},
         obs_buffer.data(),
         LogCapture::AtEnd,
         "observation acted on"},
        {rl::kActionsField, LogDtype::Int32, steps, {}, actions.data(), LogCapture::AtEnd, "action taken"},
        {rl::kRewardField, LogDtype::Float32, steps, {}, rewards.data(), LogCapture::AtEnd, ""},
        {rl::kTerminatedField, LogDtype::UInt8, steps, {}, terminated_flags.data(), LogCapture::AtEnd, ""},
        {rl::kTruncatedField, LogDtype::UInt8, steps, {}, truncated_flags.data(), LogCapture::AtEnd, ""},
        {rl::kValueField, LogDtype::Float32, steps, {}, values.data(), LogCapture::AtEnd, ""},
        {rl::kStartEpisodeReturnField, LogDtype::Float32, 0, {}, start_returns.data(), LogCapture::AtBegin, ""},
        {rl::kStartEpisodeLengthField, LogDtype::Int32, 0, {}, start_lengths.data(), LogCapture::AtBegin, ""},
    };
  }

  rl::RolloutLogOptions options(const std::string& path, std::int64_t every) const {
    rl::RolloutLogOptions o;
    o.path = path;
    o.num_envs = num_envs;
    o.first_env = first_env;
    o.log_envs = log_envs;
    o.every = every;
    o.attributes = {{"scenario", std::string("synthetic")},
                    {"seed", std::int64_t(42)},
                    {"physics_names", std::vector<std::string>{"gravity", "length"}},
                    {"obs_names", std::vector<std::string>{"position", "speed", "spin"}},
                    {"physics_value", std::vector<float>{9.8f, 0.5f}},
                    {"config", std::string("[ppo]\nlearning_rate = 0.00025\n")}};
    return o;
  }

  // One training iteration as the trainer drives the log.
  // Returns whether the log took the iteration.
  bool run_iteration_logged(rl::RolloutLog& log, std::int64_t i, const Stream& stream) {
    fill_begin(i);
    const bool logged = log.begin_iteration(i, stream);
    scribble_begin_fields();
    fill_rollout(i);
    log.end_iteration(global_step(i), stream);
    return logged;
  }
  void run_iteration(rl::RolloutLog& log, std::int64_t i, const Stream& stream) {
    run_iteration_logged(log, i, stream);
  }
  static std::int64_t global_step(std::int64_t i) { return (i + 1) * steps * num_envs; }
};

}  // namespace surge::testing
