#include "rl/actor_critic.hpp"

#include <algorithm>
#include <type_traits>

#include "rl/device_util.hpp"
#include "rl/fused_mlp.hpp"
#include "rl/gaussian.hpp"
#include "rl/gemm.hpp"
#include "sim/error.hpp"
#include "sim/philox.hpp"

namespace surge::rl {

ActorCritic::ActorCritic(int obs_dim, int num_actions, const NetworkConfig& config)
    : ActorCritic(obs_dim, ActionKind::Discrete, num_actions, config) {}

ActorCritic::ActorCritic(int obs_dim, ActionKind kind, int action_size, const NetworkConfig& config)
    : ActorCritic(obs_dim, kind, action_size, config, nullptr, nullptr) {}

ActorCritic::ActorCritic(int obs_dim, ActionKind kind, int action_size, const NetworkConfig& config, FrameShape frame,
                         const EncoderConfig& encoder)
    : ActorCritic(obs_dim, kind, action_size, config, &frame, &encoder) {}

namespace {
std::unique_ptr<CnnEncoder> make_encoder(ParamTable& table, const FrameShape* frame, const EncoderConfig* encoder) {
  if (!frame || !encoder) return nullptr;
  return std::make_unique<CnnEncoder>(table, "encoder", *frame, *encoder);
}
}  // namespace

ActorCritic::ActorCritic(int obs_dim, ActionKind kind, int action_size, const NetworkConfig& config,
                         const FrameShape* frame, const EncoderConfig* encoder)
    : config_(config),
      obs_dim_(obs_dim),
      kind_(kind),
      head_width_(action_size),
      encoder_(make_encoder(table_, frame, encoder)),
      // On pixels the heads are linear layers on the encoder's features, as in CleanRL's Atari agent.
      actor_(table_, "actor", encoder_ ? encoder_->feature_dim() : obs_dim,
             encoder_ ? std::vector<int>{} : config.hidden, action_size, parse_activation(config.activation),
             kActorHeadGain),
      critic_(table_, "critic", encoder_ ? encoder_->feature_dim() : obs_dim,
              encoder_ ? std::vector<int>{} : config.hidden, 1, parse_activation(config.activation), kCriticHeadGain) {
  actor_.set_fused_on_cpu(config.cpu_fused_mlp);
  critic_.set_fused_on_cpu(config.cpu_fused_mlp);
  actor_.set_fused_on_cuda(config.cuda_fused_mlp);
  critic_.set_fused_on_cuda(config.cuda_fused_mlp);
  actor_.set_precision(parse_precision(config.precision));
  critic_.set_precision(parse_precision(config.precision));
  if (kind == ActionKind::Discrete) {
    SURGE_CHECK(action_size >= 2, "a categorical policy needs at least two actions");
  } else {
    SURGE_CHECK(action_size >= 1 && action_size <= kMaxGaussianDims,
                "a Gaussian policy needs 1.." + std::to_string(kMaxGaussianDims) + " action dimensions");
    // After both networks, so that a categorical network's table is laid out as before.
    log_std_offset_ = table_[table_.add("actor.log_std", action_size, 1)].offset;
  }
}

ActorCritic ActorCritic::for_scenario(const ScenarioSpec& spec, const NetworkConfig& config) {
  if (spec.action_kind == ActionKind::Continuous)
    return ActorCritic(spec.obs_dim, ActionKind::Continuous, spec.action_dim, config);
  return ActorCritic(spec.obs_dim, spec.num_actions, config);
}

ActorCritic ActorCritic::for_scenario(const ScenarioSpec& spec, const TrainConfig& config) {
  const bool continuous = spec.action_kind == ActionKind::Continuous;
  return for_config(spec.obs_dim, spec.action_kind, continuous ? spec.action_dim : spec.num_actions, config);
}

ActorCritic ActorCritic::for_config(int obs_dim, ActionKind kind, int action_size, const TrainConfig& config) {
  if (!config.pixel_observations()) return ActorCritic(obs_dim, kind, action_size, config);
  return ActorCritic(obs_dim, kind, action_size, config, pixel_frame_shape(config), encoder_config(config.encoder));
}

FrameShape pixel_frame_shape(const TrainConfig& config) {
  const int side = static_cast<int>(config.frame_size);
  return {side, side, static_cast<int>(config.frame_stack) * (config.grayscale ? 1 : 3)};
}

std::vector<double> ActorCritic::initial_parameters(std::uint64_t seed) const {
  // Zero everywhere first: biases, padding and the Gaussian's log_std (a standard deviation of 1).
  std::vector<double> params(static_cast<std::size_t>(table_.total()), 0.0);
  Rng rng(seed, rng_subsequence(RngPurpose::Init, 0), 0);
  if (encoder_) encoder_->initialize(params, rng);
  actor_.initialize(params, rng);
  critic_.initialize(params, rng);
  return params;
}

namespace {

// Whether the networks' GEMMs take bf16 operands on CUDA (the CPU's bf16 is the fused path's own).
template <class Scalar>
bool uses_cuda_bf16(Device device, const ActorCritic& net) {
  return std::is_same_v<Scalar, float> && device.is_cuda() &&
         parse_precision(net.config().precision) == Precision::Bf16;
}

}  // namespace

template <class Scalar>
BufferTable PpoGradient<Scalar>::table(Device device, const ActorCritic& net, std::int64_t max_batch, Buffers& b) {
  const std::int64_t rows = max_batch, a = net.head_width();
  const char* head = net.continuous() ? "[B][action_dim]" : "[B][num_actions]";
  BufferTable t;
  b.actor_activations = t.add<Scalar>("workspace.actor_activations", {net.actor().activation_size(rows)},
                                      "[B][hidden...]", "the actor's hidden activations, kept for its backward pass");
  b.critic_activations = t.add<Scalar>("workspace.critic_activations", {net.critic().activation_size(rows)},
                                       "[B][hidden...]", "the critic's hidden activations");
  b.logits = t.add<Scalar>("workspace.logits", {rows, a}, head, "the actor's outputs: logits, or the Gaussian's means");
  b.values = t.add<Scalar>("workspace.values", {rows}, "[B]", "the critic's outputs");
  b.d_logits =
      t.add<Scalar>("workspace.d_logits", {rows, a}, head, "the loss's gradient with respect to the actor's outputs");
  b.d_values = t.add<Scalar>("workspace.d_values", {rows}, "[B]", "the loss's gradient with respect to the values");
  b.scratch =
      t.add<Scalar>("workspace.scratch", {std::max(net.actor().scratch_size(rows), net.critic().scratch_size(rows))},
                    "[2][B][widest hidden]", "gradients flowing back through the hidden layers");
  b.ones = t.add<Scalar>("workspace.ones", {rows}, "[B]", "all 1: bias gradients as GEMMs");
  b.reduce_scratch = t.add<double>("workspace.reduce_scratch", {reduce_scratch_doubles(device, kLossTermCount)},
                                   "[scratch]", "partial sums of the loss terms");
  b.advantage_stats =
      t.add<double>("workspace.advantage_stats", {2}, "[2]", "sum and sum of squares of the minibatch's advantages");
  b.d_log_std_rows = t.add<Scalar>("workspace.d_log_std_rows", {rows, net.action_dim()}, "[B][action_dim]",
                                   "Gaussian: each sample's gradient with respect to log_std");
  if (const CnnEncoder* encoder = net.encoder()) {
    const std::int64_t features = encoder->feature_dim();
    b.encoder_activations = t.add<Scalar>("workspace.encoder_activations", {encoder->activation_size(rows)},
                                          "[B][conv outputs...]", "the encoder's conv activations, kept for backward");
    if (device.is_cuda()) {
      // rl/cnn_encoder_device.hpp: cuDNN's layers and their workspace, planned here; a batch cuDNN cannot
      // take stops here, before anything is allocated (surge train plans with this table).
      check_cudnn_rows(*encoder, rows);
      // Refused here, where surge train plans its memory, and not only at the first iteration's layers:
      // by then the run's folder would hold its first files.
      require_cudnn(device);
      b.encoder_scratch = t.add<Scalar>("workspace.encoder_scratch", {device_scratch_size(*encoder, rows)},
                                        "[B][frame] + [2][B][widest]",
                                        "the frames scaled to float, and the encoder's backward gradients");
      b.conv_workspace =
          t.add<std::uint8_t>("workspace.cudnn", {static_cast<std::int64_t>(conv_workspace_bytes(*encoder, rows))},
                              "[bytes]", "cuDNN's convolution workspace: its algorithms are chosen to fit");
    } else {
      b.encoder_scratch = t.add<Scalar>("workspace.encoder_scratch", {encoder->scratch_size(rows)},
                                        "[columns + 2][B][widest]", "the encoder's columns and backward gradients");
    }
    b.features = t.add<Scalar>("workspace.features", {rows, features}, "[B][features]", "the encoder's outputs");
    b.d_features = t.add<Scalar>("workspace.d_features", {rows, features}, "[B][features]",
                                 "the loss's gradient with respect to them, from both heads");
  }
  if (uses_cuda_bf16<Scalar>(device, net)) {
    const std::int64_t widest = std::max(widest_layer(net.actor()), widest_layer(net.critic()));
    b.bf16_weights = t.add<std::int32_t>("workspace.bf16_weights", {(net.table().total() + 1) / 2}, "[P] bf16",
                                         "the weights rounded to bf16, two to an element (precision = bf16)");
    b.bf16_x = t.add<std::int32_t>("workspace.bf16_x", {(rows * widest + 1) / 2}, "[B][widest] bf16",
                                   "a layer's input rounded to bf16, two to an element");
    b.bf16_dy = t.add<std::int32_t>("workspace.bf16_dy", {(rows * widest + 1) / 2}, "[B][widest] bf16",
                                    "a layer's output gradient rounded to bf16, two to an element");
  }
  return t;
}

template <class Scalar>
BufferTable PpoGradient<Scalar>::table(Device device, const ActorCritic& net, std::int64_t max_batch) {
  Buffers unused;
  return table(device, net, max_batch, unused);
}

template <class Scalar>
PpoGradient<Scalar>::PpoGradient(Device device, const ActorCritic& net, std::int64_t max_batch)
    : net_(&net), max_batch_(max_batch) {
  SURGE_CHECK(max_batch >= 1, "empty workspace");
  if (net.pixels() && device.is_cuda() && !std::is_same_v<Scalar, float>)
    throw Error("the CNN encoder runs in float on CUDA (cuDNN's fp32 convolutions)");
  prepare_gemm(device);  // before any capture: cuBLASLt cannot be set up inside one
  Stream stream(device);
  arena_ = BufferArena(device, table(device, net, max_batch, b_), stream);
  if (uses_cuda_bf16<Scalar>(device, net))
    bf16_ = {reinterpret_cast<std::uint16_t*>(arena_.data(b_.bf16_weights)),
             reinterpret_cast<std::uint16_t*>(arena_.data(b_.bf16_x)),
             reinterpret_cast<std::uint16_t*>(arena_.data(b_.bf16_dy))};
  fill<Scalar>(stream, arena_.data(b_.ones), max_batch, Scalar(1));
  stream.synchronize();
}

template <class Scalar>
void PpoGradient<Scalar>::forward_actor(const Stream& stream, const Scalar* params, const Scalar* obs,
                                        std::int64_t batch, Scalar* logits) {
  SURGE_CHECK(batch <= max_batch_, "batch larger than the workspace");
  mlp_forward<Scalar>(stream, net_->actor(), params, obs, batch, arena_.data(b_.actor_activations), logits, bf16(),
                      params_version_);
}

template <class Scalar>
void PpoGradient<Scalar>::forward_critic(const Stream& stream, const Scalar* params, const Scalar* obs,
                                         std::int64_t batch, Scalar* values) {
  SURGE_CHECK(batch <= max_batch_, "batch larger than the workspace");
  mlp_forward<Scalar>(stream, net_->critic(), params, obs, batch, arena_.data(b_.critic_activations), values, bf16(),
                      params_version_);
}

template <class Scalar>
const CnnCpuConvs* PpoGradient<Scalar>::encoder_convs([[maybe_unused]] std::int64_t rows) {
#if defined(SURGE_WITH_ONEDNN)
  if constexpr (std::is_same_v<Scalar, float>) {
    for (const auto& convs : encoder_convs_)
      if (convs->rows() == rows) return convs.get();
    encoder_convs_.push_back(std::make_shared<const CnnCpuConvs>(*net_->encoder(), rows));
    return encoder_convs_.back().get();
  }
#endif
  return nullptr;
}

template <class Scalar>
const CnnDeviceConvs& PpoGradient<Scalar>::device_convs(Device device, std::int64_t rows) {
  for (const auto& convs : device_convs_)
    if (convs->rows() == rows) return *convs;
  const bool tf32 = parse_precision(net_->config().precision) == Precision::Tf32;
  device_convs_.push_back(std::make_shared<const CnnDeviceConvs>(device, *net_->encoder(), rows, tf32,
                                                                 conv_workspace_bytes(*net_->encoder(), max_batch_)));
  return *device_convs_.back();
}

template <class Scalar>
const Scalar* PpoGradient<Scalar>::encode(const Stream& stream, const Scalar* params, const std::uint8_t* frames,
                                          std::int64_t batch) {
  SURGE_CHECK(net_->pixels() && frames, "encode() needs a pixel policy and its frames");
  SURGE_CHECK(batch <= max_batch_, "batch larger than the workspace");
  Scalar* features = arena_.data(b_.features);
  if constexpr (std::is_same_v<Scalar, float>)
    if (stream.device().is_cuda()) {
      cnn_forward_device(stream, *net_->encoder(), device_convs(stream.device(), batch), params, frames, batch,
                         arena_.data(b_.encoder_activations), arena_.data(b_.encoder_scratch),
                         arena_.data(b_.conv_workspace), features);
      return features;
    }
  cnn_forward<Scalar>(stream, *net_->encoder(), params, frames, batch, arena_.data(b_.encoder_activations),
                      arena_.data(b_.encoder_scratch), features, encoder_convs(batch));
  return features;
}

template <class Scalar>
void PpoGradient<Scalar>::parameters_changed() {
  params_version_ = fused_mlp_new_version();
}

template <class Scalar>
void PpoGradient<Scalar>::forward(const Stream& stream, const Scalar* params, const Scalar* obs, std::int64_t batch,
                                  Scalar* logits, Scalar* values) {
  forward_actor(stream, params, obs, batch, logits);
  forward_critic(stream, params, obs, batch, values);
}

template <class Scalar>
void PpoGradient<Scalar>::compute(const Stream& stream, const PpoLossConfig& config,
                                  const MinibatchView<Scalar>& minibatch, const Scalar* params, Scalar* grads,
                                  double* terms) {
  compute_forward(stream, minibatch, params);
  const OwnAgentHyper hyper(stream, loss_hyper(config));
  compute_backward(stream, hyper.get(), 0, minibatch, params, grads, terms);
}

template <class Scalar>
void PpoGradient<Scalar>::compute_forward(const Stream& stream, const MinibatchView<Scalar>& minibatch,
                                          const Scalar* params) {
  const Scalar* obs = net_->pixels() ? encode(stream, params, minibatch.frames, minibatch.size) : minibatch.obs;
  forward(stream, params, obs, minibatch.size, arena_.data(b_.logits), arena_.data(b_.values));
}

template <class Scalar>
void PpoGradient<Scalar>::compute_backward(const Stream& stream, const AgentHyper* hyper, int agent,
                                           const MinibatchView<Scalar>& minibatch, const Scalar* params, Scalar* grads,
                                           double* terms, const Collective* ranks) {
  const std::int64_t batch = minibatch.size;
  if (net_->continuous()) {
    const int dims = net_->action_dim();
    Scalar* d_log_std = grads + net_->log_std_offset();
    gaussian_ppo_loss<Scalar>(stream, hyper, agent, minibatch, dims, arena_.data(b_.logits),
                              params + net_->log_std_offset(), arena_.data(b_.values), arena_.data(b_.advantage_stats),
                              arena_.data(b_.reduce_scratch), arena_.data(b_.d_logits), arena_.data(b_.d_log_std_rows),
                              arena_.data(b_.d_values), terms, ranks);
    // d log_std [1][dims] = ones [1][B] x rows [B][dims]: a fixed-order sum, as the bias gradients are.
    gemm<Scalar>(stream, Transpose::No, Transpose::No, 1, dims, batch, Scalar(1), arena_.data(b_.ones), batch,
                 arena_.data(b_.d_log_std_rows), dims, Scalar(0), d_log_std, dims);
  } else {
    ppo_loss<Scalar>(stream, hyper, agent, minibatch, net_->num_actions(), arena_.data(b_.logits),
                     arena_.data(b_.values), arena_.data(b_.advantage_stats), arena_.data(b_.reduce_scratch),
                     arena_.data(b_.d_logits), arena_.data(b_.d_values), terms, ranks);
  }
  const Scalar* obs = net_->pixels() ? arena_.data(b_.features) : minibatch.obs;
  mlp_backward<Scalar>(stream, net_->actor(), params, obs, batch, arena_.data(b_.actor_activations),
                       arena_.data(b_.d_logits), arena_.data(b_.ones), grads, arena_.data(b_.scratch), bf16(),
                       params_version_);
  mlp_backward<Scalar>(stream, net_->critic(), params, obs, batch, arena_.data(b_.critic_activations),
                       arena_.data(b_.d_values), arena_.data(b_.ones), grads, arena_.data(b_.scratch), bf16(),
                       params_version_);
  if (net_->pixels()) backward_encoder(stream, minibatch, params, grads);
}

template <class Scalar>
void PpoGradient<Scalar>::backward_encoder(const Stream& stream, const MinibatchView<Scalar>& minibatch,
                                           const Scalar* params, Scalar* grads) {
  // The heads are linear: d_features = d_logits W_actor + d_values w_critic, both heads' share summed.
  const std::int64_t batch = minibatch.size, features = net_->encoder()->feature_dim();
  const int outputs = net_->head_width();
  Scalar* d_features = arena_.data(b_.d_features);
  gemm<Scalar>(stream, Transpose::No, Transpose::No, batch, features, outputs, Scalar(1), arena_.data(b_.d_logits),
               outputs, params + net_->actor().weight_offset(0), features, Scalar(0), d_features, features);
  gemm<Scalar>(stream, Transpose::No, Transpose::No, batch, features, 1, Scalar(1), arena_.data(b_.d_values), 1,
               params + net_->critic().weight_offset(0), features, Scalar(1), d_features, features);
  if constexpr (std::is_same_v<Scalar, float>)
    if (stream.device().is_cuda()) {
      cnn_backward_device(stream, *net_->encoder(), device_convs(stream.device(), batch), params, minibatch.frames,
                          batch, arena_.data(b_.encoder_activations), arena_.data(b_.features), d_features, grads,
                          arena_.data(b_.encoder_scratch), arena_.data(b_.conv_workspace));
      return;
    }
  cnn_backward<Scalar>(stream, *net_->encoder(), params, minibatch.frames, batch, arena_.data(b_.encoder_activations),
                       arena_.data(b_.features), d_features, grads, arena_.data(b_.encoder_scratch),
                       encoder_convs(batch));
}

template class PpoGradient<float>;
template class PpoGradient<double>;

}  // namespace surge::rl
