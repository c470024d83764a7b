// The PPO loss and its gradient with respect to the policy head's outputs and the values, one sample
// per thread, fused with the reduction of the loss terms. The categorical and Gaussian heads share
// everything but the log-probability and the entropy; the per-agent launchers and the batched ones
// (rl/batched_loss.hpp, K agents in one segmented reduction) share the per-sample functors.
#include "rl/batched_loss.hpp"
#include "rl/categorical.hpp"
#include "rl/collective.hpp"
#include "rl/gaussian.hpp"
#include "rl/ppo_loss.hpp"
#include "rl/ppo_loss_sample.hpp"
#include "rl/scalar_math.hpp"
#include "sim/parallel.cuh"
#include "sim/parallel_segments.cuh"

namespace surge::rl {
namespace detail {

// A functor rather than a lambda (see mlp.cu's note on nvcc's host-side wrappers), shared by the per-agent
// launchers (agent 0 of arrays at stride 0) and the batched ones (agent k, parallel_reduce_segments).
// Element i of agent `agent`: the advantage's sum and square, taken whether the agent normalises them or
// not (whether it does is on the device).
template <class Scalar>
struct AdvantageSums {
  PerAgent<const Scalar> advantage;  // [B]
  SURGE_HD_INLINE void operator()(std::int64_t agent, std::int64_t i, double* acc) const {
    const double a = static_cast<double>(advantage[agent][i]);
    acc[0] += a;
    acc[1] += a * a;
  }
};

// Agent 0's elements of a per-agent functor, for parallel_reduce.
template <class F>
struct OneAgent {
  F f;
  SURGE_HD_INLINE void operator()(std::int64_t i, double* acc) const { f(0, i, acc); }
};

template <class Scalar>
void advantage_sums(const Stream& stream, const MinibatchView<Scalar>& minibatch, double* advantage_stats,
                    double* scratch, const Collective* ranks) {
  parallel_reduce<2>(stream, minibatch.size, OneAgent<AdvantageSums<Scalar>>{{{minibatch.advantage, 0}}}, scratch,
                     advantage_stats);
  // Across ranks the minibatch is the union of theirs: its mean and std come from the summed sums.
  if (ranks && ranks->size() > 1) ranks->all_reduce_sum({advantage_stats, 2, stream.device()}, stream);
}

// What every agent's per-sample loss reads besides its policy head: agent k's scalars from hyper[k], its
// advantage sums and its minibatch's fields.
template <class Scalar>
struct AgentSamples {
  const AgentHyper* hyper;                                                    // [K]
  PerAgent<const double> stats;                                               // [2] the advantage sums
  PerAgent<const Scalar> advantage, old_logprob, old_value, returns, values;  // [B]
  PerAgent<Scalar> d_values;                                                  // [B]
  std::int64_t stats_batch;  // the samples the advantage statistics cover: B on every rank together
  Scalar inv_batch;          // 1 / B

