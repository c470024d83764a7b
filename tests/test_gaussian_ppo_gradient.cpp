// The analytic PPO gradient of the diagonal Gaussian policy against central finite differences, in
// double precision: with respect to the means and log-stds the loss sees directly, and through the
// whole actor-critic with respect to every parameter (the log-std slice among them). The very code the
// trainer runs in float, instantiated for double.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "rl/actor_critic.hpp"
#include "rl/gaussian.hpp"
#include "rl/ppo_loss.hpp"
#include "sim/philox.hpp"
#include "tests/support/finite_difference.hpp"
#include "tests/support/ppo_gradient_batch.hpp"

using namespace surge::rl;
using surge::testing::around_the_clip_range;
using surge::testing::central_difference;
using surge::testing::normal;

namespace {

// A minibatch of a Gaussian policy whose ratios and value steps fall both inside and well outside the
// clip range (0.2), never near its edges, where the loss has kinks.
struct GaussianBatch {
  std::int64_t size;
  int dims;
  std::vector<double> obs, actions, old_logprob, old_value, advantage, returns;
  MinibatchView<double> view() const {
    MinibatchView<double> minibatch;
    minibatch.size = size;
    minibatch.obs = obs.data();
    minibatch.old_logprob = old_logprob.data();
    minibatch.old_value = old_value.data();
    minibatch.advantage = advantage.data();
    minibatch.returns = returns.data();
    minibatch.continuous_actions = actions.data();
    return minibatch;
  }
};

GaussianBatch make_batch(std::int64_t size, int obs_dim, int dims, const std::vector<double>& means,
                         const std::vector<double>& log_std, const std::vector<double>& values, surge::Rng& rng) {
  GaussianBatch b{size,
                  dims,
                  std::vector<double>(size * obs_dim),
                  std::vector<double>(size * dims),
                  std::vector<double>(size),
                  std::vector<double>(size),
                  std::vector<double>(size),
                  std::vector<double>(size)};
  for (auto& x : b.obs) x = normal(rng);
  for (std::int64_t i = 0; i < size; ++i) {
    for (int k = 0; k < dims; ++k) b.actions[i * dims + k] = means[i * dims + k] + std::exp(log_std[k]) * normal(rng);
    const double logp = gaussian_log_prob(b.actions.data() + i * dims, means.data() + i * dims, log_std.data(), dims);
    const auto estimates = around_the_clip_range(i, logp, values[i]);
    b.old_logprob[i] = estimates.old_logprob;
    b.advantage[i] = normal(rng) + 0.3;
    b.old_value[i] = estimates.old_value;
    b.returns[i] = estimates.returns;
  }
  return b;
}

bool close(double analytic, double numeric) { return std::abs(analytic - numeric) <= 1e-7 + 1e-5 * std::abs(numeric); }

}  // namespace

TEST_CASE("Gaussian PPO loss: gradient with respect to means and log-stds matches finite differences",
          "[ppo][gradient]") {
  const surge::Device cpu = surge::Device::cpu();
  surge::Stream stream(cpu);
  surge::Rng rng(5, 77, 0);
  const std::int64_t batch = 18;
  const int dims = 2, obs_dim = 1;
  std::vector<double> means(batch * dims), values(batch), log_std = {-0.4, 0.3};
  for (auto& m : means) m = normal(rng);
  for (auto& v : values) v = normal(rng);
  GaussianBatch b = make_batch(batch, obs_dim, dims, means, log_std, values, rng);
  PpoLossConfig config;
  config.ent_coef = 0.07;
  const MinibatchView<double> minibatch = b.view();

  auto loss_at = [&](const std::vector<double>& m, const std::vector<double>& s, std::vector<double>* d_means,
                     std::vector<double>* d_rows, double* clip_fraction) {
    std::vector<double> dm(batch * dims), rows(batch * dims), dv(batch), terms(kLossTermCount), stats(2),
        scratch(kLossTermCount);
    gaussian_ppo_loss<double>(stream, config, minibatch, dims, m.data(), s.data(), values.data(), stats.data(),
                              scratch.data(), dm.data(), rows.data(), dv.data(), terms.data());
    if (d_means) *d_means = dm;
    if (d_rows) *d_rows = rows;
    if (clip_fraction) *clip_fraction = terms[kClipFraction];
    return total_loss(config, terms.data(), batch);
  };
  std::vector<double> d_means, d_rows;
  double clip_fraction = 0.0;
  loss_at(means, log_std, &d_means, &d_rows, &clip_fraction);
  CHECK(clip_fraction > 0.0);
  CHECK(clip_fraction < batch);

  const double h = 1e-6;
  const auto loss_at_means = [&](const std::vector<double>& m) {
    return loss_at(m, log_std, nullptr, nullptr, nullptr);
  };
  const auto loss_at_log_std = [&](const std::vector<double>& l) {
    return loss_at(means, l, nullptr, nullptr, nullptr);
  };
  int nonzero = 0;
  for (std::int64_t j = 0; j < batch * dims; ++j) {
    const double numeric = central_difference(loss_at_means, means, j, h);
    INFO("mean " << j << ": analytic " << d_means[j] << ", finite difference " << numeric);
    CHECK(close(d_means[j], numeric));
    nonzero += std::abs(d_means[j]) > 1e-5;
  }
  CHECK(nonzero > batch);
  for (int k = 0; k < dims; ++k) {
    double analytic = 0.0;
    for (std::int64_t i = 0; i < batch; ++i) analytic += d_rows[i * dims + k];
    const double numeric = central_difference(loss_at_log_std, log_std, k, h);
    INFO("log_std " << k << ": analytic " << analytic << ", finite difference " << numeric);
    CHECK(close(analytic, numeric));
    CHECK(std::abs(analytic) > 1e-4);
  }
}

