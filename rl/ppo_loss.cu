// The PPO loss and its gradient with respect to the policy head's outputs and the values, one sample
// per thread, fused with the reduction of the loss terms. The categorical and Gaussian heads share
// everything but the log-probability and the entropy.
#include "rl/categorical.hpp"
#include "rl/collective.hpp"
#include "rl/gaussian.hpp"
#include "rl/ppo_loss.hpp"
#include "rl/ppo_loss_sample.hpp"
#include "rl/scalar_math.hpp"
#include "sim/parallel.cuh"

namespace surge::rl {
namespace detail {

// The advantages' sum and sum of squares, taken whether the agent normalises them or not: whether it
// does is on the device.
template <class Scalar>
void advantage_sums(const Stream& stream, const MinibatchView<Scalar>& minibatch, double* advantage_stats,
                    double* scratch, const Collective* ranks) {
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

// A sample's loss with the agent's scalars, read on the device.
template <class Scalar>
SURGE_HD_INLINE SampleLoss<Scalar> with_agent_scalars(SampleLoss<Scalar> sample, const AgentHyper& hyper) {
  sample.norm_adv = hyper.norm_adv != 0.0;
  sample.clip_vloss = hyper.clip_vloss != 0.0;
  sample.clip = static_cast<Scalar>(hyper.clip_coef);
  sample.ent_coef = static_cast<Scalar>(hyper.ent_coef);
  sample.vf_coef = static_cast<Scalar>(hyper.vf_coef);
  return sample;
}

}  // namespace detail

template <class Scalar>
void ppo_loss(const Stream& stream, const AgentHyper* hyper, int agent, const MinibatchView<Scalar>& minibatch,
              int num_actions, const Scalar* logits, const Scalar* values, double* advantage_stats, double* scratch,
              Scalar* d_logits, Scalar* d_values, double* terms, const Collective* ranks) {
  detail::advantage_sums(stream, minibatch, advantage_stats, scratch, ranks);
  const detail::SampleLoss<Scalar> base =
      detail::sample_loss(PpoLossConfig{}, minibatch, advantage_stats, ranks ? ranks->size() : 1);
  const std::int32_t* actions = minibatch.actions;
  const int count = num_actions;
  parallel_reduce<kLossTermCount>(
      stream, minibatch.size,
      [=] SURGE_HD(std::int64_t i, double* acc) {
        const detail::SampleLoss<Scalar> sample = detail::with_agent_scalars(base, hyper[agent]);
        const auto policy = sample.categorical(i, logits + i * count, count, actions[i], d_logits + i * count);
        sample.finish(i, values[i], d_values, policy, acc);
      },
      scratch, terms);
}

template <class Scalar>
void gaussian_ppo_loss(const Stream& stream, const AgentHyper* hyper, int agent, const MinibatchView<Scalar>& minibatch,
                       int action_dim, const Scalar* means, const Scalar* log_std, const Scalar* values,
                       double* advantage_stats, double* scratch, Scalar* d_means, Scalar* d_log_std_rows,
                       Scalar* d_values, double* terms, const Collective* ranks) {
  SURGE_CHECK(minibatch.continuous_actions != nullptr, "a Gaussian policy's minibatch needs its continuous actions");
  detail::advantage_sums(stream, minibatch, advantage_stats, scratch, ranks);
  const detail::SampleLoss<Scalar> base =
      detail::sample_loss(PpoLossConfig{}, minibatch, advantage_stats, ranks ? ranks->size() : 1);
  const Scalar* actions = minibatch.continuous_actions;
  const int dims = action_dim;
  parallel_reduce<kLossTermCount>(
      stream, minibatch.size,
      [=] SURGE_HD(std::int64_t i, double* acc) {
        const detail::SampleLoss<Scalar> sample = detail::with_agent_scalars(base, hyper[agent]);
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
          d_log_std_rows[i * dims + k] = surrogate.d_logp * (z * z - Scalar(1)) - sample.ent_coef * sample.inv_batch;
        }
        sample.finish(i, values[i], d_values, {surrogate, entropy, log_ratio}, acc);
      },
      scratch, terms);
}

template <class Scalar>
void ppo_loss(const Stream& stream, const PpoLossConfig& config, const MinibatchView<Scalar>& minibatch,
              int num_actions, const Scalar* logits, const Scalar* values, double* advantage_stats, double* scratch,
              Scalar* d_logits, Scalar* d_values, double* terms, const Collective* ranks) {
  SURGE_CHECK(minibatch.size >= 2 || !config.norm_adv,
              "normalising advantages needs a minibatch of at least 2 samples");
  const OwnAgentHyper hyper(stream, loss_hyper(config));
  ppo_loss(stream, hyper.get(), 0, minibatch, num_actions, logits, values, advantage_stats, scratch, d_logits, d_values,
           terms, ranks);
}

template <class Scalar>
void gaussian_ppo_loss(const Stream& stream, const PpoLossConfig& config, const MinibatchView<Scalar>& minibatch,
                       int action_dim, const Scalar* means, const Scalar* log_std, const Scalar* values,
                       double* advantage_stats, double* scratch, Scalar* d_means, Scalar* d_log_std_rows,
                       Scalar* d_values, double* terms, const Collective* ranks) {
  SURGE_CHECK(minibatch.size >= 2 || !config.norm_adv,
              "normalising advantages needs a minibatch of at least 2 samples");
  const OwnAgentHyper hyper(stream, loss_hyper(config));
  gaussian_ppo_loss(stream, hyper.get(), 0, minibatch, action_dim, means, log_std, values, advantage_stats, scratch,
                    d_means, d_log_std_rows, d_values, terms, ranks);
}

double total_loss(const PpoLossConfig& config, const double* term_sums, std::int64_t batch) {
  const double b = static_cast<double>(batch);
  return term_sums[kPolicyLoss] / b - config.ent_coef * term_sums[kEntropy] / b +
         config.vf_coef * term_sums[kValueLoss] / b;
}

template void ppo_loss<float>(const Stream&, const AgentHyper*, int, const MinibatchView<float>&, int, const float*,
                              const float*, double*, double*, float*, float*, double*, const Collective*);
template void ppo_loss<double>(const Stream&, const AgentHyper*, int, const MinibatchView<double>&, int, const double*,
                               const double*, double*, double*, double*, double*, double*, const Collective*);
template void ppo_loss<float>(const Stream&, const PpoLossConfig&, const MinibatchView<float>&, int, const float*,
                              const float*, double*, double*, float*, float*, double*, const Collective*);
template void ppo_loss<double>(const Stream&, const PpoLossConfig&, const MinibatchView<double>&, int, const double*,
                               const double*, double*, double*, double*, double*, double*, const Collective*);
template void gaussian_ppo_loss<float>(const Stream&, const AgentHyper*, int, const MinibatchView<float>&, int,
                                       const float*, const float*, const float*, double*, double*, float*, float*,
                                       float*, double*, const Collective*);
template void gaussian_ppo_loss<double>(const Stream&, const AgentHyper*, int, const MinibatchView<double>&, int,
                                        const double*, const double*, const double*, double*, double*, double*, double*,
                                        double*, double*, const Collective*);
template void gaussian_ppo_loss<float>(const Stream&, const PpoLossConfig&, const MinibatchView<float>&, int,
                                       const float*, const float*, const float*, double*, double*, float*, float*,
                                       float*, double*, const Collective*);
template void gaussian_ppo_loss<double>(const Stream&, const PpoLossConfig&, const MinibatchView<double>&, int,
                                        const double*, const double*, const double*, double*, double*, double*, double*,
                                        double*, double*, const Collective*);

}  // namespace surge::rl
