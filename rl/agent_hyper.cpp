#include "rl/agent_hyper.hpp"

#include <vector>

#include "rl/train_config.hpp"

namespace surge::rl {

namespace {

double flag(bool on) { return on ? 1.0 : 0.0; }

}  // namespace

AgentHyper agent_hyper(const TrainConfig& c) {
  return {c.learning_rate,    flag(c.anneal_lr), c.clip_coef, c.ent_coef,   c.vf_coef,
          flag(c.clip_vloss), flag(c.norm_adv),  c.gamma,     c.gae_lambda, c.max_grad_norm,
          c.adam_eps,         c.target_kl,       c.obs_clip,  c.reward_clip};
}

AgentHyper loss_hyper(const PpoLossConfig& loss) {
  TrainConfig config;
  static_cast<PpoLossConfig&>(config) = loss;
  return agent_hyper(config);
}

PpoLossConfig loss_config(const AgentHyper& hyper) {
  PpoLossConfig loss;
  loss.clip_coef = hyper.clip_coef;
  loss.ent_coef = hyper.ent_coef;
  loss.vf_coef = hyper.vf_coef;
  loss.clip_vloss = hyper.clip_vloss != 0.0;
  loss.norm_adv = hyper.norm_adv != 0.0;
  return loss;
}

AdamConfig adam_config(const AgentHyper& hyper, const AdamConfig& adam) {
  AdamConfig out = adam;
  out.adam_eps = hyper.adam_eps;
  out.max_grad_norm = hyper.max_grad_norm;
  return out;
}

OwnAgentHyper::OwnAgentHyper(const Stream& stream, const AgentHyper& values)
    : stream_(stream), buffer_(stream.device(), 1) {
  from_host(buffer_.span(), std::vector<AgentHyper>{values}, stream);
}

}  // namespace surge::rl
