// Data parallelism without MPI: a rank's share of the environments (Engine::first_env) is exactly the
// global environments it is given, random streams included, and the policy's action draws follow the
// same numbering. This is what lets P ranks of N environments step the P·N environments of one process
// (tests/support/data_parallel_check.cpp checks the whole training under mpirun).
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <vector>

#include "rl/categorical.hpp"
#include "rl/collective.hpp"
#include "scenarios/registry.hpp"
#include "sim/philox.hpp"
#include "tests/support/randomized_physics.hpp"

using namespace surge;

namespace {

// One step's outputs of an engine of n environments, in host memory (the CPU backend).
struct Step {
  explicit Step(std::int64_t n, int obs_dim)
      : actions(n), obs(n * obs_dim), final_obs(n * obs_dim), reward(n), terminated(n), truncated(n) {}
  std::vector<std::int32_t> actions;
  std::vector<float> obs, final_obs, reward;
  std::vector<std::uint8_t> terminated, truncated;

  void run(Engine& engine, const Stream& stream) {
    const std::int64_t n = engine.num_envs();
    const Device cpu = Device::cpu();
    engine.random_actions({actions.data(), n, cpu}, {}, stream);
    const StepViews views{{obs.data(), static_cast<std::int64_t>(obs.size()), cpu},
                          {reward.data(), n, cpu},
                          {terminated.data(), n, cpu},
                          {truncated.data(), n, cpu},
                          {final_obs.data(), static_cast<std::int64_t>(final_obs.size()), cpu}};
    engine.step(ActionView{{actions.data(), n, cpu}, {}}, views, stream);
  }
};

template <class T>
bool same_slice(const std::vector<T>& whole, const std::vector<T>& part, std::size_t offset) {
  for (std::size_t k = 0; k < part.size(); ++k)
    if (whole[offset + k] != part[k]) return false;
  return true;
}

}  // namespace

TEST_CASE("a rank's environments are the global environments it is given", "[ranks]") {
  const std::int64_t n = 8, ranks = 3;
  const int obs_dim = scenario_spec("cartpole").obs_dim;
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  auto whole = make_engine("cartpole", cpu, n * ranks, 77, testing::randomized_physics());
  std::vector<std::unique_ptr<Engine>> shares;
  for (std::int64_t r = 0; r < ranks; ++r)
    shares.push_back(make_engine("cartpole", cpu, n, 77, testing::randomized_physics(), r * n));
  CHECK(shares[2]->first_env() == 2 * n);

  Step all(n * ranks, obs_dim);
  std::vector<Step> parts(ranks, Step(n, obs_dim));
  bool same = true;
  for (int t = 0; t < 600 && same; ++t) {  // past the 500-step limit: every environment has reset
    all.run(*whole, stream);
    for (std::int64_t r = 0; r < ranks; ++r) {
      Step& part = parts[r];
      part.run(*shares[r], stream);
      same = same && same_slice(all.actions, part.actions, r * n) && same_slice(all.obs, part.obs, r * n * obs_dim) &&
             same_slice(all.reward, part.reward, r * n) && same_slice(all.terminated, part.terminated, r * n) &&
             same_slice(all.truncated, part.truncated, r * n);
      for (std::int64_t i = 0; i < n; ++i)
        if (part.terminated[i] || part.truncated[i])
          for (int k = 0; k < obs_dim; ++k)
            same = same && part.final_obs[i * obs_dim + k] == all.final_obs[(r * n + i) * obs_dim + k];
    }
  }
  CHECK(same);
  double episodes = 0.0;
  for (auto& share : shares) episodes += share->episode_stats(stream).episodes;
  CHECK(episodes == whole->episode_stats(stream).episodes);
  CHECK(episodes > n * ranks);  // resets happened: the parameters and states were drawn again
  const std::vector<double> all_params = params_to_host(*whole, stream);
  const std::vector<double> last_params = params_to_host(*shares[ranks - 1], stream);
  CHECK(same_slice(all_params, last_params, all_params.size() - last_params.size()));
}

TEST_CASE("the policy's action draws of a rank follow the global environment numbers", "[ranks]") {
  const std::int64_t n = 16, first = 32, actions = 3;
  Stream stream(Device::cpu());
  Rng rng(5, 0, 0);
  std::vector<float> logits((first + n) * actions);
  for (float& x : logits) x = 2.0f * rng.uniform() - 1.0f;
  const std::int64_t iteration = 4;
  std::vector<std::int32_t> all(first + n), part(n);
  std::vector<float> all_logprob(first + n), part_logprob(n);
  rl::sample_actions(stream, logits.data(), first + n, actions, rl::ActionDraw{9, &iteration, 16, 5, 0}, false,
                     all.data(), all_logprob.data());
  rl::sample_actions(stream, logits.data() + first * actions, n, actions, rl::ActionDraw{9, &iteration, 16, 5, first},
                     false, part.data(), part_logprob.data());
  CHECK(same_slice(all, part, first));
  CHECK(same_slice(all_logprob, part_logprob, first));
  // Numbered from 0 instead, the same rows draw other actions.
  rl::sample_actions(stream, logits.data() + first * actions, n, actions, rl::ActionDraw{9, &iteration, 16, 5, 0},
                     false, part.data(), part_logprob.data());
  CHECK_FALSE(same_slice(all, part, first));
}

TEST_CASE("one process is rank 0 of 1, and its sums are the values", "[ranks]") {
  const rl::Collective& one = rl::single_process();
  CHECK(one.rank() == 0);
  CHECK(one.size() == 1);
  std::vector<double> values{1.5, -2.0};
  one.all_reduce_sum({values.data(), 2, Device::cpu()}, Stream(Device::cpu()));
  CHECK(values == std::vector<double>{1.5, -2.0});
  CHECK(one.any(true));
  CHECK_FALSE(one.any(false));
  const auto opened = rl::open_collective(Device::cpu());  // not under mpirun: one process
  CHECK(opened->size() == 1);
}
