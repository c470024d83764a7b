// The analytic PPO gradient against central finite differences, in double precision, through the
// whole loss (clipped surrogate, clipped value loss, entropy bonus, normalised advantages) and both
// networks: the very code the trainer runs in float, instantiated for double. The networks take the CPU's
// fused path (rl/fused_mlp.hpp) unless a case turns it off for the BLAS path.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "rl/actor_critic.hpp"
#include "rl/categorical.hpp"
#include "rl/ppo_loss.hpp"
#include "sim/philox.hpp"
#include "tests/support/finite_difference.hpp"
#include "tests/support/ppo_gradient_batch.hpp"

using namespace surge::rl;
using surge::testing::around_the_clip_range;
using surge::testing::central_difference;
using surge::testing::normal;

namespace {

struct Case {
  NetworkConfig network;
  PpoLossConfig loss;
  std::uint64_t seed;
};

void check_gradient(const Case& c) {
  const int obs_dim = 4, num_actions = 3;
  const std::int64_t batch = 24;
  const ActorCritic net(obs_dim, num_actions, c.network);
  const std::int64_t total = net.table().total();
  const surge::Device cpu = surge::Device::cpu();
  surge::Stream stream(cpu);
  surge::Rng rng(c.seed, 99, 0);

  // Initial parameters moved off CleanRL's tiny actor head, so the policy is far from uniform.
  std::vector<double> params = net.initial_parameters(c.seed);
  for (const auto& slice : net.table().slices())
    for (std::int64_t j = 0; j < slice.size(); ++j) params[slice.offset + j] += 0.3 * normal(rng);

  std::vector<double> obs(batch * obs_dim), old_logprob(batch), old_value(batch), advantage(batch), returns(batch);
  std::vector<std::int32_t> actions(batch);
  for (auto& x : obs) x = normal(rng);
  for (std::int64_t i = 0; i < batch; ++i) {
    actions[i] = static_cast<std::int32_t>(rng.next_u32() % num_actions);
    advantage[i] = normal(rng) + 0.3;
  }

  PpoGradient<double> workspace(cpu, net, batch);
  std::vector<double> logits(batch * num_actions), values(batch);
  workspace.forward(stream, params.data(), obs.data(), batch, logits.data(), values.data());
  for (std::int64_t i = 0; i < batch; ++i) {
    const double* row = logits.data() + i * num_actions;
    const auto estimates = around_the_clip_range(i, row[actions[i]] - log_partition(row, num_actions), values[i]);
    old_logprob[i] = estimates.old_logprob;
    old_value[i] = estimates.old_value;
    returns[i] = estimates.returns;
  }

  MinibatchView<double> minibatch;
  minibatch.size = batch;
  minibatch.obs = obs.data();
  minibatch.actions = actions.data();
  minibatch.old_logprob = old_logprob.data();
  minibatch.old_value = old_value.data();
  minibatch.advantage = advantage.data();
  minibatch.returns = returns.data();

  std::vector<double> grads(total, 0.0), terms(kLossTermCount);
  auto loss_at = [&](const std::vector<double>& p) {
    std::vector<double> scratch_grads(total, 0.0), t(kLossTermCount);
    workspace.compute(stream, c.loss, minibatch, p.data(), scratch_grads.data(), t.data());
    return total_loss(c.loss, t.data(), batch);
  };
  workspace.compute(stream, c.loss, minibatch, params.data(), grads.data(), terms.data());
  // Both clip branches are exercised.
  CHECK(terms[kClipFraction] > 0.0);
  CHECK(terms[kClipFraction] < batch);

  const double h = 1e-6;
  int checked = 0, nonzero_actor = 0, nonzero_critic = 0;
  for (const auto& slice : net.table().slices()) {
    for (std::int64_t j = 0; j < slice.size(); ++j) {
      const std::int64_t index = slice.offset + j;
      const double numeric = central_difference(loss_at, params, index, h);
      const double analytic = grads[index];
      INFO(slice.name << "[" << j << "]: analytic " << analytic << ", finite difference " << numeric);
      CHECK(std::abs(analytic - numeric) <= 1e-7 + 1e-5 * std::abs(numeric));
      ++checked;
      if (std::abs(analytic) > 1e-5) (slice.name.rfind("actor", 0) == 0 ? nonzero_actor : nonzero_critic) += 1;
    }
  }
  CHECK(checked == net.table().parameter_count());
  // The check means something only if the gradient is not mostly zero.
  CHECK(nonzero_actor > net.actor().num_layers() * 4);
  CHECK(nonzero_critic > net.critic().num_layers() * 4);
}

}  // namespace

