#pragma once
// The CPU backend's fused path for small MLPs (every layer at most kFusedMlpMaxWidth wide, as PPO's
// networks are): a minibatch's forward or backward pass through the whole layer stack, a tile of rows
// at a time, with the tile's activations in L1 and the (repacked) weights in cache, instead of a BLAS
// call and an element-wise pass per layer. Same results as rl::mlp_forward / mlp_backward's GEMM path
// up to rounding (tests/test_fused_mlp.cpp derives the bound). Host only: plain C++, never seen by nvcc.
#include <cstdint>

namespace surge::rl {

class Mlp;

inline constexpr int kFusedMlpMaxWidth = 256;

// Whether every layer of `mlp` fits the fused path.
bool fused_mlp_fits(const Mlp& mlp);

// A parameter version never handed out before (never 0; any thread). The passes keep each network's
// weights repacked, per thread; an owner of a parameter buffer that draws a new version after every write
// to it (an optimiser step, a restore) and passes it as `params_version` has them repacked only then. With
// version 0 every pass compares the parameters with those it packed (a byte compare over them).
std::uint64_t fused_mlp_new_version();

// As mlp_forward on the CPU: output [batch][out], hidden activations [activation_size(batch)].
template <class Scalar>
void fused_mlp_forward(const Mlp& mlp, const Scalar* params, const Scalar* input, std::int64_t batch,
                       Scalar* activations, Scalar* output, std::uint64_t params_version = 0);

// As mlp_backward on the CPU: writes every weight and bias gradient of `mlp` into grads. The sums over
// rows run in a fixed order (rows in chunks of kFusedMlpChunkRows, chunks added in order), so the result
// does not depend on the number of threads.
template <class Scalar>
void fused_mlp_backward(const Mlp& mlp, const Scalar* params, const Scalar* input, std::int64_t batch,
                        const Scalar* activations, const Scalar* d_output, Scalar* grads,
                        std::uint64_t params_version = 0);

inline constexpr std::int64_t kFusedMlpChunkRows = 512;

// The gradient of a loss at the head's outputs for rows [row0, row0 + rows): outputs [rows][ld] (the
// head's outputs, as fused_mlp_forward writes them), d_outputs [rows][ld] to fill (columns past the head's
// width are not read).
template <class Scalar>
struct HeadGradient {
  void (*function)(void* context, std::int64_t row0, int rows, const Scalar* outputs, std::int64_t ld,
                   Scalar* d_outputs);
  void* context;
};

// Forward, head gradient and backward in one pass over the rows, on the calling thread: each tile of rows
// goes forward through the layer stack, gets its head gradient and goes back while its activations are
// still in L1, so no activation, output or output gradient is written to memory. Writes every weight and
// bias gradient of `mlp` into grads: the same bits as fused_mlp_forward, then `head` over every row, then
// fused_mlp_backward (the same tiles, the same sums in the same order).
template <class Scalar>
void fused_mlp_train_pass(const Mlp& mlp, const Scalar* params, const Scalar* input, std::int64_t batch,
                          HeadGradient<Scalar> head, Scalar* grads, std::uint64_t params_version = 0);

}  // namespace surge::rl
