// Run by tests/support/check_mpi.py under `mpirun -np 2` (any P >= 2 works): P ranks of N environments
// each train K iterations, and must
//   - hold bit-identical parameters after every iteration (a hash of them, compared across ranks);
//   - end where one process over the same P·N environments ends (rank 0 trains it afterwards), up to
//     summation order: parameters, the latest gradient, the normalisation statistics, the metrics.
// With num_minibatches = 1 each update's minibatch is the whole batch, the same set of samples both
// ways; only the order of the sums differs. Exit 0 when all holds, 1 otherwise, 77 as one process.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "rl/collective.hpp"
#include "rl/trainer.hpp"
#include "scenarios/registry.hpp"
#include "tests/support/small_train_config.hpp"

namespace {

using namespace surge;

constexpr std::int64_t kEnvsPerRank = 8, kSteps = 16, kIterations = 3;

std::uint64_t hash_of(const std::vector<float>& values) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the bytes
  for (float v : values) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(&v);
    for (std::size_t k = 0; k < sizeof v; ++k) h = (h ^ bytes[k]) * 1099511628211ull;
  }
  return h;
}

// Every rank's hash, through the collective itself: each writes its own slot, the sum gathers them.
bool same_on_every_rank(std::uint64_t hash, const rl::Collective& ranks, const Stream& stream) {
  std::vector<double> slots(2 * static_cast<std::size_t>(ranks.size()), 0.0);
  slots[2 * ranks.rank()] = static_cast<double>(hash >> 32);
  slots[2 * ranks.rank() + 1] = static_cast<double>(hash & 0xffffffffu);
  ranks.all_reduce_sum({slots.data(), static_cast<std::int64_t>(slots.size()), Device::cpu()}, stream);
  for (int r = 1; r < ranks.size(); ++r)
    if (slots[2 * r] != slots[0] || slots[2 * r + 1] != slots[1]) return false;
  return true;
}

struct Result {
  std::vector<float> params, grads;
  std::vector<double> obs_moments, reward_moments;
  std::vector<rl::IterationMetrics> metrics;
};

Result finish(rl::Trainer& trainer, std::vector<rl::IterationMetrics> metrics) {
  for (const auto& m : trainer.drain()) metrics.push_back(m);
  const Stream& s = trainer.stream();
  return {to_host(trainer.parameters(), s), to_host(trainer.gradients(), s), to_host(trainer.obs_moments(), s),
          to_host(trainer.reward_moments(), s), metrics};
}

double largest_magnitude(const std::vector<float>& values) {
  double largest = 0.0;
  for (float v : values) largest = std::max(largest, std::abs(static_cast<double>(v)));
  return largest;
}

int failures = 0;
void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("FAIL: %s\n", what.c_str());
    ++failures;
  }
}

// |a - b| <= atol + rtol |b| element by element; reports the worst element.
template <class T>
void expect_close(const std::vector<T>& a, const std::vector<T>& b, double atol, double rtol, const std::string& what) {
  expect(a.size() == b.size(), what + ": sizes differ");
  double worst = 0.0;
  std::size_t at = 0;
  for (std::size_t k = 0; k < std::min(a.size(), b.size()); ++k) {
    const double excess = std::abs(static_cast<double>(a[k]) - static_cast<double>(b[k])) -
                          (atol + rtol * std::abs(static_cast<double>(b[k])));
    if (k == 0 || excess > worst) {
      worst = excess;
      at = k;
    }
  }
  std::printf("%-28s largest difference %.3g over tolerance %.3g (element %zu)\n", what.c_str(),
              a.empty() ? 0.0 : std::abs(static_cast<double>(a[at]) - static_cast<double>(b[at])),
              a.empty() ? 0.0 : atol + rtol * std::abs(static_cast<double>(b[at])), at);
  expect(worst <= 0.0, what + " differ beyond the tolerance");
}

