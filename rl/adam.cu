// Gradient-norm clipping and Adam, single-source.
#include "rl/adam.hpp"

#include <cmath>
#include <vector>

#include "rl/batched_kernels.hpp"
#include "sim/error.hpp"
#include "sim/parallel.cuh"
#include "sim/parallel_segments.cuh"

namespace surge::rl {

// Functors, not lambdas, for the per-parameter loops: see mlp.cu's note on nvcc's host-side wrappers.
namespace detail {

struct SquaredGradient {
  const float* grads;
  SURGE_HD_INLINE void operator()(std::int64_t i, double* acc) const {
    const double x = static_cast<double>(grads[i]);
    acc[0] += x * x;
  }
};

struct AdamUpdate {
  float* params;
  float* first;
  float* second;
  const float* grads;
  const OptimizerScalars* scalars;
  float beta1, beta2, eps;
  SURGE_HD_INLINE void operator()(std::int64_t i) const {
    // Frozen: every write keeps its old value. Written without a branch, so CPU loops vectorise.
    const float keep = scalars->frozen ? 1.0f : 0.0f;
    const float grad = grads[i] * static_cast<float>(scalars->grad_scale);
    const float m_i = beta1 * first[i] + (1.0f - beta1) * grad;
    const float v_i = beta2 * second[i] + (1.0f - beta2) * grad * grad;
    const float denominator = sqrtf(v_i) / static_cast<float>(scalars->bias_correction2_sqrt) + eps;
    const float step = static_cast<float>(scalars->step_size) * m_i / denominator;
    first[i] = keep * first[i] + (1.0f - keep) * m_i;
    second[i] = keep * second[i] + (1.0f - keep) * v_i;
    params[i] -= (1.0f - keep) * step;
  }
};

// The update on the device, eps read from the agent's scalars there.
struct AgentAdamUpdate {
  AdamUpdate update;
  const AgentHyper* hyper;
  int agent;
  SURGE_HD_INLINE void operator()(std::int64_t i) const {
    AdamUpdate with_eps = update;
    with_eps.eps = static_cast<float>(hyper[agent].adam_eps);
    with_eps(i);
  }
};

// Agent k = i / count's squared gradients, summed as SquaredGradient sums one agent's.
struct AgentSquaredGradients {
  PerAgent<const float> grads;
  SURGE_HD_INLINE void operator()(std::int64_t agent, std::int64_t i, double* acc) const {
    SquaredGradient{grads[agent]}(i, acc);
  }
};

// Element i of agent k = i / count: AgentAdamUpdate's update of element i % count with that agent's arrays,
// scalars and eps.
struct BatchedAdamUpdate {
  AdamBatch batch;
  OptimizerScalars* optimizer;
  const AgentHyper* hyper;
  std::int64_t count;
  float beta1, beta2;
  SURGE_HD_INLINE void operator()(std::int64_t i) const {
    const std::int64_t agent = i / count;
    const AdamUpdate update{
        batch.params[agent], batch.m[agent], batch.v[agent], batch.grads[agent],
        optimizer + agent,   beta1,          beta2,          static_cast<float>(hyper[agent].adam_eps)};
    update(i % count);
  }
};

// This update's scalars from the gradient norm and the step count (one thread).
SURGE_HD_INLINE void update_scalars(OptimizerScalars* s, double beta1, double beta2, double max_norm) {
  if (s->frozen) return;
  s->step += 1.0;
  const double norm = sqrt(s->grad_norm_sq);
  const double coef = max_norm / (norm + 1e-6);
  s->grad_scale = (max_norm > 0.0 && coef < 1.0) ? coef : 1.0;
  s->step_size = s->learning_rate / (1.0 - pow(beta1, s->step));
  s->bias_correction2_sqrt = sqrt(1.0 - pow(beta2, s->step));
}

// The CPU's sum of squared gradients, the same bits as parallel_reduce<1>(SquaredGradient): the same
// kCpuNormChunks chunks, each summed in index order, then folded in chunk order. parallel_reduce walks
// one chunk at a time, a chain of dependent additions; here kInterleave chunks advance together, so their
// chains overlap in the pipeline.
constexpr std::int64_t kInterleave = 8;

void interleaved_chunks(const float* grads, std::int64_t n, std::int64_t group, double* partial) {
  const std::int64_t shortest = n / kCpuNormChunks;  // every chunk holds shortest or shortest + 1 elements
  std::int64_t begin[kInterleave], end[kInterleave];
  double sum[kInterleave];
  for (std::int64_t c = 0; c < kInterleave; ++c) {
    begin[c] = n * (group + c) / kCpuNormChunks;
    end[c] = n * (group + c + 1) / kCpuNormChunks;
    sum[c] = 0.0;
  }
  for (std::int64_t k = 0; k < shortest; ++k)
    for (std::int64_t c = 0; c < kInterleave; ++c) {
      const double x = static_cast<double>(grads[begin[c] + k]);
      sum[c] += x * x;
    }
  for (std::int64_t c = 0; c < kInterleave; ++c) {
    for (std::int64_t i = begin[c] + shortest; i < end[c]; ++i) {
      const double x = static_cast<double>(grads[i]);
      sum[c] += x * x;
    }
    partial[group + c] = sum[c];
  }
}

double fold_chunks(const double* partial) {
  double total = 0.0;
  for (std::int64_t c = 0; c < kCpuNormChunks; ++c) total += partial[c];
  return total;
}

}  // namespace detail

void cpu_squared_norm_chunks(const float* grads, std::int64_t n, std::int64_t first, std::int64_t last,
                             double* partial) {
  std::int64_t c = first;
  for (; c + detail::kInterleave <= last; c += detail::kInterleave) detail::interleaved_chunks(grads, n, c, partial);
  for (; c < last; ++c) {
    double sum = 0.0;
    for (std::int64_t i = n * c / kCpuNormChunks; i < n * (c + 1) / kCpuNormChunks; ++i) {
      const double x = static_cast<double>(grads[i]);
      sum += x * x;
    }
    partial[c] = sum;
  }
}

void cpu_adam_scalars(const AdamConfig& config, const double* partial, OptimizerScalars* scalars) {
  scalars->grad_norm_sq = detail::fold_chunks(partial);
  detail::update_scalars(scalars, config.beta1, config.beta2, config.max_grad_norm);
}

void cpu_adam_update(const AdamConfig& config, const OptimizerScalars& scalars, float* params, const float* grads,
                     float* m, float* v, std::int64_t begin, std::int64_t end) {
  const detail::AdamUpdate update{params,
                                  m,
                                  v,
                                  grads,
                                  &scalars,
                                  static_cast<float>(config.beta1),
                                  static_cast<float>(config.beta2),
                                  static_cast<float>(config.adam_eps)};
  for (std::int64_t i = begin; i < end; ++i) update(i);
}

void gradient_norm_sq_reference(const Stream& stream, Span<const float> grads, double* scratch, double* out) {
  parallel_reduce<1>(stream, grads.size, detail::SquaredGradient{grads.data}, scratch, out);
}

void adam_step(const Stream& stream, const AdamConfig& config, const AgentHyper* hyper, int agent, Span<float> params,
               Span<const float> grads, Span<float> m, Span<float> v, OptimizerScalars* scalars, double* scratch) {
  const std::int64_t count = params.size;
  SURGE_CHECK(grads.size == count && m.size == count && v.size == count, "Adam buffers differ in size");
  const double beta1 = config.beta1, beta2 = config.beta2;
  const detail::AdamUpdate update{
      params.data, m.data, v.data, grads.data, scalars, static_cast<float>(beta1), static_cast<float>(beta2), 0.0f};
  if (stream.device().is_cpu()) {
    // The stream's work runs in order on the calling thread: the agent's scalars and this update's are
    // read here as a kernel would read them.
    const AdamConfig agent_config = adam_config(hyper[agent], config);
    double partial[kCpuNormChunks];
    if (cpu_loop_forks(count >= 4096)) {  // a region whose `if` is false would still enter libgomp
#pragma omp parallel for schedule(static)
      for (std::int64_t group = 0; group < kCpuNormChunks; group += detail::kInterleave)
        detail::interleaved_chunks(grads.data, count, group, partial);
    } else {
      for (std::int64_t group = 0; group < kCpuNormChunks; group += detail::kInterleave)
        detail::interleaved_chunks(grads.data, count, group, partial);
    }
    cpu_adam_scalars(agent_config, partial, scalars);
    detail::AdamUpdate cpu_update = update;
    cpu_update.eps = static_cast<float>(agent_config.adam_eps);
    parallel_for(stream, count, cpu_update);
    return;
  }
  gradient_norm_sq_reference(stream, grads, scratch, &scalars->grad_norm_sq);
  OptimizerScalars* s = scalars;
  parallel_for(stream, 1,
               [=] SURGE_HD(std::int64_t) { detail::update_scalars(s, beta1, beta2, hyper[agent].max_grad_norm); });
  parallel_for(stream, count, detail::AgentAdamUpdate{update, hyper, agent});
}

namespace detail {

// f(item) for items [0, count): on every core when the loop is worth a fork (cpu_loop_forks), else inline.
template <class F>
void cpu_items(std::int64_t count, bool worth_forking, F f) {
  if (cpu_loop_forks(worth_forking)) {
#pragma omp parallel for schedule(static)
    for (std::int64_t item = 0; item < count; ++item) f(item);
  } else {
    for (std::int64_t item = 0; item < count; ++item) f(item);
  }
}

// adam_step's CPU path for each agent, the same bits: its chunked sum of squares (cpu_squared_norm_chunks),
// its scalars, its element-wise update (cpu_adam_update), the agents' groups of chunks and blocks of
// parameters spread over the cores together. One loop per element kind, so the update vectorises.
void cpu_adam_step_batched(const AdamConfig& config, int agents, const AgentHyper* hyper, const AdamBatch& batch,
                           std::int64_t count, OptimizerScalars* optimizer) {
  const bool worth_forking = agents * count >= 4096;
  std::vector<double> partials(static_cast<std::size_t>(agents * kCpuNormChunks));
  double* const partial = partials.data();
  constexpr std::int64_t kGroups = kCpuNormChunks / kInterleave;
  cpu_items(agents * kGroups, worth_forking, [&](std::int64_t item) {
    const std::int64_t agent = item / kGroups, first = item % kGroups * kInterleave;
    cpu_squared_norm_chunks(batch.grads[agent], count, first, first + kInterleave, partial + agent * kCpuNormChunks);
  });
  for (int agent = 0; agent < agents; ++agent)
    cpu_adam_scalars(adam_config(hyper[agent], config), partial + agent * kCpuNormChunks, optimizer + agent);
  constexpr std::int64_t kBlock = 4096;
  const std::int64_t blocks = (count + kBlock - 1) / kBlock;
  cpu_items(agents * blocks, worth_forking, [&](std::int64_t item) {
    const std::int64_t agent = item / blocks, begin = item % blocks * kBlock;
    cpu_adam_update(adam_config(hyper[agent], config), optimizer[agent], batch.params[agent], batch.grads[agent],
                    batch.m[agent], batch.v[agent], begin, begin + kBlock < count ? begin + kBlock : count);
  });
}

}  // namespace detail

void gradient_norm_sq_batched(const Stream& stream, int agents, PerAgent<const float> grads, std::int64_t count,
                              double* scratch, double* out, std::int64_t out_stride) {
  parallel_reduce_segments<1>(stream, agents, count, detail::AgentSquaredGradients{grads}, scratch, out, out_stride);
}

void adam_step_batched(const Stream& stream, const AdamConfig& config, int agents, const AgentHyper* hyper,
                       const AdamBatch& batch, std::int64_t count, OptimizerScalars* optimizer, double* scratch) {
  const double beta1 = config.beta1, beta2 = config.beta2;
  if (stream.device().is_cpu()) {
    detail::cpu_adam_step_batched(config, agents, hyper, batch, count, optimizer);
    return;
  }
  constexpr std::int64_t kScalarsStride = sizeof(OptimizerScalars) / sizeof(double);
  gradient_norm_sq_batched(stream, agents, batch.grads, count, scratch, &optimizer->grad_norm_sq, kScalarsStride);
  OptimizerScalars* const s = optimizer;
  parallel_for(stream, agents, [=] SURGE_HD(std::int64_t agent) {
    detail::update_scalars(s + agent, beta1, beta2, hyper[agent].max_grad_norm);
  });
  parallel_for(
      stream, agents * count,
      detail::BatchedAdamUpdate{batch, optimizer, hyper, count, static_cast<float>(beta1), static_cast<float>(beta2)});
}

void adam_step(const Stream& stream, const AdamConfig& config, Span<float> params, Span<const float> grads,
               Span<float> m, Span<float> v, OptimizerScalars* scalars, double* scratch) {
  AgentHyper values{};
  values.max_grad_norm = config.max_grad_norm;
  values.adam_eps = config.adam_eps;
  const OwnAgentHyper hyper(stream, values);
  adam_step(stream, config, hyper.get(), 0, params, grads, m, v, scalars, scratch);
}

}  // namespace surge::rl