namespace {

void check_network_gradient(const NetworkConfig& network, const PpoLossConfig& loss, int dims, std::uint64_t seed) {
  const int obs_dim = 3;
  const std::int64_t batch = 20;
  const ActorCritic net(obs_dim, surge::ActionKind::Continuous, dims, network);
  REQUIRE(net.continuous());
  REQUIRE(net.action_dim() == dims);
  const int log_std_slice = net.table().find("actor.log_std");
  REQUIRE(log_std_slice >= 0);
  CHECK(net.table()[log_std_slice].offset == net.log_std_offset());
  const std::int64_t total = net.table().total();
  const surge::Device cpu = surge::Device::cpu();
  surge::Stream stream(cpu);
  surge::Rng rng(seed, 99, 0);

  std::vector<double> params = net.initial_parameters(seed);
  for (int k = 0; k < dims; ++k) CHECK(params[net.log_std_offset() + k] == 0.0);  // CleanRL's initial log-std
  for (const auto& slice : net.table().slices())
    for (std::int64_t j = 0; j < slice.size(); ++j) params[slice.offset + j] += 0.3 * normal(rng);

  PpoGradient<double> workspace(cpu, net, batch);
  std::vector<double> obs_probe(batch * obs_dim);
  for (auto& x : obs_probe) x = normal(rng);
  std::vector<double> means(batch * dims), values(batch);
  workspace.forward(stream, params.data(), obs_probe.data(), batch, means.data(), values.data());
  const std::vector<double> log_std(params.begin() + net.log_std_offset(),
                                    params.begin() + net.log_std_offset() + dims);
  GaussianBatch b = make_batch(batch, obs_dim, dims, means, log_std, values, rng);
  b.obs = obs_probe;
  const MinibatchView<double> minibatch = b.view();

  std::vector<double> grads(total, 0.0), terms(kLossTermCount);
  auto loss_at = [&](const std::vector<double>& p) {
    std::vector<double> scratch_grads(total, 0.0), t(kLossTermCount);
    workspace.compute(stream, loss, minibatch, p.data(), scratch_grads.data(), t.data());
    return total_loss(loss, t.data(), batch);
  };
  workspace.compute(stream, loss, minibatch, params.data(), grads.data(), terms.data());
  CHECK(terms[kClipFraction] > 0.0);
  CHECK(terms[kClipFraction] < batch);

  const double h = 1e-6;
  int checked = 0, nonzero_actor = 0, nonzero_critic = 0, nonzero_log_std = 0;
  for (const auto& slice : net.table().slices()) {
    for (std::int64_t j = 0; j < slice.size(); ++j) {
      const std::int64_t index = slice.offset + j;
      const double numeric = central_difference(loss_at, params, index, h);
      const double analytic = grads[index];
      INFO(slice.name << "[" << j << "]: analytic " << analytic << ", finite difference " << numeric);
      CHECK(close(analytic, numeric));
      ++checked;
      if (std::abs(analytic) > 1e-5) {
        if (slice.name == "actor.log_std")
          ++nonzero_log_std;
        else
          (slice.name.rfind("actor", 0) == 0 ? nonzero_actor : nonzero_critic) += 1;
      }
    }
  }
  CHECK(checked == net.table().parameter_count());
  CHECK(nonzero_actor > net.actor().num_layers() * 4);
  CHECK(nonzero_critic > net.critic().num_layers() * 4);
  CHECK(nonzero_log_std == dims);
}

}  // namespace

TEST_CASE("Gaussian PPO gradient through the networks matches finite differences (tanh, every loss option)",
          "[ppo][gradient]") {
  NetworkConfig network;
  network.hidden = {8, 6};
  PpoLossConfig loss;
  loss.ent_coef = 0.05;
  check_network_gradient(network, loss, 2, 1);
}

TEST_CASE(
    "Gaussian PPO gradient through the networks matches finite differences (relu, one dimension, no clipping of "
    "values or normalisation of advantages)",
    "[ppo][gradient]") {
  NetworkConfig network;
  network.hidden = {7, 5};
  network.activation = "relu";
  PpoLossConfig loss;
  loss.clip_vloss = false;
  loss.norm_adv = false;
  loss.vf_coef = 0.8;
  check_network_gradient(network, loss, 1, 2);
}

TEST_CASE("A Gaussian actor-critic lays the categorical networks out as before and adds actor.log_std last", "[ppo]") {
  NetworkConfig network;
  const ActorCritic discrete(3, 2, network);
  const ActorCritic gaussian(3, surge::ActionKind::Continuous, 2, network);
  CHECK(discrete.table().find("actor.log_std") == -1);
  CHECK(discrete.num_actions() == 2);
  CHECK(discrete.action_dim() == 0);
  CHECK(gaussian.num_actions() == 0);
  CHECK(gaussian.head_width() == 2);
  const auto& last = gaussian.table().slices().back();
  CHECK(last.name == "actor.log_std");
  CHECK(last.rows == 2);
  CHECK(last.cols == 1);
  // Same initial weights for the shared layers.
  const std::vector<double> a = discrete.initial_parameters(4), b = gaussian.initial_parameters(4);
  for (const auto& slice : discrete.table().slices()) {
    const int other = gaussian.table().find(slice.name);
    REQUIRE(other >= 0);
    for (std::int64_t j = 0; j < slice.size(); ++j) CHECK(a[slice.offset + j] == b[gaussian.table()[other].offset + j]);
  }
}
