#pragma once
// What a checkpoint must hold beyond the agent (rl/io/checkpoint.hpp) for `surge train --resume` to
// continue a run exactly where it stopped: the trainer's device state (iteration counters, the Adam
// scalars, the ring of recent returns, the running episode returns), the environments' state
// (physics state, per-env parameters, step counters, episode accumulators, RNG offsets) and the
// metrics rows so far. Stored in the checkpoint file under /resume:
//   /resume              attributes train_state (int64 [4]: iteration, epochs_applied, last100_head,
//                        last100_count) and metrics_columns (text [C])
//   /resume/optimizer    float64 [7]: learning_rate, step, grad_norm_sq, grad_scale, step_size,
//                        bias_correction2_sqrt, frozen
//   /resume/metrics      float64 [rows][C]     the metrics.csv rows so far
//   /resume/recent_returns float64 [100]; /resume/running_return float32 [N]
//   /resume/env_state float32 [N][state_dim]; /resume/env_params [N][params] in the scenario's parameter
//   type (float32, or float64 for a scenario that keeps its parameters so);
//   /resume/env_episode_steps int32 [N]; /resume/env_episode_returns float32 [N]; /resume/env_rng_offsets uint64 [N]
//   /resume/reward_accumulator float32 [N], where normalize_reward: each env's discounted return so far
//   (the normalisation statistics themselves are the agent's, under /normalization)
// Built only where HDF5 was found.
#include <cstdint>
#include <string>
#include <vector>

#include "rl/adam.hpp"
#include "rl/train_state.hpp"

namespace surge {
class Engine;
}

namespace surge::rl {

class Trainer;
struct Checkpoint;

struct ResumeState {
  TrainState train_state{};
  OptimizerScalars optimizer{};
  std::vector<double> recent_returns;   // [kRecentEpisodes]
  std::vector<float> running_return;    // [N]
  std::vector<float> env_state;         // [N][state_dim]
  std::vector<double> env_params;       // [N][params], exactly as the engine held them
  bool env_params_float64 = false;      // whether they are (and are saved as) float64 rather than float32
  std::vector<std::int32_t> env_episode_steps;
  std::vector<float> env_episode_returns;
  std::vector<std::uint64_t> env_rng_offsets;
  std::vector<float> reward_accumulator;  // [N] where normalize_reward, else empty
  std::vector<std::string> metrics_columns;
  std::vector<std::vector<double>> metrics_rows;

  // Copies the device state to the host (waits for the trainer's stream).
  static ResumeState capture(const Trainer& trainer, Engine& engine);
  // Puts the agent and this state back into a trainer and engine built from the checkpoint's config;
  // throws InputError when their sizes differ from the checkpoint's.
  void restore(const Checkpoint& agent, Trainer& trainer, Engine& engine) const;
};

// Adds /resume to a checkpoint file written by write_checkpoint, or reads it; read throws InputError
// naming the path when the checkpoint has none (it was written by an older build or by hand).
void append_resume_state(const std::string& checkpoint_path, const ResumeState& state);
ResumeState read_resume_state(const std::string& checkpoint_path);

// A checkpoint with resume state, written whole or not at all: the agent (write_checkpoint) and /resume
// go into a temporary file that is renamed over `path` once complete.
void write_resumable_checkpoint(const std::string& path, const Trainer& trainer, const ResumeState& state);

}  // namespace surge::rl
