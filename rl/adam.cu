// Gradient-norm clipping and Adam, single-source.
#include "rl/adam.hpp"

#include <cmath>

#include "sim/error.hpp"
#include "sim/parallel.cuh"

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

}  // namespace detail

void adam_step(const Stream& stream, const AdamConfig& config, Span<float> params, Span<const float> grads,
               Span<float> m, Span<float> v, OptimizerScalars* scalars, double* scratch) {
  const std::int64_t count = params.size;
  SURGE_CHECK(grads.size == count && m.size == count && v.size == count, "Adam buffers differ in size");
  parallel_reduce<1>(stream, count, detail::SquaredGradient{grads.data}, scratch, &scalars->grad_norm_sq);

  const double beta1 = config.beta1, beta2 = config.beta2, max_norm = config.max_grad_norm;
  OptimizerScalars* s = scalars;
  parallel_for(stream, 1, [=] SURGE_HD(std::int64_t) {
    if (s->frozen) return;
    s->step += 1.0;
    const double norm = sqrt(s->grad_norm_sq);
    const double coef = max_norm / (norm + 1e-6);
    s->grad_scale = (max_norm > 0.0 && coef < 1.0) ? coef : 1.0;
    s->step_size = s->learning_rate / (1.0 - pow(beta1, s->step));
    s->bias_correction2_sqrt = sqrt(1.0 - pow(beta2, s->step));
  });

  parallel_for(stream, count,
               detail::AdamUpdate{params.data, m.data, v.data, grads.data, scalars, static_cast<float>(beta1),
                                  static_cast<float>(beta2), static_cast<float>(config.adam_eps)});
}

}  // namespace surge::rl
