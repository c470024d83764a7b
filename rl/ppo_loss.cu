// The PPO loss and its gradient with respect to the policy head's outputs and the values, one sample
// per thread, fused with the reduction of the loss terms. The categorical and Gaussian heads share
// everything but the log-probability and the entropy.
#include "rl/categorical.hpp"
#include "rl/collective.hpp"
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
SURGE_HD_INLINE void add_terms(double* acc, Scalar policy, Scalar value_loss, Scalar entropy, Scalar ratio,
                               Scalar log_ratio, Scalar clip) {
  acc[kPolicyLoss] += static_cast<double>(policy);
  acc[kValueLoss] += static_cast<double>(value_loss);
  acc[kEntropy] += static_cast<double>(entropy);
  acc[kApproxKl] += static_cast<double>((ratio - Scalar(1)) - log_ratio);
  acc[kClipFraction] += (ratio - Scalar(1) > clip || Scalar(1) - ratio > clip) ? 1.0 : 0.0;
}

template <class Scalar>
void advantage_sums(const Stream& stream, const PpoLossConfig& config, const MinibatchView<Scalar>& minibatch,
                    double* advantage_stats, double* scratch, const Collective* ranks) {
  SURGE_CHECK(minibatch.size >= 2 || !config.norm_adv,
              "normalising advantages needs a minibatch of at least 2 samples");
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
  // Across ranks the minibatch is the union of theirs: its mean and std come from the summed sums.
  if (ranks && ranks->size() > 1) ranks->all_reduce_sum({advantage_stats, 2, stream.device()}, stream);
}

// What each sample's loss reads besides its policy head, copied out of the config and the minibatch
// before the kernel so that its lambda captures plain values; the per-sample steps both heads share.
template <class Scalar>
struct SampleLoss {
  std::int64_t batch;         // the samples the advantage statistics cover: B on every rank together
  const Scalar* advantage;    // [B]
  const Scalar* old_logprob;  // [B]
  const Scalar* old_value;    // [B]
  const Scalar* returns;      // [B]
  const double* stats;        // [2] the advantage sums when norm_adv
  bool norm_adv, clip_vloss;
  Scalar clip, ent_coef, vf_coef, inv_batch;

  // The clipped surrogate of sample i, given log(pi(a|s) / pi_old(a|s)).
  SURGE_HD Surrogate<Scalar> surrogate(std::int64_t i, Scalar log_ratio) const {
    return clipped_surrogate(normalised_advantage(advantage[i], norm_adv, stats, batch), log_ratio, clip, inv_batch);
  }

  // Sample i's value loss: writes dloss/dv, then adds all of its terms to `acc`.
  SURGE_HD void finish(std::int64_t i, Scalar value, Scalar* d_values, const Surrogate<Scalar>& surrogate,
                       Scalar entropy, Scalar log_ratio, double* acc) const {
    const auto term = value_term(value, old_value[i], returns[i], clip_vloss, clip);
    d_values[i] = vf_coef * inv_batch * term.d_v;
    add_terms(acc, surrogate.policy, term.loss, entropy, surrogate.ratio, log_ratio, clip);
  }
};

template <class Scalar>
SampleLoss<Scalar> sample_loss(const PpoLossConfig& config, const MinibatchView<Scalar>& minibatch,
                               const double* advantage_stats, const Collective* ranks) {
  return {minibatch.size * (ranks ? ranks->size() : 1),
          minibatch.advantage,
          minibatch.old_logprob,
          minibatch.old_value,
          minibatch.returns,
          advantage_stats,
          config.norm_adv,
          config.clip_vloss,
          static_cast<Scalar>(config.clip_coef),
          static_cast<Scalar>(config.ent_coef),
          static_cast<Scalar>(config.vf_coef),
          Scalar(1) / static_cast<Scalar>(minibatch.size)};
}

}  // namespace detail

