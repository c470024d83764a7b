#include "rl/io/rollout_episodes.hpp"

#include "sim/error.hpp"

namespace surge::rl {

EpisodeReconstruction reconstruct_episodes(const LoggedRollout& r) {
  const std::size_t rows = r.iterations.size(), steps = static_cast<std::size_t>(r.steps),
                    envs = static_cast<std::size_t>(r.envs);
  const std::size_t cells = rows * steps * envs;
  SURGE_CHECK(r.env_ids.size() == envs, "env_id does not match the number of logged environments");
  SURGE_CHECK(r.reward.size() == cells && r.terminated.size() == cells && r.truncated.size() == cells,
              "reward and flags must be [iterations][steps][envs]");
  const bool has_start = !r.start_return.empty() && !r.start_length.empty();
  SURGE_CHECK(!has_start || (r.start_return.size() == rows * envs && r.start_length.size() == rows * envs),
              "start_episode_return and start_episode_length must be [iterations][envs]");

  // Each env's running episode: whether its start is known, and its return and length so far.
  std::vector<char> known(envs, 0);
  std::vector<float> running_return(envs, 0.0f);
  std::vector<std::int64_t> running_length(envs, 0);
  EpisodeReconstruction out;
  for (std::size_t k = 0; k < rows; ++k) {
    const bool follows_previous = k > 0 && r.iterations[k] == r.iterations[k - 1] + 1;
    for (std::size_t m = 0; m < envs; ++m) {
      if (has_start) {
        known[m] = 1;
        running_return[m] = static_cast<float>(r.start_return[k * envs + m]);
        running_length[m] = static_cast<std::int64_t>(r.start_length[k * envs + m]);
      } else if (!follows_previous) {
        // Every env starts afresh at the run's first iteration; after a gap the running episode's start is unknown.
        known[m] = r.iterations[k] == r.first_iteration;
        running_return[m] = 0.0f;
        running_length[m] = 0;
      }
    }
    for (std::size_t t = 0; t < steps; ++t) {
      for (std::size_t m = 0; m < envs; ++m) {
        const std::size_t cell = (k * steps + t) * envs + m;
        running_return[m] += static_cast<float>(r.reward[cell]);
        running_length[m] += 1;
        const bool terminated = r.terminated[cell] != 0, truncated = r.truncated[cell] != 0;
        if (!terminated && !truncated) continue;
        if (known[m]) {
          out.episodes.push_back({r.env_ids[m], r.iterations[k], static_cast<std::int64_t>(t), running_length[m],
                                  running_return[m], terminated, truncated});
        } else {
          ++out.partial;
        }
        known[m] = 1;  // the auto-reset starts the next episode at the next step
        running_return[m] = 0.0f;
        running_length[m] = 0;
      }
    }
  }
  return out;
}

}  // namespace surge::rl
