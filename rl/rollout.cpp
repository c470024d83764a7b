#include "rl/rollout.hpp"

#include "sim/error.hpp"

namespace surge::rl {

BufferTable RolloutStorage::table(std::int64_t t, std::int64_t n, int d, int action_dim, Buffers& b) {
  const bool continuous = action_dim > 0;
  const std::int64_t a = action_dim;
  BufferTable table;
  b.obs = table.add<float>("rollout.obs", {t + 1, n, d}, "[T+1][N][obs_dim]",
                           "observations; obs[T] starts the next iteration");
  if (continuous)
    b.continuous_actions = table.add<float>("rollout.actions", {t, n, a}, "[T][N][action_dim]",
                                            "the policy's samples before clipping to the action bounds");
  else
    b.actions = table.add<std::int32_t>("rollout.actions", {t, n}, "[T][N]", "the policy's discrete actions");
  b.logprob = table.add<float>("rollout.logprob", {t, n}, "[T][N]", "log-probability of each action when sampled");
  b.value = table.add<float>("rollout.value", {t + 1, n}, "[T+1][N]", "the critic's value of each observation");
  b.reward = table.add<float>("rollout.reward", {t, n}, "[T][N]", "the environments' rewards, unscaled");
  b.terminated =
      table.add<std::uint8_t>("rollout.terminated", {t, n}, "[T][N]", "1 where an episode ended in a terminal state");
  b.truncated = table.add<std::uint8_t>("rollout.truncated", {t, n}, "[T][N]", "1 where an episode hit its time limit");
  b.advantage = table.add<float>("rollout.adv", {t, n}, "[T][N]", "GAE advantages");
  b.returns = table.add<float>("rollout.ret", {t, n}, "[T][N]", "advantages plus values: the critic's targets");
  b.final_obs = table.add<float>("rollout.final_obs", {n, d}, "[N][obs_dim]",
                                 "the last observation of each episode that ended at the latest step");
  b.final_value = table.add<float>("rollout.final_value", {t, n}, "[T][N]",
                                   "the critic's value of final_obs, read by GAE where an episode was truncated");
  return table;
}

BufferTable RolloutStorage::table(std::int64_t num_steps, std::int64_t num_envs, int obs_dim, int action_dim) {
  Buffers unused;
  return table(num_steps, num_envs, obs_dim, action_dim, unused);
}

RolloutStorage::RolloutStorage(Device device, std::int64_t num_steps, std::int64_t num_envs, int obs_dim,
                               int action_dim)
    : device_(device), num_steps_(num_steps), num_envs_(num_envs), obs_dim_(obs_dim), action_dim_(action_dim) {
  // The arena is zeroed: final_obs, read by the critic every step but written only where episodes end,
  // starts defined.
  Stream stream(device);
  arena_ = BufferArena(device, table(num_steps, num_envs, obs_dim, action_dim, b_), stream);
  stream.synchronize();
}

StepViews RolloutStorage::step_views(std::int64_t t) const {
  const std::int64_t n = num_envs_;
  return {{obs(t + 1), n * obs_dim_, device_},
          {reward(t), n, device_},
          {terminated(t), n, device_},
          {truncated(t), n, device_},
          {final_obs(), n * obs_dim_, device_}};
}

ActionView RolloutStorage::action_view(std::int64_t t) const {
  SURGE_CHECK(!continuous(), "continuous actions reach the engine clipped, not from the rollout");
  return {{actions(t), num_envs_, device_}, {}};
}

}  // namespace surge::rl
