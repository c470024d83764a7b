#include "tools/bench/ppo_cost.hpp"

#include "sim/error.hpp"
#include "tools/bench/env_cost.hpp"

namespace surge::throughput {
namespace {

constexpr double kFloat = sizeof(float);

PhaseWork operator*(double times, PhaseWork work) {
  work.flops *= times;
  work.bytes *= times;
  return work;
}

PhaseWork& operator+=(PhaseWork& total, const PhaseWork& part) {
  total.flops += part.flops;
  total.bytes += part.bytes;
  return total;
}

PhaseWork named(const char* name, PhaseWork work) {
  work.name = name;
  return work;
}

// C[m][n] = A[m][k] B[k][n] (+ bias[n]): reads A, B and the bias, writes C.
PhaseWork gemm(double m, double n, double k, bool bias) {
  return {"", 2.0 * m * n * k + (bias ? m * n : 0.0), kFloat * (m * k + k * n + m * n + (bias ? n : 0.0))};
}

}  // namespace

std::vector<int> PpoShapes::actor_dims() const {
  std::vector<int> dims{obs_dim};
  dims.insert(dims.end(), hidden.begin(), hidden.end());
  dims.push_back(head_width());
  return dims;
}

std::vector<int> PpoShapes::critic_dims() const {
  std::vector<int> dims{obs_dim};
  dims.insert(dims.end(), hidden.begin(), hidden.end());
  dims.push_back(1);
  return dims;
}

PhaseWork mlp_forward_work(const std::vector<int>& dims, std::int64_t rows) {
  SURGE_CHECK(dims.size() >= 2 && rows > 0, "an MLP needs a layer and a row");
  const double r = static_cast<double>(rows);
  PhaseWork work;
  for (std::size_t l = 0; l + 1 < dims.size(); ++l) {
    const double in = dims[l], out = dims[l + 1];
    work += gemm(r, out, in, true);
    if (l + 2 < dims.size()) work += PhaseWork{"", r * out, 2.0 * kFloat * r * out};  // activation in place
  }
  return work;
}

PhaseWork mlp_backward_work(const std::vector<int>& dims, std::int64_t rows) {
  SURGE_CHECK(dims.size() >= 2 && rows > 0, "an MLP needs a layer and a row");
  const double r = static_cast<double>(rows);
  PhaseWork work;
  for (std::size_t l = dims.size() - 1; l-- > 0;) {
    const double in = dims[l], out = dims[l + 1];
    work += gemm(out, in, r, false);   // dW = d_y^T x
    work += gemm(1.0, out, r, false);  // db = ones^T d_y
    if (l == 0) break;
    work += gemm(r, in, out, false);                             // d_x = d_y W
    work += PhaseWork{"", 3.0 * r * in, 3.0 * kFloat * r * in};  // d_x *= slope(h): reads d_x and h, writes d_x
  }
  return work;
}

std::int64_t parameter_table_floats(const PpoShapes& shapes) {
  auto slice = [](std::int64_t floats) { return (floats + 63) / 64 * 64; };
  std::int64_t total = 0;
  for (const auto& dims : {shapes.actor_dims(), shapes.critic_dims()})
    for (std::size_t l = 0; l + 1 < dims.size(); ++l)
      total += slice(std::int64_t(dims[l]) * dims[l + 1]) + slice(dims[l + 1]);
  return total + (shapes.action_dim > 0 ? slice(shapes.action_dim) : 0);
}

std::vector<PhaseWork> ppo_iteration_work(const PpoShapes& s, const ScenarioSpec& spec) {
  SURGE_CHECK(s.num_envs > 0 && s.num_steps > 0 && s.update_epochs > 0 && s.num_minibatches > 0 && s.head_width() > 0,
              "PPO shapes must be positive");
  const bool gaussian = s.action_dim > 0;
  SURGE_CHECK(gaussian == (spec.action_kind == ActionKind::Continuous),
              "the PPO shapes' policy does not fit the scenario");
  const double n = static_cast<double>(s.num_envs), t = static_cast<double>(s.num_steps);
  const double updates = static_cast<double>(s.update_epochs * s.num_minibatches);
  const double b = static_cast<double>(s.minibatch()), a = s.head_width(), d = s.obs_dim;
  const double slots = n * t;
  const PhaseWork actor_n = mlp_forward_work(s.actor_dims(), s.num_envs);
  const PhaseWork critic_n = mlp_forward_work(s.critic_dims(), s.num_envs);

  std::vector<PhaseWork> phases;
  // Per step: actor and critic on obs[t], critic on the final observations; then the critic on obs[T].
  PhaseWork forward = t * actor_n;
  forward += (2.0 * t + 1.0) * critic_n;
  phases.push_back(named("policy forward", forward));
  // Gumbel-max over the logits and the log-probability of the draw: per action the Gumbel draw (2 to
  // scale the bits, 2 logs, 1 add) and the log-partition (subtract, exp, add), then a log and two
  // subtractions; reads the logits, writes the action and its log-probability.
  // Gaussian: per dimension half a Box-Muller pair (2 to scale each word, a log, a sqrt, a sine or
  // cosine, 2 multiplies: about 6), the scale exp(log_std) and its multiply-add (3), the clip (2) and the
  // log-density (5); reads the means and log-stds, writes the sample, the clipped sample and the
  // log-probability.
  phases.push_back(named("sampling", gaussian ? PhaseWork{"", slots * 16.0 * a, slots * kFloat * (3.0 * a + 1.0)}
                                              : PhaseWork{"", slots * (8.0 * a + 3.0), slots * (kFloat * a + 8.0)}));
  PhaseWork env{"", slots * scenario_step_flops(spec.name), slots * static_cast<double>(env_step_kernel_bytes(spec))};
  phases.push_back(named("env step", env));
  // Per slot: delta 3, carry 2, running 1, return 1; reads reward, both flags and value (value[T] once
  // more per env), writes advantage and return.
  phases.push_back(named("GAE", PhaseWork{"", 7.0 * slots, 18.0 * slots + kFloat * n}));
  // Gather: observation, action and four per-sample fields read from the rollout and written to the
  // minibatch; then both networks on B rows.
  const double action_bytes = gaussian ? kFloat * a : 4.0;
  PhaseWork update_forward{"", 0.0, b * 2.0 * (kFloat * d + action_bytes + 4.0 * kFloat)};
  update_forward += mlp_forward_work(s.actor_dims(), s.minibatch());
  update_forward += mlp_forward_work(s.critic_dims(), s.minibatch());
  phases.push_back(named("update forward", updates * update_forward));
  // The PPO loss per sample (advantage statistics, log-partition, entropy, clipped surrogate and its
  // gradient per action, clipped value loss: about 16 A + 40 FLOPs); reads the logits and six fields
  // (the advantage twice), writes the logit and value gradients. Then both backward passes.
  // Gaussian: per dimension the log-density (5), its two derivatives (6) and the entropy (3), about
  // 14 A + 40; reads means and actions, writes the mean and per-sample log-std gradients; then the
  // log-std gradient as a GEMM of ones [1][B] and those rows [B][A].
  PhaseWork update_backward = gaussian ? PhaseWork{"", b * (14.0 * a + 40.0), b * (4.0 * kFloat * a + 32.0)}
                                       : PhaseWork{"", b * (16.0 * a + 40.0), b * (2.0 * kFloat * a + 32.0)};
  if (gaussian) update_backward += gemm(1.0, a, b, false);
  update_backward += mlp_backward_work(s.actor_dims(), s.minibatch());
  update_backward += mlp_backward_work(s.critic_dims(), s.minibatch());
  phases.push_back(named("update backward", updates * update_backward));
  // Adam per parameter: the gradient norm (2 FLOPs, reads the gradient) and the update (14 FLOPs, reads
  // gradient, parameter and both moments, writes the last three).
  const double p = static_cast<double>(parameter_table_floats(s));
  phases.push_back(named("optimiser", updates * PhaseWork{"", 16.0 * p, 8.0 * kFloat * p}));
  return phases;
}

}  // namespace surge::throughput