template <class Scalar>
void ppo_loss(const Stream& stream, const PpoLossConfig& config, const MinibatchView<Scalar>& minibatch,
              int num_actions, const Scalar* logits, const Scalar* values, double* advantage_stats, double* scratch,
              Scalar* d_logits, Scalar* d_values, double* terms, const Collective* ranks) {
  detail::advantage_sums(stream, config, minibatch, advantage_stats, scratch, ranks);
  const detail::SampleLoss<Scalar> sample = detail::sample_loss(config, minibatch, advantage_stats, ranks);
  const std::int32_t* actions = minibatch.actions;
  const Scalar ent_coef = sample.ent_coef, inv_batch = sample.inv_batch;
  const int count = num_actions;
  parallel_reduce<kLossTermCount>(
      stream, minibatch.size,
      [=] SURGE_HD(std::int64_t i, double* acc) {
        const Scalar* row = logits + i * count;
        const Scalar log_z = log_partition(row, count);
        const Scalar entropy = categorical_entropy(row, count, log_z);
        const int action = actions[i];
        const Scalar log_ratio = row[action] - log_z - sample.old_logprob[i];
        const auto surrogate = sample.surrogate(i, log_ratio);
        for (int k = 0; k < count; ++k) {
          const Scalar log_p = row[k] - log_z;
          const Scalar p = scalar_exp(log_p);
          const Scalar d_policy = surrogate.d_logp * ((k == action ? Scalar(1) : Scalar(0)) - p);
          const Scalar d_entropy = -p * (log_p + entropy);  // dH/dlogit_k
          d_logits[i * count + k] = d_policy - ent_coef * inv_batch * d_entropy;
        }
        sample.finish(i, values[i], d_values, surrogate, entropy, log_ratio, acc);
      },
      scratch, terms);
}

template <class Scalar>
void gaussian_ppo_loss(const Stream& stream, const PpoLossConfig& config, const MinibatchView<Scalar>& minibatch,
                       int action_dim, const Scalar* means, const Scalar* log_std, const Scalar* values,
                       double* advantage_stats, double* scratch, Scalar* d_means, Scalar* d_log_std_rows,
                       Scalar* d_values, double* terms, const Collective* ranks) {
  SURGE_CHECK(minibatch.continuous_actions != nullptr, "a Gaussian policy's minibatch needs its continuous actions");
  detail::advantage_sums(stream, config, minibatch, advantage_stats, scratch, ranks);
  const detail::SampleLoss<Scalar> sample = detail::sample_loss(config, minibatch, advantage_stats, ranks);
  const Scalar* actions = minibatch.continuous_actions;
  const Scalar ent_coef = sample.ent_coef, inv_batch = sample.inv_batch;
  const int dims = action_dim;
  parallel_reduce<kLossTermCount>(
      stream, minibatch.size,
      [=] SURGE_HD(std::int64_t i, double* acc) {
        const Scalar* mean = means + i * dims;
        const Scalar* action = actions + i * dims;
        const Scalar entropy = gaussian_entropy(log_std, dims);
        const Scalar log_ratio = gaussian_log_prob(action, mean, log_std, dims) - sample.old_logprob[i];
        const auto surrogate = sample.surrogate(i, log_ratio);
        for (int k = 0; k < dims; ++k) {
          // z = (a - mean) / sigma: dlogp/dmean = z / sigma, dlogp/dlog_std = z^2 - 1, dH/dlog_std = 1.
          const Scalar inv_sigma = scalar_exp(-log_std[k]);
          const Scalar z = (action[k] - mean[k]) * inv_sigma;
          d_means[i * dims + k] = surrogate.d_logp * z * inv_sigma;
          d_log_std_rows[i * dims + k] = surrogate.d_logp * (z * z - Scalar(1)) - ent_coef * inv_batch;
        }
        sample.finish(i, values[i], d_values, surrogate, entropy, log_ratio, acc);
      },
      scratch, terms);
}

double total_loss(const PpoLossConfig& config, const double* term_sums, std::int64_t batch) {
  const double b = static_cast<double>(batch);
  return term_sums[kPolicyLoss] / b - config.ent_coef * term_sums[kEntropy] / b +
         config.vf_coef * term_sums[kValueLoss] / b;
}

template void ppo_loss<float>(const Stream&, const PpoLossConfig&, const MinibatchView<float>&, int, const float*,
                              const float*, double*, double*, float*, float*, double*, const Collective*);
template void ppo_loss<double>(const Stream&, const PpoLossConfig&, const MinibatchView<double>&, int, const double*,
                               const double*, double*, double*, double*, double*, double*, const Collective*);
template void gaussian_ppo_loss<float>(const Stream&, const PpoLossConfig&, const MinibatchView<float>&, int,
                                       const float*, const float*, const float*, double*, double*, float*, float*,
                                       float*, double*, const Collective*);
template void gaussian_ppo_loss<double>(const Stream&, const PpoLossConfig&, const MinibatchView<double>&, int,
                                        const double*, const double*, const double*, double*, double*, double*, double*,
                                        double*, double*, const Collective*);

}  // namespace surge::rl
