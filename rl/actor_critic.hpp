#pragma once
// The actor (observation -> action logits, or the means of a diagonal Gaussian) and the critic
// (observation -> value): two separate MLPs whose parameters share one ParamTable (with the Gaussian's
// log standard deviations), and the pass that turns a minibatch into the PPO gradient of both.
// With pixel observations, CleanRL's Atari agent: a CNN encoder trunk (rl/cnn_encoder.hpp) shared by a
// linear actor head and a linear critic head on its features; the gradient flows back through both heads
// into the trunk.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rl/cnn_encoder.hpp"
#include "rl/cnn_encoder_device.hpp"

#include "rl/learner_configs.hpp"
#include "rl/mlp.hpp"
#include "rl/param_table.hpp"
#include "rl/ppo_loss.hpp"
#include "rl/train_config.hpp"
#include "sim/buffer_table.hpp"
#include "sim/engine.hpp"
#include "sim/memory.hpp"

namespace surge::rl {

class ActorCritic {
 public:
  // Gains as CleanRL's layer_init: sqrt(2) for hidden layers, 0.01 for the actor's head, 1 for the critic's.
  static constexpr double kActorHeadGain = 0.01;
  static constexpr double kCriticHeadGain = 1.0;

  // A categorical policy over `num_actions` actions.
  ActorCritic(int obs_dim, int num_actions, const NetworkConfig& config);
  // kind Discrete: as above, action_size actions. Continuous: a diagonal Gaussian over action_size
  // dimensions, whose actor outputs the means and whose log standard deviations are the slice
  // "actor.log_std" [action_size][1], initialised to 0.
  ActorCritic(int obs_dim, ActionKind kind, int action_size, const NetworkConfig& config);
  // A pixel policy: the encoder's slices "encoder.*" first, then linear heads "actor.0" and "critic.0" on
  // its features (config.hidden does not apply); obs_dim stays the scenario's vector size.
  ActorCritic(int obs_dim, ActionKind kind, int action_size, const NetworkConfig& config, FrameShape frame,
              const EncoderConfig& encoder);
  // The policy the scenario's action space needs.
  static ActorCritic for_scenario(const ScenarioSpec& spec, const NetworkConfig& config);
  // The same, on the observations `config` asks for: a pixel policy where observation = "pixels".
  static ActorCritic for_scenario(const ScenarioSpec& spec, const TrainConfig& config);
  static ActorCritic for_config(int obs_dim, ActionKind kind, int action_size, const TrainConfig& config);
  ActorCritic(const ActorCritic&) = delete;  // the MLPs hold offsets into table_
  ActorCritic& operator=(const ActorCritic&) = delete;

  const ParamTable& table() const { return table_; }
  const Mlp& actor() const { return actor_; }
  const Mlp& critic() const { return critic_; }
  const NetworkConfig& config() const { return config_; }
  int obs_dim() const { return obs_dim_; }
  bool continuous() const { return kind_ == ActionKind::Continuous; }
  ActionKind action_kind() const { return kind_; }
  int num_actions() const { return continuous() ? 0 : head_width_; }  // discrete actions; 0 when continuous
  int action_dim() const { return continuous() ? head_width_ : 0; }   // Gaussian dimensions; 0 when discrete
  int head_width() const { return head_width_; }                      // the actor's outputs per row
  const CnnEncoder* encoder() const { return encoder_.get(); }        // pixel policies only; else null
  bool pixels() const { return encoder_ != nullptr; }
  std::int64_t log_std_offset() const { return log_std_offset_; }  // Gaussian only: the log_std slice

  // Initial parameters [table().total()]: orthogonal weights drawn from the Philox stream
  // (seed, rng_subsequence(Init, 0)), actor's layers first, zero biases and padding.
  std::vector<double> initial_parameters(std::uint64_t seed) const;

 private:
  // Both kinds: a pixel policy where `frame` and `encoder` are given.
  ActorCritic(int obs_dim, ActionKind kind, int action_size, const NetworkConfig& config, const FrameShape* frame,
              const EncoderConfig* encoder);

  NetworkConfig config_;
  int obs_dim_;
  ActionKind kind_;
  int head_width_;
  ParamTable table_;
  std::unique_ptr<CnnEncoder> encoder_;  // before the heads: its slices come first in the table
  Mlp actor_, critic_;
  std::int64_t log_std_offset_ = -1;
};

// The frames a pixel config's policy reads: frame_size square, frame_stack x (1 or 3) channels.
FrameShape pixel_frame_shape(const TrainConfig& config);

// Device workspace for running both networks on up to `max_batch` rows, and the PPO gradient.
template <class Scalar>
class PpoGradient {
 public:
  PpoGradient(Device device, const ActorCritic& net, std::int64_t max_batch);

