#pragma once
// A multilayer perceptron whose weights live in slices of a ParamTable, with its forward and analytic
// backward passes: GEMMs through rl::gemm, activations through single-source kernels (mlp.cu).
// Row-major throughout: inputs [batch][in], weights [out][in] (y = x W^T + b), biases [out].
#include <cstdint>
#include <string>
#include <vector>

#include "rl/param_table.hpp"
#include "rl/precision.hpp"
#include "sim/philox.hpp"
#include "sim/stream.hpp"

namespace surge::rl {

enum class Activation : std::uint8_t { Tanh, Relu };
// "tanh" or "relu"; throws InputError otherwise.
Activation parse_activation(const std::string& name);
const char* activation_name(Activation activation);

class Mlp {
 public:
  // Registers "<prefix>.<l>.weight" [out][in] and "<prefix>.<l>.bias" [out][1] for every layer.
  // Hidden layers are initialised orthogonally with gain sqrt(2), the output layer with `head_gain`;
  // biases start at zero.
  Mlp(ParamTable& table, const std::string& prefix, int input_dim, const std::vector<int>& hidden, int output_dim,
      Activation activation, double head_gain);

  int num_layers() const { return static_cast<int>(dims_.size()) - 1; }
  int input_dim() const { return dims_.front(); }
  int output_dim() const { return dims_.back(); }
  int layer_in(int layer) const { return dims_[static_cast<std::size_t>(layer)]; }
  int layer_out(int layer) const { return dims_[static_cast<std::size_t>(layer) + 1]; }
  std::int64_t weight_offset(int layer) const { return weight_offsets_[static_cast<std::size_t>(layer)]; }
  std::int64_t bias_offset(int layer) const { return bias_offsets_[static_cast<std::size_t>(layer)]; }
  Activation activation() const { return activation_; }
  double head_gain() const { return head_gain_; }
  // On the CPU, whether forward and backward take the fused path (rl/fused_mlp.hpp) where the widths fit
  // it, rather than a BLAS call per layer. On by default.
  bool fused_on_cpu() const { return fused_on_cpu_; }
  void set_fused_on_cpu(bool fused) { fused_on_cpu_ = fused; }
  // On CUDA, whether a float network takes the fully fused kernels (rl/fused_mlp_cuda.hpp) where they fit it,
  // rather than cuBLASLt and an element-wise pass per layer. On by default.
  bool fused_on_cuda() const { return fused_on_cuda_; }
  void set_fused_on_cuda(bool fused) { fused_on_cuda_ = fused; }
  // The format of the products' inputs in float (rl/precision.hpp); double ignores it. fp32 by default.
  Precision precision() const { return precision_; }
  void set_precision(Precision precision) { precision_ = precision; }

  // Elements of the activation workspace for `batch` rows: [batch][hidden_l] for each hidden layer, kept
  // by forward() for backward().
  std::int64_t activation_size(std::int64_t batch) const;
  // Offset of hidden layer l's activations in that workspace.
  std::int64_t activation_offset(int layer, std::int64_t batch) const;
  // Elements of backward()'s scratch: two [batch][widest hidden] buffers used in turn.
  std::int64_t scratch_size(std::int64_t batch) const;

  // Writes this network's initial weights into `params` ([table.total()], host), drawing the orthogonal
  // matrices from `rng` layer by layer.
  void initialize(std::vector<double>& params, Rng& rng) const;

