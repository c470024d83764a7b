// Gradient-norm clipping and Adam, single-source.
#include "rl/adam.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "rl/batched_kernels.hpp"

#if defined(__AVX512F__) && !defined(__CUDACC__)
#include <immintrin.h>
#endif

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

#if defined(__AVX512F__) && !defined(__CUDACC__)
// The first `count` (a multiple of 8) elements of the kInterleave chunks starting at begin[c], chunk c in
// lane c of one register: eight elements of each chunk are loaded as a row, widened to double and
// transposed (three rounds of two-register shuffles), so each fused multiply-add takes the next element of
// every chunk, and each chunk's sum is the same chain of additions in index order as one chunk at a time.
void interleaved_rows(const float* grads, const std::int64_t* begin, std::int64_t count, double* sum) {
  static_assert(kInterleave == 8, "one lane of a register of doubles per chunk");
  typedef float Row __attribute__((vector_size(32), aligned(alignof(float))));
  typedef double Lanes __attribute__((vector_size(64)));
  Lanes sums = {sum[0], sum[1], sum[2], sum[3], sum[4], sum[5], sum[6], sum[7]};
  for (std::int64_t k = 0; k < count; k += 8) {
    Lanes row[8], pair[8], quad[8];
    for (int c = 0; c < 8; ++c)
      row[c] = __builtin_convertvector(*reinterpret_cast<const Row*>(grads + begin[c] + k), Lanes);
    for (int c = 0; c < 8; c += 2) {  // pair[c]: elements 0, 2, 4, 6 of rows c and c + 1; pair[c + 1] the rest
      pair[c] = __builtin_shufflevector(row[c], row[c + 1], 0, 8, 2, 10, 4, 12, 6, 14);
      pair[c + 1] = __builtin_shufflevector(row[c], row[c + 1], 1, 9, 3, 11, 5, 13, 7, 15);
    }
    for (int c = 0; c < 8; c += 4)  // quad[c + j]: elements j and j + 4 (j < 4) of rows c .. c + 3
      for (int j = 0; j < 2; ++j) {
        quad[c + j] = __builtin_shufflevector(pair[c + j], pair[c + 2 + j], 0, 1, 8, 9, 4, 5, 12, 13);
        quad[c + 2 + j] = __builtin_shufflevector(pair[c + j], pair[c + 2 + j], 2, 3, 10, 11, 6, 7, 14, 15);
      }
    for (int j = 0; j < 4; ++j) {  // element j of all eight rows
      const Lanes x = __builtin_shufflevector(quad[j], quad[4 + j], 0, 1, 2, 3, 8, 9, 10, 11);
      sums = (Lanes)_mm512_fmadd_pd((__m512d)x, (__m512d)x, (__m512d)sums);
    }
    for (int j = 0; j < 4; ++j) {  // then element j + 4
      const Lanes x = __builtin_shufflevector(quad[j], quad[4 + j], 4, 5, 6, 7, 12, 13, 14, 15);
      sums = (Lanes)_mm512_fmadd_pd((__m512d)x, (__m512d)x, (__m512d)sums);
    }
  }
  for (int c = 0; c < 8; ++c) sum[c] = sums[c];
}
#endif

// Chunks [group, group + chunks) (chunks <= kInterleave) into partial[]. A group of fewer chunks fills its
// other lanes with a copy of its first chunk's common part, summed and dropped: each chunk's sum is a
// chain of dependent additions, and chunks summed one after another would wait on each chain in turn.
void interleaved_chunks(const float* grads, std::int64_t n, std::int64_t group, std::int64_t chunks, double* partial) {
  const std::int64_t shortest = n / kCpuNormChunks;  // every chunk holds shortest or shortest + 1 elements
  std::int64_t begin[kInterleave], end[kInterleave];
  double sum[kInterleave];
  const std::int64_t start = n * group / kCpuNormChunks;
  for (std::int64_t c = 0; c < kInterleave; ++c) {
    begin[c] = c < chunks ? n * (group + c) / kCpuNormChunks : start;
    end[c] = c < chunks ? n * (group + c + 1) / kCpuNormChunks : start + shortest;
    sum[c] = 0.0;
  }
  std::int64_t done = 0;
#if defined(__AVX512F__) && !defined(__CUDACC__)
  done = shortest / 8 * 8;
  interleaved_rows(grads, begin, done, sum);
#endif
  for (std::int64_t k = done; k < shortest; ++k)
    for (std::int64_t c = 0; c < kInterleave; ++c) {
      const double x = static_cast<double>(grads[begin[c] + k]);
      sum[c] += x * x;
    }
  for (std::int64_t c = 0; c < kInterleave; ++c) {
    for (std::int64_t i = begin[c] + shortest; i < end[c]; ++i) {
      const double x = static_cast<double>(grads[i]);
      sum[c] += x * x;
    }
    if (c < chunks) partial[group + c] = sum[c];
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
  for (std::int64_t c = first; c < last; c += detail::kInterleave)
    detail::interleaved_chunks(grads, n, c, std::min(detail::kInterleave, last - c), partial);
}

void cpu_adam_scalars(const AdamConfig& config, const double* partial, OptimizerScalars* scalars) {
  scalars->grad_norm_sq = detail::fold_chunks(partial);
  detail::update_scalars(scalars, config.beta1, config.beta2, config.max_grad_norm);
}

void cpu_adam_update(const AdamConfig& config, const OptimizerScalars& scalars, float* params, const float* grads,
                     float* m, float* v, std::int64_t begin, std::int64_t end) {
  // AdamUpdate's operations, but for the division by the bias correction, one of the three operations (two
  // divisions and a square root) that share the divider. Dividing by the float d = bias_correction2_sqrt
  // in (0, 1] is a multiplication by the double nearest 1 / d, rounded to float: with a = sqrtf(v) either 0
  // or at least 2^-75, a / d is 0 or a normal float, which lies more than 2^-49 |a / d| from every midpoint
  // between floats (a midpoint would need a 25-bit odd factor in a's 24-bit significand), while the double
  // product is within 2^-52 |a / d| of the quotient: both round to the same float
  // (tests/test_fused_mlp_adam.cpp).
  const float beta1 = static_cast<float>(config.beta1), beta2 = static_cast<float>(config.beta2);
  const float eps = static_cast<float>(config.adam_eps), keep = scalars.frozen ? 1.0f : 0.0f;
  const float grad_scale = static_cast<float>(scalars.grad_scale), step_size = static_cast<float>(scalars.step_size);
  const double inverse_correction = 1.0 / static_cast<double>(static_cast<float>(scalars.bias_correction2_sqrt));
  for (std::int64_t i = begin; i < end; ++i) {
    const float grad = grads[i] * grad_scale;
    const float m_i = beta1 * m[i] + (1.0f - beta1) * grad;
    const float v_i = beta2 * v[i] + (1.0f - beta2) * grad * grad;
    const float denominator = static_cast<float>(static_cast<double>(sqrtf(v_i)) * inverse_correction) + eps;
    const float step = step_size * m_i / denominator;
    m[i] = keep * m[i] + (1.0f - keep) * m_i;
    v[i] = keep * v[i] + (1.0f - keep) * v_i;
    params[i] -= (1.0f - keep) * step;
  }
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
        detail::interleaved_chunks(grads.data, count, group, detail::kInterleave, partial);
    } else {
      for (std::int64_t group = 0; group < kCpuNormChunks; group += detail::kInterleave)
        detail::interleaved_chunks(grads.data, count, group, detail::kInterleave, partial);
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
