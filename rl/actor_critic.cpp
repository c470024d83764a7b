#include "rl/actor_critic.hpp"

#include <algorithm>

#include "rl/device_util.hpp"
#include "rl/gaussian.hpp"
#include "rl/gemm.hpp"
#include "sim/error.hpp"
#include "sim/philox.hpp"

namespace surge::rl {

ActorCritic::ActorCritic(int obs_dim, int num_actions, const NetworkConfig& config)
    : ActorCritic(obs_dim, ActionKind::Discrete, num_actions, config) {}

ActorCritic::ActorCritic(int obs_dim, ActionKind kind, int action_size, const NetworkConfig& config)
    : config_(config),
      obs_dim_(obs_dim),
      kind_(kind),
      head_width_(action_size),
      actor_(table_, "actor", obs_dim, config.hidden, action_size, config.activation, kActorHeadGain),
      critic_(table_, "critic", obs_dim, config.hidden, 1, config.activation, kCriticHeadGain) {
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
  if (spec.action_kind == ActionKind::Continuous) return ActorCritic(spec.obs_dim, ActionKind::Continuous, spec.action_dim, config);
  return ActorCritic(spec.obs_dim, spec.num_actions, config);
}

std::vector<double> ActorCritic::initial_parameters(std::uint64_t seed) const {
  // Zero everywhere first: biases, padding and the Gaussian's log_std (a standard deviation of 1).
  std::vector<double> params(static_cast<std::size_t>(table_.total()), 0.0);
  Rng rng(seed, rng_subsequence(RngPurpose::Init, 0), 0);
  actor_.initialize(params, rng);
  critic_.initialize(params, rng);
  return params;
}

template <class Scalar>
PpoGradient<Scalar>::PpoGradient(Device device, const ActorCritic& net, std::int64_t max_batch)
    : net_(&net),
      max_batch_(max_batch),
      actor_activations_(device, net.actor().activation_size(max_batch)),
      critic_activations_(device, net.critic().activation_size(max_batch)),
      logits_(device, max_batch * net.head_width()),
      values_(device, max_batch),
      d_logits_(device, max_batch * net.head_width()),
      d_log_std_rows_(device, max_batch * net.action_dim()),
      d_values_(device, max_batch),
      scratch_(device, std::max(net.actor().scratch_size(max_batch), net.critic().scratch_size(max_batch))),
      ones_(device, max_batch),
      reduce_scratch_(device, reduce_scratch_doubles(device, kLossTermCount)),
      advantage_stats_(device, 2) {
  SURGE_CHECK(max_batch >= 1, "empty workspace");
  Stream stream(device);
  fill<Scalar>(stream, ones_.data(), max_batch, Scalar(1));
  stream.synchronize();
}

template <class Scalar>
void PpoGradient<Scalar>::forward_actor(const Stream& stream, const Scalar* params, const Scalar* obs, std::int64_t batch,
                                        Scalar* logits) {
  SURGE_CHECK(batch <= max_batch_, "batch larger than the workspace");
  mlp_forward<Scalar>(stream, net_->actor(), params, obs, batch, actor_activations_.data(), logits);
}

template <class Scalar>
void PpoGradient<Scalar>::forward_critic(const Stream& stream, const Scalar* params, const Scalar* obs,
                                         std::int64_t batch, Scalar* values) {
  SURGE_CHECK(batch <= max_batch_, "batch larger than the workspace");
  mlp_forward<Scalar>(stream, net_->critic(), params, obs, batch, critic_activations_.data(), values);
}

template <class Scalar>
void PpoGradient<Scalar>::forward(const Stream& stream, const Scalar* params, const Scalar* obs, std::int64_t batch,
                                  Scalar* logits, Scalar* values) {
  forward_actor(stream, params, obs, batch, logits);
  forward_critic(stream, params, obs, batch, values);
}

template <class Scalar>
void PpoGradient<Scalar>::compute(const Stream& stream, const PpoLossConfig& config, const MinibatchView<Scalar>& minibatch,
                                  const Scalar* params, Scalar* grads, double* terms) {
  compute_forward(stream, minibatch, params);
  compute_backward(stream, config, minibatch, params, grads, terms);
}

template <class Scalar>
void PpoGradient<Scalar>::compute_forward(const Stream& stream, const MinibatchView<Scalar>& minibatch, const Scalar* params) {
  forward(stream, params, minibatch.obs, minibatch.size, logits_.data(), values_.data());
}

template <class Scalar>
void PpoGradient<Scalar>::compute_backward(const Stream& stream, const PpoLossConfig& config,
                                           const MinibatchView<Scalar>& minibatch, const Scalar* params, Scalar* grads,
                                           double* terms) {
  const std::int64_t batch = minibatch.size;
  if (net_->continuous()) {
    const int dims = net_->action_dim();
    Scalar* d_log_std = grads + net_->log_std_offset();
    gaussian_ppo_loss<Scalar>(stream, config, minibatch, dims, logits_.data(), params + net_->log_std_offset(), values_.data(),
                              advantage_stats_.data(), reduce_scratch_.data(), d_logits_.data(), d_log_std_rows_.data(),
                              d_values_.data(), terms);
    // d log_std [1][dims] = ones [1][B] x rows [B][dims]: a fixed-order sum, as the bias gradients are.
    gemm<Scalar>(stream, Transpose::No, Transpose::No, 1, dims, batch, Scalar(1), ones_.data(), batch, d_log_std_rows_.data(),
                 dims, Scalar(0), d_log_std, dims);
  } else {
    ppo_loss<Scalar>(stream, config, minibatch, net_->num_actions(), logits_.data(), values_.data(), advantage_stats_.data(),
                     reduce_scratch_.data(), d_logits_.data(), d_values_.data(), terms);
  }
  mlp_backward<Scalar>(stream, net_->actor(), params, minibatch.obs, batch, actor_activations_.data(), d_logits_.data(),
                       ones_.data(), grads, scratch_.data());
  mlp_backward<Scalar>(stream, net_->critic(), params, minibatch.obs, batch, critic_activations_.data(), d_values_.data(),
                       ones_.data(), grads, scratch_.data());
}

template <class Scalar>
std::size_t PpoGradient<Scalar>::device_bytes() const {
  return actor_activations_.bytes() + critic_activations_.bytes() + logits_.bytes() + values_.bytes() + d_logits_.bytes() +
         d_log_std_rows_.bytes() + d_values_.bytes() + scratch_.bytes() + ones_.bytes() + reduce_scratch_.bytes() + advantage_stats_.bytes();
}

template <class Scalar>
std::vector<TrainerBuffer> PpoGradient<Scalar>::layout(Device device, const ActorCritic& net, std::int64_t max_batch) {
  const std::int64_t b = max_batch, a = net.head_width();
  const std::size_t size = sizeof(Scalar);
  std::vector<TrainerBuffer> buffers = {
      {"workspace.actor_activations", "[B][hidden...]", net.actor().activation_size(b), size},
      {"workspace.critic_activations", "[B][hidden...]", net.critic().activation_size(b), size},
      {"workspace.logits", net.continuous() ? "[B][action_dim]" : "[B][num_actions]", b * a, size},
      {"workspace.values", "[B]", b, size},
      {"workspace.d_logits", net.continuous() ? "[B][action_dim]" : "[B][num_actions]", b * a, size},
      {"workspace.d_values", "[B]", b, size},
      {"workspace.scratch", "[2][B][widest hidden]",
       std::max(net.actor().scratch_size(b), net.critic().scratch_size(b)), size},
      {"workspace.ones", "[B]", b, size},
      {"workspace.reduce_scratch", "[scratch]", reduce_scratch_doubles(device, kLossTermCount), sizeof(double)},
      {"workspace.advantage_stats", "[2]", 2, sizeof(double)}};
  if (net.continuous()) buffers.push_back({"workspace.d_log_std_rows", "[B][action_dim]", b * net.action_dim(), size});
  return buffers;
}

template class PpoGradient<float>;
template class PpoGradient<double>;

}  // namespace surge::rl
