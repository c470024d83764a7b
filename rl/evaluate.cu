#include "rl/evaluate.hpp"

#include <algorithm>

#include "rl/categorical.hpp"
#include "rl/gaussian.hpp"
#include "sim/error.hpp"
#include "sim/parallel.cuh"

namespace surge::rl {

void accumulate_first_episode(const Stream& stream, std::int64_t num_envs, const float* reward,
                              const std::uint8_t* terminated, const std::uint8_t* truncated, std::uint8_t* finished,
                              double* returns) {
  parallel_for(stream, num_envs, [=] SURGE_HD(std::int64_t i) {
    if (finished[i]) return;
    returns[i] += static_cast<double>(reward[i]);
    if (terminated[i] || truncated[i]) finished[i] = 1;
  });
}

std::vector<double> evaluate_policy(Engine& engine, const ActorCritic& network, Span<const float> params, bool sample,
                                    const FrozenObsNormalization& normalization, const EvaluationWatcher& watch,
                                    FrameSource* frames) {
  const Device device = engine.device();
  const ScenarioSpec& spec = engine.spec();
  const std::int64_t n = engine.num_envs();
  SURGE_CHECK(spec.obs_dim == network.obs_dim() && spec.action_kind == network.action_kind() &&
                  spec.num_actions == network.num_actions() && spec.action_dim == network.action_dim(),
              "the network does not fit the scenario");
  SURGE_CHECK(params.size == network.table().total() && params.device == device, "parameters do not fit the network");
  const bool normalized = !normalization.moments.empty();
  SURGE_CHECK(!normalized ||
                  (normalization.moments.size == moments_size(spec.obs_dim) && normalization.moments.device == device),
              "observation statistics do not fit the scenario");
  SURGE_CHECK(!network.pixels() ||
                  (frames && frames->num_envs() == n && frames->stack_bytes() == network.encoder()->frame_size()),
              "a pixel policy needs a frame store of the evaluation's environments");
  Stream stream(device);
  // In place, with the frozen statistics; the clip in a device array of its own for the whole evaluation.
  AgentHyper clip{};
  clip.obs_clip = normalization.clip;
  const OwnAgentHyper clip_on_device(stream, clip);
  auto normalize = [&](float* rows) {
    if (normalized) normalize_rows(stream, rows, n, spec.obs_dim, normalization.moments.data, clip_on_device.get(), 0);
  };
  PpoGradient<float> workspace(device, network, n);
  const int action_dim = network.action_dim();
  DeviceBuffer<float> obs(device, n * spec.obs_dim), logits(device, n * network.head_width()), reward(device, n);
  DeviceBuffer<std::int32_t> actions(device, network.continuous() ? 0 : n);
  DeviceBuffer<float> continuous_actions(device, n * action_dim), bounds(device, 2 * action_dim);  // [N][A], [2][A]
  DeviceBuffer<std::uint8_t> terminated(device, n), truncated(device, n), finished(device, n);
  DeviceBuffer<double> returns(device, n);
  DeviceBuffer<std::uint8_t> stacks(device, network.pixels() ? n * frames->stack_bytes() : 0);  // [K][H][W][stack*C]
  const StreamDrain drain(stream);  // the buffers above outlive the work enqueued on them
  zero_bytes(finished.data(), device, finished.bytes(), stream);
  zero_bytes(returns.data(), device, returns.bytes(), stream);
  if (network.continuous()) {
    std::vector<float> low_high = spec.action_low;
    low_high.insert(low_high.end(), spec.action_high.begin(), spec.action_high.end());
    from_host(bounds.span(), low_high, stream);
  }
  engine.observe(obs.span(), stream);
  normalize(obs.data());
  if (network.pixels()) frames->begin(stream);
  std::int64_t row = 0;  // the frame store's row of the current observation
  // The policy's input at the current step: the observations, or the features of the current stacks.
  auto policy_input = [&]() -> const float* {
    if (!network.pixels()) return obs.data();
    if (row == frames->num_steps()) {
      frames->next_iteration(stream);
      row = 0;
    }
    frames->gather_row(row, stacks.span(), stream);
    return workspace.encode(stream, params.data, stacks.data(), n);
  };
  auto watch_step = [&] {
    if (!watch) return;
    stream.synchronize();  // the watcher reads on streams of its own
    watch(returns.cspan(), finished.cspan());
  };
  watch_step();
  // Every episode ends by the time limit; check now and then whether all have, to stop early.
  const std::int64_t check_every = 32;
  for (std::int64_t t = 0; t < spec.max_episode_steps; ++t) {
    workspace.forward_actor(stream, params.data, policy_input(), n, logits.data());
    ActionDraw draw{engine.seed(), nullptr, 0, t};
    if (network.continuous()) {
      // Without sampling the action is the Gaussian's mean; either way the environment gets it clipped.
      sample_gaussian_actions(stream, logits.data(), params.data + network.log_std_offset(), n, action_dim,
                              bounds.data(), bounds.data() + action_dim, draw, !sample, nullptr, nullptr,
                              continuous_actions.data());
    } else {
      sample_actions(stream, logits.data(), n, spec.num_actions, draw, !sample, actions.data(), nullptr);
    }
    const ActionView chosen{actions.cspan(), continuous_actions.cspan()};
    const StepViews out{obs.span(), reward.span(), terminated.span(), truncated.span(), {}};
    if (network.pixels())
      frames->step(row++, chosen, out, stream);
    else
      engine.step(chosen, out, stream);
    normalize(obs.data());
    accumulate_first_episode(stream, n, reward.data(), terminated.data(), truncated.data(), finished.data(),
                             returns.data());
    watch_step();
    if ((t + 1) % check_every == 0) {
      const std::vector<std::uint8_t> done = to_host(finished.cspan(), stream);
      if (std::all_of(done.begin(), done.end(), [](std::uint8_t f) { return f != 0; })) break;
    }
  }
  return to_host(returns.cspan(), stream);
}

}  // namespace surge::rl
