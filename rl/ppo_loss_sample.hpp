#pragma once
// One sample's PPO loss and its gradient, single-source (SURGE_HD): the pieces rl/ppo_loss.cu's kernels
// run per sample, and that the CPU's fused update (rl/ppo_loss_fused.cpp) runs tile by tile. The policy's
// part reads only the actor's outputs and the advantages, the value's part only the critic's output.
#include <cmath>
#include <cstdint>

#include "rl/categorical.hpp"
#include "rl/learner_configs.hpp"
#include "rl/ppo_loss.hpp"
#include "rl/scalar_math.hpp"
#include "sim/hd.hpp"

namespace surge::rl::detail {

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

// What the policy's part of one sample leaves for the term sums.
template <class Scalar>
struct PolicySample {
  Surrogate<Scalar> surrogate;
  Scalar entropy, log_ratio;
};

// The policy's terms of one sample (all but the value loss) into acc[kLossTermCount].
template <class Scalar>
SURGE_HD_INLINE void add_policy_terms(double* acc, const PolicySample<Scalar>& sample, Scalar clip) {
  const Scalar ratio = sample.surrogate.ratio;
  acc[kPolicyLoss] += static_cast<double>(sample.surrogate.policy);
  acc[kEntropy] += static_cast<double>(sample.entropy);
  acc[kApproxKl] += static_cast<double>((ratio - Scalar(1)) - sample.log_ratio);
  acc[kClipFraction] += (ratio - Scalar(1) > clip || Scalar(1) - ratio > clip) ? 1.0 : 0.0;
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

  // Sample i of a categorical policy with logits row [count]: writes dloss/dlogits into d_row [count]. The
  // probabilities wait in d_row between the entropy (categorical_entropy's sum, term for term) and the
  // gradient, which reads them instead of taking each exponential again.
  SURGE_HD PolicySample<Scalar> categorical(std::int64_t i, const Scalar* row, int count, int action,
                                            Scalar* d_row) const {
    const Scalar log_z = log_partition(row, count);
    Scalar entropy = Scalar(0);
    for (int k = 0; k < count; ++k) {
      const Scalar log_p = row[k] - log_z;
      d_row[k] = scalar_exp(log_p);
      entropy -= d_row[k] * log_p;
    }
    const Scalar log_ratio = row[action] - log_z - old_logprob[i];
    const auto surrogate = this->surrogate(i, log_ratio);
    for (int k = 0; k < count; ++k) {
      const Scalar log_p = row[k] - log_z;
      const Scalar p = d_row[k];
      const Scalar d_policy = surrogate.d_logp * ((k == action ? Scalar(1) : Scalar(0)) - p);
      const Scalar d_entropy = -p * (log_p + entropy);  // dH/dlogit_k
      d_row[k] = d_policy - ent_coef * inv_batch * d_entropy;
    }
    return {surrogate, entropy, log_ratio};
  }

  // Sample i's value loss: writes dloss/dv into *d_value and returns the loss.
  SURGE_HD Scalar value(std::int64_t i, Scalar v, Scalar* d_value) const {
    const auto term = value_term(v, old_value[i], returns[i], clip_vloss, clip);
    *d_value = vf_coef * inv_batch * term.d_v;
    return term.loss;
  }

  // Both parts' terms of sample i into acc, after writing dloss/dv.
  SURGE_HD void finish(std::int64_t i, Scalar v, Scalar* d_values, const PolicySample<Scalar>& policy,
                       double* acc) const {
    acc[kValueLoss] += static_cast<double>(value(i, v, d_values + i));
    add_policy_terms(acc, policy, clip);
  }
};

template <class Scalar>
SampleLoss<Scalar> sample_loss(const PpoLossConfig& config, const MinibatchView<Scalar>& minibatch,
                               const double* advantage_stats, std::int64_t ranks) {
  return {minibatch.size * ranks,
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

}  // namespace surge::rl::detail
