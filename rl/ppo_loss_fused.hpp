#pragma once
// The CPU's whole PPO update of one minibatch in one pass per network: each tile of rows goes forward
// through the network, gets the loss's gradient at the head and goes back while it is in L1
// (fused_mlp_train_pass); the actor's pass (the policy's loss, which needs only the actor's outputs and
// the advantages) and the critic's (the value loss) are independent, so they run on two threads when two
// are given, meet once for the gradient norm, then each thread takes Adam's step over its own network's
// parameters. The same bits on one thread or two, and the same bits as PpoGradient::compute followed by
// adam_step on the fused MLP path: every sum keeps its order (tests/test_fused_mlp_update.cpp). Host only.
#include <cstdint>

#include "rl/actor_critic.hpp"
#include "rl/adam.hpp"
#include "rl/learner_configs.hpp"
#include "rl/ppo_loss.hpp"
#include "sim/device.hpp"

namespace surge::rl {

// Whether fused_ppo_update takes this network on this device: the CPU, a categorical policy, both
// networks on the fp32 fused MLP path, and no CNN encoder (a pixel policy's heads read the encoder's
// features, whose backward this pass does not take).
bool fused_ppo_update_applies(const ActorCritic& net, Device device);

// The threads fused_ppo_update takes for a run whose config says `cpu_threads` (0: automatic): two when
// cpu_threads >= 2, or when automatic on a machine with two cores or more; one inside an OpenMP region
// (an agent of rl/agent_set keeps its one thread). The second is a helper thread, not OpenMP's
// (rl/cpu_task_pair.hpp).
int fused_ppo_update_threads(std::int64_t cpu_threads);

// The learner's buffers, all [count] and laid out by net.table(), and its optimiser scalars.
struct LearnerBuffers {
  float* params;
  float* grads;
  float* adam_m;
  float* adam_v;
  OptimizerScalars* optimizer;
};

// One minibatch: the PPO gradient of both networks into grads, the loss term sums into
// terms[kLossTermCount], then the clipped Adam step. params_version as PpoGradient's (0: unknown).
void fused_ppo_update(const ActorCritic& net, const PpoLossConfig& loss, const AdamConfig& adam,
                      const MinibatchView<float>& minibatch, const LearnerBuffers& learner, double* terms,
                      std::uint64_t params_version, int threads);

}  // namespace surge::rl