  SURGE_HD_INLINE SampleLoss<Scalar> sample(std::int64_t agent) const {
    const AgentHyper& h = hyper[agent];
    return {stats_batch,
            advantage[agent],
            old_logprob[agent],
            old_value[agent],
            returns[agent],
            stats[agent],
            h.norm_adv != 0.0,
            h.clip_vloss != 0.0,
            static_cast<Scalar>(h.clip_coef),
            static_cast<Scalar>(h.ent_coef),
            static_cast<Scalar>(h.vf_coef),
            inv_batch};
  }
};

// Sample i of agent `agent` under a categorical policy: writes dloss/dlogits and dloss/dv, adds the terms.
template <class Scalar>
struct CategoricalLossSamples {
  AgentSamples<Scalar> agents;
  PerAgent<const std::int32_t> actions;  // [B]
  PerAgent<const Scalar> logits;         // [B][count]
  PerAgent<Scalar> d_logits;             // [B][count]
  int count;
  SURGE_HD_INLINE void operator()(std::int64_t agent, std::int64_t i, double* acc) const {
    const SampleLoss<Scalar> sample = agents.sample(agent);
    const auto policy =
        sample.categorical(i, logits[agent] + i * count, count, actions[agent][i], d_logits[agent] + i * count);
    sample.finish(i, agents.values[agent][i], agents.d_values[agent], policy, acc);
  }
};

// Sample i of agent `agent` under a diagonal Gaussian policy with a state-independent log std: writes
// dloss/dmeans, the per-sample terms of dloss/dlog_std and dloss/dv, adds the terms.
template <class Scalar>
struct GaussianLossSamples {
  AgentSamples<Scalar> agents;
  PerAgent<const Scalar> actions;   // [B][dims]
  PerAgent<const Scalar> means;     // [B][dims]
  PerAgent<const Scalar> log_std;   // [dims]
  PerAgent<Scalar> d_means;         // [B][dims]
  PerAgent<Scalar> d_log_std_rows;  // [B][dims]
  int dims;
  SURGE_HD_INLINE void operator()(std::int64_t agent, std::int64_t i, double* acc) const {
    const SampleLoss<Scalar> sample = agents.sample(agent);
    const Scalar* std_log = log_std[agent];
    const Scalar* mean = means[agent] + i * dims;
    const Scalar* action = actions[agent] + i * dims;
    Scalar* d_mean = d_means[agent] + i * dims;
    Scalar* d_log_std = d_log_std_rows[agent] + i * dims;
    const Scalar entropy = gaussian_entropy(std_log, dims);
    const Scalar log_ratio = gaussian_log_prob(action, mean, std_log, dims) - sample.old_logprob[i];
    const auto surrogate = sample.surrogate(i, log_ratio);
    for (int k = 0; k < dims; ++k) {
      // z = (a - mean) / sigma: dlogp/dmean = z / sigma, dlogp/dlog_std = z^2 - 1, dH/dlog_std = 1.
      const Scalar inv_sigma = scalar_exp(-std_log[k]);
      const Scalar z = (action[k] - mean[k]) * inv_sigma;
      d_mean[k] = surrogate.d_logp * z * inv_sigma;
      d_log_std[k] = surrogate.d_logp * (z * z - Scalar(1)) - sample.ent_coef * sample.inv_batch;
    }
    sample.finish(i, agents.values[agent][i], agents.d_values[agent], {surrogate, entropy, log_ratio}, acc);
  }
};

// The per-agent launchers' view of their one agent: hyper[agent] and the minibatch at stride 0.
template <class Scalar>
AgentSamples<Scalar> one_agent_samples(const AgentHyper* hyper, int agent, const MinibatchView<Scalar>& minibatch,
                                       const Scalar* values, const double* advantage_stats, Scalar* d_values,
                                       const Collective* ranks) {
  return {hyper + agent,
          {advantage_stats, 0},
          {minibatch.advantage, 0},
          {minibatch.old_logprob, 0},
          {minibatch.old_value, 0},
          {minibatch.returns, 0},
          {values, 0},
          {d_values, 0},
          minibatch.size * (ranks ? ranks->size() : 1),
          Scalar(1) / static_cast<Scalar>(minibatch.size)};
}

}  // namespace detail

template <class Scalar>
void ppo_loss(const Stream& stream, const AgentHyper* hyper, int agent, const MinibatchView<Scalar>& minibatch,
              int num_actions, const Scalar* logits, const Scalar* values, double* advantage_stats, double* scratch,
              Scalar* d_logits, Scalar* d_values, double* terms, const Collective* ranks) {
  detail::advantage_sums(stream, minibatch, advantage_stats, scratch, ranks);
  const detail::CategoricalLossSamples<Scalar> samples{
      detail::one_agent_samples(hyper, agent, minibatch, values, advantage_stats, d_values, ranks),
      {minibatch.actions, 0},
      {logits, 0},
      {d_logits, 0},
      num_actions};
  parallel_reduce<kLossTermCount>(stream, minibatch.size,
                                  detail::OneAgent<detail::CategoricalLossSamples<Scalar>>{samples}, scratch, terms);
}

std::int64_t ppo_loss_batched_scratch_doubles(Device device, int agents) {
  return reduce_segments_scratch_size(device, agents, kLossTermCount);  // the wider of its two reductions
}

namespace detail {

// The batched launchers' checks and their first reduction: every agent's advantage sums.
AgentSamples<float> batched_samples(const Stream& stream, int agents, const AgentHyper* hyper,
                                    const LossBatch& minibatch, PerAgent<const float> values,
                                    PerAgent<double> advantage_stats, double* scratch, PerAgent<float> d_values,
                                    PerAgent<double> terms) {
  SURGE_CHECK(agents >= 0, "a batched PPO loss: a negative agent count");
  SURGE_CHECK(agents <= 1 || (advantage_stats.stride >= 2 && terms.stride >= kLossTermCount),
              "a batched PPO loss: the agents' advantage statistics or term sums overlap");
  const std::int64_t size = minibatch.size;
  parallel_reduce_segments<2>(stream, agents, size, AdvantageSums<float>{minibatch.advantage}, scratch,
                              advantage_stats.data, advantage_stats.stride);
  return {hyper,
          {advantage_stats.data, advantage_stats.stride},
          minibatch.advantage,
          minibatch.old_logprob,
          minibatch.old_value,
          minibatch.returns,
          values,
          d_values,
          size,
          1.0f / static_cast<float>(size)};
}

}  // namespace detail

void ppo_loss_batched(const Stream& stream, int agents, const AgentHyper* hyper, const LossBatch& minibatch,
                      int num_actions, PerAgent<const float> logits, PerAgent<const float> values,
                      PerAgent<double> advantage_stats, double* scratch, PerAgent<float> d_logits,
                      PerAgent<float> d_values, PerAgent<double> terms) {
  const detail::AgentSamples<float> samples =
      detail::batched_samples(stream, agents, hyper, minibatch, values, advantage_stats, scratch, d_values, terms);
  parallel_reduce_segments<kLossTermCount>(
      stream, agents, minibatch.size,
      detail::CategoricalLossSamples<float>{samples, minibatch.actions, logits, d_logits, num_actions}, scratch,
      terms.data, terms.stride);
}

void gaussian_ppo_loss_batched(const Stream& stream, int agents, const AgentHyper* hyper, const LossBatch& minibatch,
                               int action_dim, PerAgent<const float> means, PerAgent<const float> log_std,
                               PerAgent<const float> values, PerAgent<double> advantage_stats, double* scratch,
                               PerAgent<float> d_means, PerAgent<float> d_log_std_rows, PerAgent<float> d_values,
                               PerAgent<double> terms) {
  SURGE_CHECK(minibatch.continuous_actions.data != nullptr,
              "a Gaussian policy's minibatch needs its continuous actions");
  const detail::AgentSamples<float> samples =
      detail::batched_samples(stream, agents, hyper, minibatch, values, advantage_stats, scratch, d_values, terms);
  parallel_reduce_segments<kLossTermCount>(
      stream, agents, minibatch.size,
      detail::GaussianLossSamples<float>{samples, minibatch.continuous_actions, means, log_std, d_means, d_log_std_rows,
                                         action_dim},
      scratch, terms.data, terms.stride);
}

template <class Scalar>
void gaussian_ppo_loss(const Stream& stream, const AgentHyper* hyper, int agent, const MinibatchView<Scalar>& minibatch,
                       int action_dim, const Scalar* means, const Scalar* log_std, const Scalar* values,
                       double* advantage_stats, double* scratch, Scalar* d_means, Scalar* d_log_std_rows,
                       Scalar* d_values, double* terms, const Collective* ranks) {
  SURGE_CHECK(minibatch.continuous_actions != nullptr, "a Gaussian policy's minibatch needs its continuous actions");
  detail::advantage_sums(stream, minibatch, advantage_stats, scratch, ranks);
  const detail::GaussianLossSamples<Scalar> samples{
      detail::one_agent_samples(hyper, agent, minibatch, values, advantage_stats, d_values, ranks),
      {minibatch.continuous_actions, 0},
      {means, 0},
      {log_std, 0},
      {d_means, 0},
      {d_log_std_rows, 0},
      action_dim};
  parallel_reduce<kLossTermCount>(stream, minibatch.size,
                                  detail::OneAgent<detail::GaussianLossSamples<Scalar>>{samples}, scratch, terms);
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
