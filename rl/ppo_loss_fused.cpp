// The CPU's fused PPO update (rl/ppo_loss_fused.hpp).
#include "rl/ppo_loss_fused.hpp"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "rl/cpu_task_pair.hpp"
#include "rl/fused_mlp.hpp"
#include "rl/ppo_loss_sample.hpp"
#include "sim/error.hpp"
#include "sim/reduce_order.hpp"

namespace surge::rl {
namespace {

// The CPU parallel_reduce's order (sim/parallel.cuh, kCpuReduceChunks), which ppo_loss's sums take.
constexpr std::int64_t kReduceChunks = kCpuReduceChunks;

template <int kWidth>
struct ChunkedSums {
  explicit ChunkedSums(std::int64_t samples) : samples(samples) {}
  // The running sums of sample i's chunk; samples come in index order.
  double* at(std::int64_t i) {
    while (i >= samples * (chunk + 1) / kReduceChunks) ++chunk;
    return partial[chunk];
  }
  double total(int k) const {
    double sum = 0.0;
    for (std::int64_t c = 0; c < kReduceChunks; ++c) sum += partial[c][k];
    return sum;
  }
  std::int64_t samples, chunk = 0;
  double partial[kReduceChunks][kWidth] = {};
};

using Sample = detail::SampleLoss<float>;

// The policy's loss at the actor's head, tile by tile: dloss/dlogits and the policy's term sums.
struct PolicyHead {
  const Sample* sample;
  const std::int32_t* actions;
  int count;
  ChunkedSums<kLossTermCount>* sums;
  static void gradient(void* self, std::int64_t row0, int rows, const float* logits, std::int64_t ld, float* d_logits) {
    const PolicyHead& head = *static_cast<const PolicyHead*>(self);
    for (int r = 0; r < rows; ++r) {
      const std::int64_t i = row0 + r;
      const auto policy = head.sample->categorical(i, logits + r * ld, head.count, head.actions[i], d_logits + r * ld);
      detail::add_policy_terms(head.sums->at(i), policy, head.sample->clip);
    }
  }
};

// The value loss at the critic's head: dloss/dvalue and the value loss's sum.
struct ValueHead {
  const Sample* sample;
  ChunkedSums<kLossTermCount>* sums;
  static void gradient(void* self, std::int64_t row0, int rows, const float* values, std::int64_t ld, float* d_values) {
    const ValueHead& head = *static_cast<const ValueHead*>(self);
    for (int r = 0; r < rows; ++r) {
      const std::int64_t i = row0 + r;
      head.sums->at(i)[kValueLoss] += static_cast<double>(head.sample->value(i, values[r * ld], d_values + r * ld));
    }
  }
};

// What one update shares between its two halves.
struct Update {
  const ActorCritic* net;
  const PpoLossConfig* loss;
  const AdamConfig* adam;
  const MinibatchView<float>* minibatch;
  LearnerBuffers learner;
  double* terms;
  std::uint64_t params_version;
  std::int64_t count;       // parameters
  std::int64_t split;       // the critic's parameters start here; the actor's lie below
  std::int64_t actor_end;   // gradient-norm chunks [0, actor_end) lie within the actor's parameters,
  std::int64_t critic_end;  // [critic_end, kCpuNormChunks) within the critic's, those between straddle both
};

void actor_half(const Update& u, double* norm_chunks) {
  const MinibatchView<float>& mb = *u.minibatch;
  double stats[2] = {0.0, 0.0};
  if (u.loss->norm_adv) {
    ChunkedSums<2> sums(mb.size);
    for (std::int64_t i = 0; i < mb.size; ++i) {
      const double a = static_cast<double>(mb.advantage[i]);
      double* acc = sums.at(i);
      acc[0] += a;
      acc[1] += a * a;
    }
    stats[0] = sums.total(0);
    stats[1] = sums.total(1);
  }
  Sample sample = detail::sample_loss(*u.loss, mb, stats, 1);
  if (sample.norm_adv) {
    // Normalised once per minibatch, not once per sample inside the loss: the same function of the same
    // sums, so the same floats, with its mean, variance and square root taken outside the loop.
    thread_local std::vector<float> normalised;
    normalised.resize(static_cast<std::size_t>(mb.size));
    for (std::int64_t i = 0; i < mb.size; ++i)
      normalised[i] = detail::normalised_advantage(mb.advantage[i], true, stats, sample.batch);
    sample.advantage = normalised.data();
    sample.norm_adv = false;
  }
  ChunkedSums<kLossTermCount> sums(mb.size);
  PolicyHead head{&sample, mb.actions, u.net->num_actions(), &sums};
  fused_mlp_train_pass(u.net->actor(), u.learner.params, mb.obs, mb.size, {&PolicyHead::gradient, &head},
                       u.learner.grads, u.params_version);
  for (const int k : {kPolicyLoss, kEntropy, kApproxKl, kClipFraction}) u.terms[k] = sums.total(k);
  cpu_squared_norm_chunks(u.learner.grads, u.count, 0, u.actor_end, norm_chunks);
}

void critic_half(const Update& u, double* norm_chunks) {
  const MinibatchView<float>& mb = *u.minibatch;
  const Sample sample = detail::sample_loss(*u.loss, mb, nullptr, 1);  // the value loss reads no advantage
  ChunkedSums<kLossTermCount> sums(mb.size);
  ValueHead head{&sample, &sums};
  fused_mlp_train_pass(u.net->critic(), u.learner.params, mb.obs, mb.size, {&ValueHead::gradient, &head},
                       u.learner.grads, u.params_version);
  u.terms[kValueLoss] = sums.total(kValueLoss);
  cpu_squared_norm_chunks(u.learner.grads, u.count, u.critic_end, kCpuNormChunks, norm_chunks);
}

// The two halves of each step, for run_task_pair.
struct GradientStep {
  const Update* update;
  double* norm_chunks;
  static void run(void* self, int half) {
    const GradientStep& step = *static_cast<const GradientStep*>(self);
    if (half == 0)
      actor_half(*step.update, step.norm_chunks);
    else
      critic_half(*step.update, step.norm_chunks);
  }
};
struct AdamStep {
  const Update* update;
  const OptimizerScalars* scalars;
  static void run(void* self, int half) {
    const AdamStep& step = *static_cast<const AdamStep*>(self);
    const Update& u = *step.update;
    const LearnerBuffers& l = u.learner;
    const std::int64_t begin = half == 0 ? 0 : u.split, end = half == 0 ? u.split : u.count;
    cpu_adam_update(*u.adam, *step.scalars, l.params, l.grads, l.adam_m, l.adam_v, begin, end);
  }
};

}  // namespace

bool fused_ppo_update_applies(const ActorCritic& net, Device device) {
  const auto fused_fp32 = [](const Mlp& mlp) {
    return mlp.fused_on_cpu() && fused_mlp_fits(mlp) && mlp.precision() == Precision::Fp32;
  };
  return device.is_cpu() && !net.continuous() && !net.pixels() && fused_fp32(net.actor()) && fused_fp32(net.critic());
}

int fused_ppo_update_threads(std::int64_t cpu_threads) {
  // The processors this process may run on (its affinity, as `taskset` or a launcher's binding sets it),
  // not the machine's: a helper that shares its caller's one core only waits for it.
  static const int cores = std::max(1, omp_get_num_procs());
  if (omp_get_level() > 0) return 1;
  return static_cast<int>(std::min<std::int64_t>(2, cpu_threads > 0 ? cpu_threads : cores));
}

void fused_ppo_update(const ActorCritic& net, const PpoLossConfig& loss, const AdamConfig& adam,
                      const MinibatchView<float>& minibatch, const LearnerBuffers& learner, double* terms,
                      std::uint64_t params_version, int threads) {
  SURGE_CHECK(!net.continuous(), "the fused update takes a categorical policy");
  SURGE_CHECK(minibatch.size >= 2 || !loss.norm_adv, "normalising advantages needs a minibatch of at least 2 samples");
  const std::int64_t count = net.table().total(), split = net.critic().weight_offset(0);
  // Chunk c of the gradient norm covers [count c / kCpuNormChunks, count (c + 1) / kCpuNormChunks).
  std::int64_t actor_end = 0, critic_end = kCpuNormChunks;
  while (actor_end < kCpuNormChunks && count * (actor_end + 1) / kCpuNormChunks <= split) ++actor_end;
  while (critic_end > 0 && count * (critic_end - 1) / kCpuNormChunks >= split) --critic_end;
  const Update u{&net, &loss, &adam, &minibatch, learner, terms, params_version, count, split, actor_end, critic_end};
  const bool helped = threads >= 2;

  double norm_chunks[kCpuNormChunks];
  GradientStep gradient{&u, norm_chunks};
  run_task_pair(&GradientStep::run, &gradient, helped);
  cpu_squared_norm_chunks(learner.grads, count, actor_end, critic_end, norm_chunks);
  cpu_adam_scalars(adam, norm_chunks, learner.optimizer);
  AdamStep step{&u, learner.optimizer};
  run_task_pair(&AdamStep::run, &step, helped);
}

}  // namespace surge::rl
