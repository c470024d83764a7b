#pragma once
// Episodes rebuilt from a rollout log's per-step flags: what `surge h5 episodes` prints.
#include <cstdint>
#include <vector>

namespace surge::rl {

struct LoggedEpisode {
  std::int64_t env_id = 0;
  std::int64_t end_iteration = 0;  // the iteration whose rollout it ended in
  std::int64_t end_step = 0;       // the rollout step it ended at, 0..T-1
  std::int64_t length = 0;         // steps, the ending one included
  float episode_return = 0.0f;     // summed in float32 in step order, as the environments sum it
  bool terminated = false, truncated = false;
};

// The logged rows, as read back (values are exact: float32 and small integers fit a double).
struct LoggedRollout {
  std::int64_t steps = 0, envs = 0;           // T and M
  std::vector<std::int64_t> iterations;       // [I], increasing
  std::int64_t first_iteration = 0;           // the run's first iteration: every env starts afresh there
  std::vector<std::int64_t> env_ids;          // [M]
  std::vector<double> reward;                 // [I][T][M]
  std::vector<double> terminated, truncated;  // [I][T][M], 0 or 1
  // Optional, [I][M]: each env's running episode at the start of the row's rollout. Without them an
  // episode's start is known only at first_iteration or after an end seen in consecutively logged rows.
  std::vector<double> start_return, start_length;
};

struct EpisodeReconstruction {
  std::vector<LoggedEpisode> episodes;  // in the order they ended: by iteration, step, then env
  std::int64_t partial = 0;             // episodes that ended in the log but began before what it holds
};

// Throws surge::Error if the arrays do not have the sizes that steps, envs and iterations imply.
EpisodeReconstruction reconstruct_episodes(const LoggedRollout& rollout);

}  // namespace surge::rl
