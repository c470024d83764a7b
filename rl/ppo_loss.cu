// The PPO loss and its gradient with respect to logits and values, one sample per thread, fused with
// the reduction of the loss terms.
#include "rl/categorical.hpp"
#include "rl/ppo_loss.hpp"
#include "rl/scalar_math.hpp"
#include "sim/parallel.cuh"

namespace surge::rl {

template <class Scalar>
void ppo_loss(const Stream& stream, const PpoLossConfig& config, const MinibatchView<Scalar>& minibatch, int num_actions,
              const Scalar* logits, const Scalar* values, double* advantage_stats, double* scratch, Scalar* d_logits,
              Scalar* d_values, double* terms) {
  const std::int64_t batch = minibatch.size;
  SURGE_CHECK(batch >= 2 || !config.norm_adv, "normalising advantages needs a minibatch of at least 2 samples");
  const Scalar* advantage = minibatch.advantage;
  if (config.norm_adv) {
    parallel_reduce<2>(
        stream, batch,
        [=] SURGE_HD(std::int64_t i, double* acc) {
          const double a = static_cast<double>(advantage[i]);
          acc[0] += a;
          acc[1] += a * a;
        },
        scratch, advantage_stats);
  }
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
        // ---- policy
        const Scalar* row = logits + i * count;
        const Scalar log_z = log_partition(row, count);
        const Scalar entropy = categorical_entropy(row, count, log_z);
        const int action = actions[i];
        const Scalar log_ratio = row[action] - log_z - old_logprob[i];
        const Scalar ratio = scalar_exp(log_ratio);
        Scalar adv = advantage[i];
        if (norm_adv) {
          const double mean = stats[0] / static_cast<double>(batch);
          const double variance = (stats[1] - stats[0] * mean) / static_cast<double>(batch - 1);
          const double std_dev = variance > 0.0 ? sqrt(variance) : 0.0;
          adv = static_cast<Scalar>((static_cast<double>(adv) - mean) / (std_dev + 1e-8));
        }
        const Scalar surrogate = -adv * ratio;
        const Scalar clipped = -adv * scalar_clamp(ratio, Scalar(1) - clip, Scalar(1) + clip);
        const Scalar policy = scalar_max(surrogate, clipped);
        // Where the clipped branch is strictly larger, ratio lies outside the clip range and the loss is
        // flat in it; elsewhere both branches have derivative -adv * ratio with respect to log p(a).
        const Scalar d_logp = (surrogate >= clipped ? -adv * ratio : Scalar(0)) * inv_batch;
        for (int k = 0; k < count; ++k) {
          const Scalar log_p = row[k] - log_z;
          const Scalar p = scalar_exp(log_p);
          const Scalar d_policy = d_logp * ((k == action ? Scalar(1) : Scalar(0)) - p);
          const Scalar d_entropy = -p * (log_p + entropy);  // dH/dlogit_k
          d_logits[i * count + k] = d_policy - ent_coef * inv_batch * d_entropy;
        }
        // ---- value
        const Scalar v = values[i], target = returns[i];
        const Scalar error = v - target;
        Scalar value_loss = Scalar(0.5) * error * error, d_v = error;
        if (clip_vloss) {
          const Scalar step = v - old_value[i];
          const Scalar clipped_error = old_value[i] + scalar_clamp(step, -clip, clip) - target;
          // The clipped branch can only be strictly larger when the step was clipped, where it is flat in v.
          if (clipped_error * clipped_error > error * error) {
            value_loss = Scalar(0.5) * clipped_error * clipped_error;
            d_v = Scalar(0);
          }
        }
        d_values[i] = vf_coef * inv_batch * d_v;
        // ---- statistics
        acc[kPolicyLoss] += static_cast<double>(policy);
        acc[kValueLoss] += static_cast<double>(value_loss);
        acc[kEntropy] += static_cast<double>(entropy);
        acc[kApproxKl] += static_cast<double>((ratio - Scalar(1)) - log_ratio);
        acc[kClipFraction] += (ratio - Scalar(1) > clip || Scalar(1) - ratio > clip) ? 1.0 : 0.0;
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

}  // namespace surge::rl