  // logits [batch][head_width] (the Gaussian's means when continuous) and values [batch] of obs [batch][obs_dim]. The
  // hidden activations stay in the workspace, where compute() needs them.
  void forward(const Stream& stream, const Scalar* params, const Scalar* obs, std::int64_t batch, Scalar* logits,
               Scalar* values);
  // Pixel policies: the encoder's features [batch][feature_dim] of stacks [batch][H][W][stack * C], kept
  // in the workspace (the heads then read them as their observations).
  const Scalar* encode(const Stream& stream, const Scalar* params, const std::uint8_t* frames, std::int64_t batch);
  // Only the actor, or only the critic (values [batch]).
  void forward_actor(const Stream& stream, const Scalar* params, const Scalar* obs, std::int64_t batch, Scalar* logits);
  void forward_critic(const Stream& stream, const Scalar* params, const Scalar* obs, std::int64_t batch,
                      Scalar* values);

  // Forward, PPO loss and backward through both networks (and the encoder, reading minibatch.frames, for a
  // pixel policy) for one minibatch: writes the gradient of the
  // loss with respect to every parameter into grads [table().total()] and the loss term sums into
  // terms [kLossTermCount] (device).
  void compute(const Stream& stream, const PpoLossConfig& config, const MinibatchView<Scalar>& minibatch,
               const Scalar* params, Scalar* grads, double* terms);
  // compute() in its two halves, for timing them apart: both networks' forward pass on the minibatch,
  // then the loss and both backward passes, which read what the forward pass left in the workspace.
  void compute_forward(const Stream& stream, const MinibatchView<Scalar>& minibatch, const Scalar* params);
  // The loss reads hyper[agent]'s scalars (device memory, rl/agent_hyper.hpp); compute() puts config's
  // there. With `ranks`, the advantages are normalised over every rank's minibatch (rl/ppo_loss.hpp).
  void compute_backward(const Stream& stream, const AgentHyper* hyper, int agent,
                        const MinibatchView<Scalar>& minibatch, const Scalar* params, Scalar* grads, double* terms,
                        const Collective* ranks = nullptr);

  // Says that the parameters this workspace is given (always the same buffer) hold new values. Until the
  // first call, the CPU's fused passes compare the parameters with the weights they packed on every call;
  // after it they repack only after the next call, so the owner calls it after every write to the buffer
  // (an optimiser step, a restore) and never writes otherwise.
  void parameters_changed();
  std::uint64_t params_version() const { return params_version_; }

  std::int64_t max_batch() const { return max_batch_; }
  std::size_t device_bytes() const { return arena_.device_bytes(); }
  // The buffers a workspace of `max_batch` rows allocates, without allocating them.
  static BufferTable table(Device device, const ActorCritic& net, std::int64_t max_batch);

 private:
  struct Buffers {
    Slot<Scalar> actor_activations, critic_activations, logits, values, d_logits, d_log_std_rows, d_values, scratch,
        ones;
    Slot<Scalar> encoder_activations, encoder_scratch, features, d_features;  // pixel policies only
    Slot<std::uint8_t> conv_workspace;  // pixel policies on CUDA: cuDNN's workspace
    Slot<double> reduce_scratch, advantage_stats;
    Slot<std::int32_t> bf16_weights, bf16_x, bf16_dy;  // bf16 on CUDA only: bf16 bits, two to an element
  };
  // The bf16 operands of the GEMMs when the network runs in bf16 on CUDA; null otherwise.
  const Bf16Operands* bf16() const { return bf16_.weights ? &bf16_ : nullptr; }
  static BufferTable table(Device device, const ActorCritic& net, std::int64_t max_batch, Buffers& b);
  // Pixel policies: from the heads' output gradients back through the encoder, into its slices of grads.
  void backward_encoder(const Stream& stream, const MinibatchView<Scalar>& minibatch, const Scalar* params,
                        Scalar* grads);

  const ActorCritic* net_;
  std::int64_t max_batch_;
  Buffers b_;
  BufferArena arena_;
  Bf16Operands bf16_;
  std::uint64_t params_version_ = 0;  // 0: unknown (rl/fused_mlp.hpp)
  // oneDNN's primitives for each row count the encoder has run at (with oneDNN in the build).
  std::vector<std::shared_ptr<const CnnCpuConvs>> encoder_convs_;
  const CnnCpuConvs* encoder_convs(std::int64_t rows);
  // On CUDA: cuDNN's layers for each row count the encoder has run at, made on first use (the trainer's
  // first iteration runs eagerly, before its graph is captured).
  std::vector<std::shared_ptr<const CnnDeviceConvs>> device_convs_;
  const CnnDeviceConvs& device_convs(Device device, std::int64_t rows);
};

}  // namespace surge::rl
