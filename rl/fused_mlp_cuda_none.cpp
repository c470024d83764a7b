// rl/fused_mlp_cuda.hpp in a build without CUDA: no network fits, and running one is a bug.
#include "rl/fused_mlp_cuda.hpp"

#include "sim/error.hpp"

namespace surge::rl {

bool fused_mlp_cuda_forward_fits(const Mlp&, Device) { return false; }

bool fused_mlp_cuda_backward_fits(const Mlp&, Device, std::int64_t, std::int64_t) { return false; }

void fused_mlp_cuda_forward(const Stream&, const Mlp&, const float*, const float*, std::int64_t, float*, float*) {
  SURGE_CHECK(false, "the fused CUDA MLP in a build without CUDA");
}

void fused_mlp_cuda_backward(const Stream&, const Mlp&, const float*, const float*, std::int64_t, const float*,
                             const float*, float*, float*, std::int64_t) {
  SURGE_CHECK(false, "the fused CUDA MLP in a build without CUDA");
}

}  // namespace surge::rl