bool same_or_both_nan(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

void check_scenario(const std::string& scenario, const rl::Collective& ranks) {
  rl::TrainConfig config = testing::small_train_config(kEnvsPerRank, kSteps, kIterations, {16, 16}, 7);
  config.scenario = scenario;
  config.num_minibatches = 1;  // the minibatch is the whole batch: the same samples both ways
  config.update_epochs = 2;
  config.learning_rate = 1e-3;
  config.normalize_obs = true;
  config.normalize_reward = true;
  config.total_steps = kEnvsPerRank * ranks.size() * kSteps * kIterations;  // every rank's steps together

  auto engine = make_engine(scenario, Device::cpu(), kEnvsPerRank, config.seed,
                            PhysicsConfig::defaults(scenario_spec(scenario)), ranks.rank() * kEnvsPerRank);
  rl::Trainer trainer(*engine, config, ranks);
  std::vector<rl::IterationMetrics> metrics;
  for (std::int64_t k = 0; k < trainer.num_iterations(); ++k) {
    trainer.iterate();
    for (const auto& m : trainer.ready_metrics()) metrics.push_back(m);
    const bool same =
        same_on_every_rank(hash_of(to_host(trainer.parameters(), trainer.stream())), ranks, trainer.stream());
    expect(same, scenario + ": the ranks' parameters differ after iteration " + std::to_string(k + 1));
  }
  expect(trainer.num_iterations() == kIterations, scenario + ": total_steps counts every rank's steps");
  const Result split = finish(trainer, metrics);
  if (ranks.rank() != 0) return;

  // One process over the same 2N environments: global environment e is environment e here.
  rl::TrainConfig whole = config;
  whole.num_envs = kEnvsPerRank * ranks.size();
  auto one_engine = make_engine(scenario, Device::cpu(), whole.num_envs, whole.seed);
  rl::Trainer one(*one_engine, whole);
  std::vector<rl::IterationMetrics> one_metrics;
  for (std::int64_t k = 0; k < one.num_iterations(); ++k) {
    one.iterate();
    for (const auto& m : one.ready_metrics()) one_metrics.push_back(m);
  }
  const Result joint = finish(one, one_metrics);

  // The tolerance, from what differs: only the order of float sums over the B = 2NT samples of a
  // minibatch (the gradient GEMMs; the statistics are summed in double). Their relative error is at most
  // about B u (u = 2^-24), ~1.5e-5 here, and Adam's step lr m/(sqrt(v) + eps) passes a relative error of
  // its gradients through at most ~10-fold (m and v are averages of the same gradients), so that each of
  // the S = K x epochs updates moves a parameter by at most lr x 1.5e-4 more or less: S lr 1e-3 holds
  // it with room. The parameters' own rounding adds a few ulps per update (the rtol). A real fault (a
  // rank's own advantages, gradients summed rather than averaged, another environment's random stream)
  // moves parameters by a sizeable fraction of S lr instead.
  const double updates = static_cast<double>(kIterations * config.update_epochs);
  const double param_atol = updates * config.learning_rate * 1e-3, param_rtol = updates * 4 * 6e-8;
  expect_close(split.params, joint.params, param_atol, param_rtol, scenario + " parameters");
  // The latest gradient at those parameters: a relative error of the same order, against its scale.
  expect_close(split.grads, joint.grads, 1e-3 * largest_magnitude(joint.grads), 0.0, scenario + " latest gradient");
  // Statistics summed in double, over samples that are the same up to the parameters' differences: a
  // Gaussian policy's actions move with them continuously, and with them the observations and rewards
  // (by ~1e-7 relative after these updates); a discrete policy's actions do not move at all.
  expect_close(split.obs_moments, joint.obs_moments, 1e-9, 1e-6, scenario + " observation moments");
  expect_close(split.reward_moments, joint.reward_moments, 1e-9, 1e-6, scenario + " reward moments");

  expect(split.metrics.size() == joint.metrics.size(), scenario + ": as many metrics rows");
  for (std::size_t k = 0; k < std::min(split.metrics.size(), joint.metrics.size()); ++k) {
    const rl::IterationMetrics &a = split.metrics[k], &b = joint.metrics[k];
    const std::string row = scenario + " iteration " + std::to_string(k + 1) + ": ";
    // The same environments took the same actions: episodes and their returns agree exactly.
    expect(a.global_step == b.global_step, row + "global_step");
    expect(a.episodes == b.episodes, row + "episodes");
    expect(same_or_both_nan(a.episodic_return_mean, b.episodic_return_mean), row + "episodic_return_mean");
    expect(same_or_both_nan(a.episodic_length_mean, b.episodic_length_mean), row + "episodic_length_mean");
    expect(same_or_both_nan(a.return_last100, b.return_last100), row + "return_last100");
    expect(a.recent_episodes == b.recent_episodes, row + "recent_episodes");
    for (auto [x, y, name] :
         {std::tuple{a.policy_loss, b.policy_loss, "policy_loss"}, std::tuple{a.value_loss, b.value_loss, "value_loss"},
          std::tuple{a.entropy, b.entropy, "entropy"},
          std::tuple{a.explained_variance, b.explained_variance, "explained_variance"}})
      expect(std::abs(x - y) <= 1e-4 * (1.0 + std::abs(y)), row + name);
  }
  std::printf("%s: %lld iterations of %d ranks x %lld envs against 1 x %lld envs: %s\n", scenario.c_str(),
              static_cast<long long>(kIterations), ranks.size(), static_cast<long long>(kEnvsPerRank),
              static_cast<long long>(whole.num_envs), failures ? "FAILED" : "the same");
}

}  // namespace

int main() {
  const rl::RankPlace place = rl::rank_place();
  if (place.size < 2) {
    std::printf("data_parallel_check: run it under mpirun -np 2 or more (this is rank %d of %d)\n", place.rank,
                place.size);
    rl::finish_ranks();
    return 77;
  }
  try {
    const auto ranks = rl::open_collective(Device::cpu());
    for (const char* scenario : {"cartpole", "pendulum"}) check_scenario(scenario, *ranks);
  } catch (const std::exception& e) {
    std::printf("data_parallel_check: %s\n", e.what());
    return 1;
  }
  rl::finish_ranks();
  return failures ? 1 : 0;
}
