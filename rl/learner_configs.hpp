#pragma once
// The parts of the learner's configuration, each read by the code it configures. TrainConfig
// (rl/train_config.hpp) is made of them, so the network, loss, optimiser and normalisation read their
// part of the one config through a reference to it, never a copy made field by field.
#include <string>
#include <vector>

namespace surge::rl {

struct NetworkConfig {
  std::vector<int> hidden = {64, 64};  // widths of the hidden layers, the same for actor and critic
  std::string activation = "tanh";     // "tanh" or "relu"
  bool cpu_fused_mlp = true;           // CPU: the fused small-MLP path (rl/fused_mlp.hpp) where it fits, else BLAS
  bool cuda_fused_mlp = false;         // CUDA: the fused kernels (rl/fused_mlp_cuda.hpp) where they fit, else cuBLASLt
  // The GEMM inputs' format: "fp32", "tf32" (CUDA only) or "bf16" (rl/precision.hpp). Accumulation, master
  // weights, loss and optimiser state stay fp32 in every case.
  std::string precision = "fp32";
};

struct PpoLossConfig {
  double clip_coef = 0.2;
  double ent_coef = 0.01;
  double vf_coef = 0.5;
  bool clip_vloss = true;
  bool norm_adv = true;
};

struct AdamConfig {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double adam_eps = 1e-5;      // CleanRL's choice (PyTorch's default is 1e-8)
  double max_grad_norm = 0.5;  // <= 0: no clipping
};

// What the trainer normalises, as Gymnasium's NormalizeObservation and NormalizeReward wrappers
// (rl/normalization.hpp), each followed by clipping to +-clip.
struct NormalizationConfig {
  bool normalize_obs = false;
  double obs_clip = 10.0;
  bool normalize_reward = false;  // divides rewards by the running std of the discounted return
  double reward_clip = 10.0;
  double gamma = 0.99;  // the discount, of GAE as of the discounted return
};

}  // namespace surge::rl