TEST_CASE("PPO gradient matches finite differences (tanh, every loss option on)", "[ppo][gradient]") {
  Case c;
  c.network.hidden = {8, 6};
  c.loss.ent_coef = 0.05;
  c.seed = 1;
  check_gradient(c);
}

TEST_CASE("PPO gradient matches finite differences through the BLAS path", "[ppo][gradient]") {
  Case c;
  c.network.hidden = {8, 6};
  c.network.cpu_fused_mlp = false;
  c.loss.ent_coef = 0.05;
  c.seed = 4;
  check_gradient(c);
}

TEST_CASE("PPO gradient matches finite differences (relu, three hidden layers)", "[ppo][gradient]") {
  Case c;
  c.network.hidden = {7, 5, 6};
  c.network.activation = "relu";
  c.seed = 2;
  check_gradient(c);
}

TEST_CASE("PPO gradient matches finite differences without value clipping or advantage normalisation",
          "[ppo][gradient]") {
  Case c;
  c.network.hidden = {5};
  c.loss.clip_vloss = false;
  c.loss.norm_adv = false;
  c.loss.vf_coef = 0.8;
  c.seed = 3;
  check_gradient(c);
}

TEST_CASE("PPO loss terms match a direct evaluation", "[ppo]") {
  // One sample by hand: two actions, logits (0.5, -0.5), action 0, no normalisation.
  const surge::Device cpu = surge::Device::cpu();
  surge::Stream stream(cpu);
  const double logits[] = {0.5, -0.5, 0.2, 0.1}, values[] = {1.0, -0.3};
  const std::int32_t actions[] = {0, 1};
  const double old_logprob[] = {-0.9, -0.4}, old_value[] = {0.5, -0.35}, advantage[] = {1.0, -2.0},
               returns[] = {2.0, 0.0};
  MinibatchView<double> mb{2, nullptr, actions, old_logprob, old_value, advantage, returns};
  PpoLossConfig config;
  config.norm_adv = false;
  double stats[2], scratch[1], d_logits[4], d_values[2], terms[kLossTermCount];
  ppo_loss<double>(stream, config, mb, 2, logits, values, stats, scratch, d_logits, d_values, terms);
  double policy = 0, value = 0, entropy = 0, kl = 0, clipped = 0;
  for (int i = 0; i < 2; ++i) {
    const double* row = logits + 2 * i;
    const double log_z = std::log(std::exp(row[0]) + std::exp(row[1]));
    const double logp = row[actions[i]] - log_z;
    const double ratio = std::exp(logp - old_logprob[i]);
    policy += std::max(-advantage[i] * ratio, -advantage[i] * std::clamp(ratio, 0.8, 1.2));
    const double clipped_v = old_value[i] + std::clamp(values[i] - old_value[i], -0.2, 0.2);
    value += 0.5 * std::max(std::pow(values[i] - returns[i], 2), std::pow(clipped_v - returns[i], 2));
    for (int k = 0; k < 2; ++k) entropy -= std::exp(row[k] - log_z) * (row[k] - log_z);
    kl += (ratio - 1) - std::log(ratio);
    clipped += std::abs(ratio - 1) > 0.2;
  }
  CHECK(terms[kPolicyLoss] == Approx(policy).epsilon(1e-12));
  CHECK(terms[kValueLoss] == Approx(value).epsilon(1e-12));
  CHECK(terms[kEntropy] == Approx(entropy).epsilon(1e-12));
  CHECK(terms[kApproxKl] == Approx(kl).epsilon(1e-12));
  CHECK(terms[kClipFraction] == clipped);
}