 private:
  std::vector<int> dims_;  // input, hidden..., output
  std::vector<std::int64_t> weight_offsets_, bias_offsets_;
  Activation activation_;
  double head_gain_;
  bool fused_on_cpu_ = true;
  bool fused_on_cuda_ = true;
  Precision precision_ = Precision::Fp32;
};

// precision = "bf16" on CUDA: where a network's GEMM operands go as bf16 bits (rl/bf16.hpp). forward()
// rounds the network's weights (its slices of the table, at the parameters' offsets) and each layer's
// input; backward() reads those weights and rounds the layer inputs and output gradients again.
struct Bf16Operands {
  std::uint16_t* weights = nullptr;  // [table total]
  std::uint16_t* x = nullptr;        // [batch][widest layer]
  std::uint16_t* dy = nullptr;       // [batch][widest layer]
};

// The widest input or output of any layer of `mlp`.
int widest_layer(const Mlp& mlp);

// output[batch][out] = the network applied to input[batch][in]; hidden activations go to `activations`
// ([activation_size(batch)]). All pointers on the stream's device. Scalar is float or double. A float
// network in bf16 on CUDA needs `bf16`.
template <class Scalar>
void mlp_forward(const Stream& stream, const Mlp& mlp, const Scalar* params, const Scalar* input, std::int64_t batch,
                 Scalar* activations, Scalar* output, const Bf16Operands* bf16 = nullptr,
                 std::uint64_t params_version = 0);

// Given d_output[batch][out] = dLoss/d(output), writes dLoss/d(parameter) for every slice of this network
// into `grads` (same table layout as params; other slices untouched). Needs the activations forward()
// left, a vector of `batch` ones (for bias gradients as GEMMs) and scratch of scratch_size(batch).
template <class Scalar>
void mlp_backward(const Stream& stream, const Mlp& mlp, const Scalar* params, const Scalar* input, std::int64_t batch,
                  const Scalar* activations, const Scalar* d_output, const Scalar* ones, Scalar* grads, Scalar* scratch,
                  const Bf16Operands* bf16 = nullptr, std::uint64_t params_version = 0);

// Where K agents' copies of one network's buffers lie: agent k's copy of each starts k * stride elements
// after agent 0's (a [K][...] buffer, or K equal arenas a fixed distance apart). A stride of 0 shares one
// copy between the agents; what an agent writes (activations, output, grads, scratch) needs its own.
struct MlpAgentStrides {
  std::int64_t params = 0;       // [table total] each: the network's slices at the table's offsets
  std::int64_t grads = 0;        // [table total] each
  std::int64_t input = 0;        // [batch][in] each
  std::int64_t activations = 0;  // [activation_size(batch)] each
  std::int64_t output = 0;       // [batch][out] each (forward)
  std::int64_t d_output = 0;     // [batch][out] each (backward)
  std::int64_t scratch = 0;      // [scratch_size(batch)] each (backward)
};

// mlp_forward for `agents` networks of one shape at once: per layer one gemm_strided_batched (the bias
// in it) and one launch of the activation over the agents' rows. Always the GEMM path, neither the fused
// kernels nor bf16: on the CPU each agent's results are those of mlp_forward with fused_on_cpu off, bit
// for bit; on CUDA one cuBLASLt matmul per layer serves every agent.
template <class Scalar>
void mlp_forward_batched(const Stream& stream, const Mlp& mlp, std::int64_t agents, const MlpAgentStrides& strides,
                         const Scalar* params, const Scalar* input, std::int64_t batch, Scalar* activations,
                         Scalar* output);

// mlp_backward for `agents` networks likewise (three batched GEMMs and one activation launch per layer);
// one `ones` vector of `batch` ones serves every agent.
template <class Scalar>
void mlp_backward_batched(const Stream& stream, const Mlp& mlp, std::int64_t agents, const MlpAgentStrides& strides,
                          const Scalar* params, const Scalar* input, std::int64_t batch, const Scalar* activations,
                          const Scalar* d_output, const Scalar* ones, Scalar* grads, Scalar* scratch);

// Writes an orthogonal matrix times `gain` into out[rows][cols] (row-major), as torch.nn.init.orthogonal_
// does: QR of a standard normal matrix (the tall way round), with R's diagonal made positive.
void orthogonal_matrix(std::int64_t rows, std::int64_t cols, double gain, Rng& rng, double* out);

}  // namespace surge::rl
