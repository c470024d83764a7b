// The PPO loss and its gradient with respect to the policy head's outputs and the values, one sample
// per thread, fused with the reduction of the loss terms. The categorical and Gaussian heads share
// everything but the log-probability and the entropy.
#include "rl/categorical.hpp"
#include "rl/gaussian.hpp"
#include "rl/ppo_loss.hpp"
#include "rl/scalar_math.hpp"
#include "sim/parallel.cuh"

namespace surge::rl {
namespace detail {

// The minibatch's advantage, normalised as (a - mean) / (std + 1e-8) with the unbiased std when asked.
template <class Scalar>
SURGE_HD_INLINE Scalar normalised_advantage(Scalar advantage, bool norm_adv, const double* stats, std::int64_t batch) {
  if (!norm_adv) return advantage;
  const double mean = stats[0] / static_cast<double>(batch);
  const double variance = (stats[1] - stats[0] * mean) / static_cast<double>(batch - 1);
  const double std_dev = variance > 0.0 ? sqrt(variance) : 0.0;
  return static_cast<Scalar>((static_cast<double>(advantage) - mean) / (std_dev + 1e-8));
}

// The clipped surrogate of one sample and dloss/dlogp (already divided by the batch).
template <class Scalar>
struct Surrogate {
  Scalar policy, ratio, d_logp;
};
template <class Scalar>
SURGE_HD_INLINE Surrogate<Scalar> clipped_surrogate(Scalar adv, Scalar log_ratio, Scalar clip, Scalar inv_batch) {
  const Scalar ratio = scalar_exp(log_ratio);
  const Scalar surrogate = -adv * ratio;
  const Scalar clipped = -adv * scalar_clamp(ratio, Scalar(1) - clip, Scalar(1) + clip);
  // Where the clipped branch is strictly larger, ratio lies outside the clip range and the loss is
  // flat in it; elsewhere both branches have derivative -adv * ratio with respect to log p(a).
  return {scalar_max(surrogate, clipped), ratio, (surrogate >= clipped ? -adv * ratio : Scalar(0)) * inv_batch};
}

// The value loss of one sample and its derivative in v (before vf_coef and the batch mean).
template <class Scalar>
struct ValueTerm {
  Scalar loss, d_v;
};
template <class Scalar>
SURGE_HD_INLINE ValueTerm<Scalar> value_term(Scalar v, Scalar old_v, Scalar target, bool clip_vloss, Scalar clip) {
  const Scalar error = v - target;
  ValueTerm<Scalar> term{Scalar(0.5) * error * error, error};
  if (clip_vloss) {
    const Scalar clipped_error = old_v + scalar_clamp(v - old_v, -clip, clip) - target;
    // The clipped branch can only be strictly larger when the step was clipped, where it is flat in v.
    if (clipped_error * clipped_error > error * error) term = {Scalar(0.5) * clipped_error * clipped_error, Scalar(0)};
  }
  return term;
}

template <class Scalar>
SURGE_HD_INLINE void add_terms(double* acc, Scalar policy, Scalar value_loss, Scalar entropy, Scalar ratio, Scalar log_ratio,
                               Scalar clip) {
  acc[kPolicyLoss] += static_cast<double>(policy);
  acc[kValueLoss] += static_cast<double>(value_loss);
  acc[kEntropy] += static_cast<double>(entropy);
  acc[kApproxKl] += static_cast<double>((ratio - Scalar(1)) - log_ratio);
  acc[kClipFraction] += (ratio - Scalar(1) > clip || Scalar(1) - ratio > clip) ? 1.0 : 0.0;
}

template <class Scalar>
void advantage_sums(const Stream& stream, const PpoLossConfig& config, const MinibatchView<Scalar>& minibatch,
                    double* advantage_stats, double* scratch) {
  SURGE_CHECK(minibatch.size >= 2 || !config.norm_adv, "normalising advantages needs a minibatch of at least 2 samples");
  if (!config.norm_adv) return;
  const Scalar* advantage = minibatch.advantage;
  parallel_reduce<2>(
      stream, minibatch.size,
      [=] SURGE_HD(std::int64_t i, double* acc) {
        const double a = static_cast<double>(advantage[i]);
        acc[0] += a;
        acc[1] += a * a;
      },
      scratch, advantage_stats);
}

}  // namespace detail

template <class Scalar>
void ppo_loss(const Stream& stream, const PpoLossConfig& config, const MinibatchView<Scalar>& minibatch, int num_actions,
              const Scalar* logits, const Scalar* values, double* advantage_stats, double* scratch, Scalar* d_logits,
              Scalar* d_values, double* terms) {
  detail::advantage_sums(stream, config, minibatch, advantage_stats, scratch);
  const std::int64_t batch = minibatch.size;
  const Scalar* advantage = minibatch.advantage;
  const std::int32_t* actions = minibatch.actions;
  const Scalar* old_logprob = minibatch.old_logprob;
  const Scalar* old_value = minibatch.old_value;
  const Scalar* returns = minibatch.returns;
  const double* stats = advantage_stats;
  const bool norm_adv = config.norm_adv, clip_vloss = config.clip_vloss;
  const Scalar clip = static_cast<Scalar>(config.clip_coef);
  const Scalar ent_coef = static_cast<Scalar>(config.ent_coef), vf_coef = static_cast<Scalar>(config.vf_coef);
  const Scalar inv_batch = Scalar(1) / static_cast<Scalar>(batch);
  const int count = num_actions;
  parallel_reduce<kLossTermCount>(
      stream, batch,
      [=] SURGE_HD(std::int64_t i, double* acc) {
        const Scalar* row = logits + i * count;
        const Scalar log_z = log_partition(row, count);
        const Scalar entropy = categorical_entropy(row, count, log_z);
        const int action = actions[i];
        const Scalar log_ratio = row[action] - log_z - old_logprob[i];
        const Scalar adv = detail::normalised_advantage(advantage[i], norm_adv, stats, batch);
        const auto surrogate = detail::clipped_surrogate(adv, log_ratio, clip, inv_batch);
        for (int k = 0; k < count; ++k) {
          const Scalar log_p = row[k] - log_z;
          const Scalar p = scalar_exp(log_p);
          const Scalar d_policy = surrogate.d_logp * ((k == action ? Scalar(1) : Scalar(0)) - p);
          const Scalar d_entropy = -p * (log_p + entropy);  // dH/dlogit_k
          d_logits[i * count + k] = d_policy - ent_coef * inv_batch * d_entropy;
        }
        const auto value = detail::value_term(values[i], old_value[i], returns[i], clip_vloss, clip);
        d_values[i] = vf_coef * inv_batch * value.d_v;
        detail::add_terms(acc, surrogate.policy, value.loss, entropy, surrogate.ratio, log_ratio, clip);
      },
      scratch, terms);
}

template <class Scalar>
void gaussian_ppo_loss(const Stream& stream, const PpoLossConfig& config, const MinibatchView<Scalar>& minibatch,
                       int action_dim, const Scalar* means, const Scalar* log_std, const Scalar* values,
                       double* advantage_stats, double* scratch, Scalar* d_means, Scalar* d_log_std_rows,
                       Scalar* d_values, double* terms) {
  SURGE_CHECK(minibatch.continuous_actions != nullptr, "a Gaussian policy's minibatch needs its continuous actions");
  detail::advantage_sums(stream, config, minibatch, advantage_stats, scratch);
  const std::int64_t batch = minibatch.size;
  const Scalar* advantage = minibatch.advantage;
  const Scalar* actions = minibatch.continuous_actions;
  const Scalar* old_logprob = minibatch.old_logprob;
  const Scalar* old_value = minibatch.old_value;
  const Scalar* returns = minibatch.returns;
  const double* stats = advantage_stats;
  const bool norm_adv = config.norm_adv, clip_vloss = config.clip_vloss;
  const Scalar clip = static_cast<Scalar>(config.clip_coef);
  const Scalar ent_coef = static_cast<Scalar>(config.ent_coef), vf_coef = static_cast<Scalar>(config.vf_coef);
  const Scalar inv_batch = Scalar(1) / static_cast<Scalar>(batch);
  const int dims = action_dim;
  parallel_reduce<kLossTermCount>(
      stream, batch,
      [=] SURGE_HD(std::int64_t i, double* acc) {
        const Scalar* mean = means + i * dims;
        const Scalar* action = actions + i * dims;
        const Scalar entropy = gaussian_entropy(log_std, dims);
        const Scalar log_ratio = gaussian_log_prob(action, mean, log_std, dims) - old_logprob[i];
        const Scalar adv = detail::normalised_advantage(advantage[i], norm_adv, stats, batch);
        const auto surrogate = detail::clipped_surrogate(adv, log_ratio, clip, inv_batch);
        for (int k = 0; k < dims; ++k) {
          // z = (a - mean) / sigma: dlogp/dmean = z / sigma, dlogp/dlog_std = z^2 - 1, dH/dlog_std = 1.
          const Scalar inv_sigma = scalar_exp(-log_std[k]);
          const Scalar z = (action[k] - mean[k]) * inv_sigma;
          d_means[i * dims + k] = surrogate.d_logp * z * inv_sigma;
          d_log_std_rows[i * dims + k] = surrogate.d_logp * (z * z - Scalar(1)) - ent_coef * inv_batch;
        }
        const auto value = detail::value_term(values[i], old_value[i], returns[i], clip_vloss, clip);
        d_values[i] = vf_coef * inv_batch * value.d_v;
        detail::add_terms(acc, surrogate.policy, value.loss, entropy, surrogate.ratio, log_ratio, clip);
      },
      scratch, terms);
}

double total_loss(const PpoLossConfig& config, const double* term_sums, std::int64_t batch) {
  const double b = static_cast<double>(batch);
  return term_sums[kPolicyLoss] / b - config.ent_coef * term_sums[kEntropy] / b + config.vf_coef * term_sums[kValueLoss] / b;
}

template void ppo_loss<float>(const Stream&, const PpoLossConfig&, const MinibatchView<float>&, int, const float*,
                              const float*, double*, double*, float*, float*, double*);
template void ppo_loss<double>(const Stream&, const PpoLossConfig&, const MinibatchView<double>&, int, const double*,
                               const double*, double*, double*, double*, double*, double*);
template void gaussian_ppo_loss<float>(const Stream&, const PpoLossConfig&, const MinibatchView<float>&, int, const float*,
                                       const float*, const float*, double*, double*, float*, float*, float*, double*);
template void gaussian_ppo_loss<double>(const Stream&, const PpoLossConfig&, const MinibatchView<double>&, int,
                                        const double*, const double*, const double*, double*, double*, double*, double*,
                                        double*, double*);

}  // namespace surge::rl
