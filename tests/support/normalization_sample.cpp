// Runs the trainer's normalisation (rl/normalization.hpp) over a synthetic vectorised rollout and
// writes inputs and outputs as JSON, for check_normalization.py to replay through Gymnasium's own
// vector NormalizeObservation and NormalizeReward wrappers. Observations are counted and normalised
// step by step, the reset observation first; rewards are scaled after each of two rollouts, as the
// trainer does.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "rl/normalization.hpp"
#include "sim/philox.hpp"

namespace {

constexpr std::int64_t kEnvs = 5, kStepsPerRollout = 24, kRollouts = 2, kSteps = kStepsPerRollout * kRollouts;
constexpr int kDim = 3;
constexpr double kGamma = 0.97;

template <class T>
void write_array(std::FILE* out, const char* name, const std::vector<T>& values, bool last = false) {
  std::fprintf(out, "\"%s\": [", name);
  for (std::size_t k = 0; k < values.size(); ++k)
    std::fprintf(out, "%s%.9g", k ? ", " : "", static_cast<double>(values[k]));
  std::fprintf(out, "]%s\n", last ? "" : ",");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: normalization_sample OUT.json\n");
    return 2;
  }
  try {
    using namespace surge;
    const Device cpu = Device::cpu();
    Stream stream(cpu);
    Rng rng(2024, 0, 0);
    // Raw inputs: each observation dimension has its own offset and scale, with rare spikes that clipping catches.
    const float offset[kDim] = {-0.5f, 3.0f, 100.0f}, scale[kDim] = {0.05f, 2.0f, 30.0f};
    std::vector<float> obs(static_cast<std::size_t>((kSteps + 1) * kEnvs * kDim));
    for (std::size_t k = 0; k < obs.size(); ++k) {
      const int d = static_cast<int>(k % kDim);
      obs[k] = offset[d] + scale[d] * (2.0f * rng.uniform() - 1.0f);
      if (rng.uniform() < 0.01f) obs[k] += 1000.0f * scale[d];
    }
    std::vector<float> reward(static_cast<std::size_t>(kSteps * kEnvs));
    std::vector<std::uint8_t> terminated(reward.size()), truncated(reward.size());
    for (std::size_t s = 0; s < reward.size(); ++s) {
      reward[s] = -3.0f + 4.0f * rng.uniform();
      const float u = rng.uniform();
      terminated[s] = u < 0.06f;
      truncated[s] = !terminated[s] && u > 0.95f;
    }

    rl::NormalizationConfig config;
    config.normalize_obs = true;
    config.normalize_reward = true;
    config.gamma = kGamma;
    rl::Normalization normalization(cpu, config, kDim, kStepsPerRollout, kEnvs, stream);
    normalization.reset(stream);
    std::vector<float> normalized_obs = obs, scaled_reward = reward;
    for (std::int64_t t = 0; t <= kSteps; ++t) normalization.observe(stream, normalized_obs.data() + t * kEnvs * kDim);
    for (std::int64_t r = 0; r < kRollouts; ++r) {
      const std::int64_t first = r * kStepsPerRollout * kEnvs;
      const float* scaled =
          normalization.scale(stream, reward.data() + first, terminated.data() + first, truncated.data() + first);
      std::copy(scaled, scaled + kStepsPerRollout * kEnvs, scaled_reward.begin() + first);
    }
    stream.synchronize();

    std::FILE* out = std::fopen(argv[1], "w");
    if (!out) throw std::runtime_error(std::string("cannot write ") + argv[1]);
    std::fprintf(out,
                 "{\"steps\": %lld, \"envs\": %lld, \"dim\": %d, \"gamma\": %.17g, \"obs_clip\": %.17g, "
                 "\"reward_clip\": %.17g,\n",
                 static_cast<long long>(kSteps), static_cast<long long>(kEnvs), kDim, kGamma, config.obs_clip,
                 config.reward_clip);
    write_array(out, "obs", obs);
    write_array(out, "reward", reward);
    write_array(out, "terminated", terminated);
    write_array(out, "truncated", truncated);
    write_array(out, "normalized_obs", normalized_obs);
    write_array(out, "scaled_reward", scaled_reward, true);
    std::fprintf(out, "}\n");
    if (std::fclose(out) != 0) throw std::runtime_error(std::string("cannot finish ") + argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "normalization_sample: %s\n", e.what());
    return 1;
  }
  return 0;
}
