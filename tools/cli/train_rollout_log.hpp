#pragma once
// `surge train --log-rollouts`: the rollout log (rl/io/rollout_log.hpp) fed from the trainer's rollout
// storage and the engine's episode accumulators.
#include <cstdint>
#include <memory>
#include <string>

#include "rl/io/rollout_log.hpp"
#include "rl/trainer.hpp"
#include "sim/engine.hpp"
#include "sim/frame_source.hpp"
#include "sim/memory_plan.hpp"

namespace surge::cli {

struct RolloutLogRequest {
  std::string path;
  std::int64_t every = 10;  // log iterations 1, 1+K, 1+2K, ... (metrics.csv numbering)
  std::int64_t envs = 64;   // log envs 0 .. M-1 (at most all of them)
  int queue_depth = 4;      // iterations staged for the writer at most
};

// Opens the log (a new file, or when resuming at `resume_iteration` >= 1 the same file cut back to the
// iterations before it). The fields are obs, actions, logprob, value, reward, terminated, truncated,
// advantage and return per step, and start_episode_return, start_episode_length and physics per env.
// `obs` holds the environments' own observations: with normalize_obs, which normalises the rollout's
// in place, the trainer keeps a copy of the logged envs' (Trainer::keep_raw_observations).
// What logging adds to the training run's memory plan: with normalize_obs, the device copy of the logged
// envs' raw observations ([T+1][M][obs_dim] floats, Trainer::keep_raw_observations).
MemoryPlan rollout_log_memory_plan(const rl::TrainConfig& config, const ScenarioSpec& spec, Device device,
                                   std::int64_t log_envs);

std::unique_ptr<rl::RolloutLog> open_train_rollout_log(const RolloutLogRequest& request, Engine& engine,
                                                       rl::Trainer& trainer, std::int64_t resume_iteration,
                                                       const FrameSource* frames = nullptr);

// ", frames stored in 2.445% of their raw 2.0 MiB" for a closed log that holds pixel frames, else "".
std::string rollout_log_frames_note(const std::string& path);

}  // namespace surge::cli
