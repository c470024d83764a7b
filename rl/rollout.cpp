#include "rl/rollout.hpp"

#include "sim/error.hpp"

namespace surge::rl {

RolloutStorage::RolloutStorage(Device device, std::int64_t num_steps, std::int64_t num_envs, int obs_dim, int action_dim)
    : device_(device),
      num_steps_(num_steps),
      num_envs_(num_envs),
      obs_dim_(obs_dim),
      action_dim_(action_dim),
      obs_(device, (num_steps + 1) * num_envs * obs_dim),
      actions_(device, action_dim > 0 ? 0 : num_steps * num_envs),
      continuous_actions_(device, num_steps * num_envs * action_dim),
      logprob_(device, num_steps * num_envs),
      value_(device, (num_steps + 1) * num_envs),
      reward_(device, num_steps * num_envs),
      terminated_(device, num_steps * num_envs),
      truncated_(device, num_steps * num_envs),
      advantage_(device, num_steps * num_envs),
      returns_(device, num_steps * num_envs),
      final_obs_(device, num_envs * obs_dim),
      final_value_(device, num_steps * num_envs) {
  // final_obs is read by the critic every step but written only where episodes end: start it defined.
  Stream stream(device);
  zero_bytes(final_obs_.data(), device, final_obs_.bytes(), stream);
  stream.synchronize();
}

StepViews RolloutStorage::step_views(std::int64_t t) const {
  const std::int64_t n = num_envs_;
  return {{obs(t + 1), n * obs_dim_, device_}, {reward(t), n, device_}, {terminated(t), n, device_},
          {truncated(t), n, device_}, {final_obs(), n * obs_dim_, device_}};
}

ActionView RolloutStorage::action_view(std::int64_t t) const {
  SURGE_CHECK(!continuous(), "continuous actions reach the engine clipped, not from the rollout");
  return {{actions(t), num_envs_, device_}, {}};
}

std::size_t RolloutStorage::device_bytes() const {
  return obs_.bytes() + actions_.bytes() + continuous_actions_.bytes() + logprob_.bytes() + value_.bytes() + reward_.bytes() + terminated_.bytes() +
         truncated_.bytes() + advantage_.bytes() + returns_.bytes() + final_obs_.bytes() + final_value_.bytes();
}

std::vector<NamedTensorView> RolloutStorage::tensor_views() const {
  const std::int64_t t = num_steps_, n = num_envs_, d = obs_dim_;
  return {{"obs", TensorView::of(obs_.span(), {t + 1, n, d})},
          {"actions", continuous() ? TensorView::of(continuous_actions_.span(), {t, n, action_dim_})
                                   : TensorView::of(actions_.span(), {t, n})},
          {"logprob", TensorView::of(logprob_.span(), {t, n})},
          {"value", TensorView::of(value_.span(), {t + 1, n})},
          {"reward", TensorView::of(reward_.span(), {t, n})},
          {"terminated", TensorView::of(terminated_.span(), {t, n})},
          {"truncated", TensorView::of(truncated_.span(), {t, n})},
          {"adv", TensorView::of(advantage_.span(), {t, n})},
          {"ret", TensorView::of(returns_.span(), {t, n})},
          {"final_obs", TensorView::of(final_obs_.span(), {n, d})},
          {"final_value", TensorView::of(final_value_.span(), {t, n})}};
}

std::vector<RolloutStorage::Buffer> RolloutStorage::layout(std::int64_t t, std::int64_t n, int d, int action_dim) {
  const RolloutStorage::Buffer actions =
      action_dim > 0 ? RolloutStorage::Buffer{"rollout.actions", "[T][N][action_dim]", t * n * action_dim, sizeof(float)}
                     : RolloutStorage::Buffer{"rollout.actions", "[T][N]", t * n, sizeof(std::int32_t)};
  return {{"rollout.obs", "[T+1][N][obs_dim]", (t + 1) * n * d, sizeof(float)},
          actions,
          {"rollout.logprob", "[T][N]", t * n, sizeof(float)},
          {"rollout.value", "[T+1][N]", (t + 1) * n, sizeof(float)},
          {"rollout.reward", "[T][N]", t * n, sizeof(float)},
          {"rollout.terminated", "[T][N]", t * n, 1},
          {"rollout.truncated", "[T][N]", t * n, 1},
          {"rollout.adv", "[T][N]", t * n, sizeof(float)},
          {"rollout.ret", "[T][N]", t * n, sizeof(float)},
          {"rollout.final_obs", "[N][obs_dim]", n * d, sizeof(float)},
          {"rollout.final_value", "[T][N]", t * n, sizeof(float)}};
}

}  // namespace surge::rl
