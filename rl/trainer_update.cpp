// The trainer's minibatch updates (rl/trainer.hpp): the gather, then either the CPU's fused update or the
// separate forward, backward, gradient average and optimiser steps, and the end of each epoch.
#include "rl/ppo_loss_fused.hpp"
#include "rl/trainer.hpp"
#include "rl/trainer_kernels.hpp"
#include "rl/trainer_phase_mark.hpp"

namespace surge::rl {

void Trainer::gather_minibatch(std::int64_t epoch, std::int64_t m) {
  const PhaseMark mark(clock_, TrainPhase::Other);
  rl::gather_minibatch(stream_, permutation_, data(b_.state), config_.update_epochs, epoch, m, minibatch_size_, batch_,
                       minibatch_buffers_);
  if (frames_) gather_minibatch_stacks(epoch, m);
}

bool Trainer::fused_update(std::int64_t epoch, std::int64_t m) {
  if (clock_ || ranks_.size() > 1 || !fused_ppo_update_applies(network_, device_)) return false;
  double* terms = data(b_.minibatch.loss_terms) + (epoch * config_.num_minibatches + m) * kLossTermCount;
  const LearnerBuffers learner{data(b_.params), data(b_.grads), data(b_.adam_m), data(b_.adam_v), data(b_.optimizer)};
  const AgentHyper& hyper = data(b_.hyper)[0];  // the fused update runs on the CPU, where the host reads it
  fused_ppo_update(network_, loss_config(hyper), adam_config(hyper, config_), minibatch_, learner, terms,
                   workspace_.params_version(), fused_ppo_update_threads(config_.cpu_threads));
  workspace_.parameters_changed();
  return true;
}

void Trainer::update_forward() {
  const PhaseMark mark(clock_, TrainPhase::UpdateForward);
  workspace_.compute_forward(stream_, minibatch_, data(b_.params));
}

void Trainer::update_backward(std::int64_t epoch, std::int64_t m) {
  const PhaseMark mark(clock_, TrainPhase::UpdateBackward);
  double* terms = data(b_.minibatch.loss_terms) + (epoch * config_.num_minibatches + m) * kLossTermCount;
  workspace_.compute_backward(stream_, data(b_.hyper), 0, minibatch_, data(b_.params), data(b_.grads), terms, &ranks_);
}

void Trainer::average_gradients(std::int64_t epoch, std::int64_t m) {
  // The mean of the ranks' gradients is the gradient of the mean loss over their minibatches together.
  // The loss terms add up too: every rank then sees the same approx_kl, so target-KL stops all or none.
  if (ranks_.size() == 1) return;
  const PhaseMark mark(clock_, TrainPhase::UpdateBackward);
  ranks_.all_reduce_sum(arena_[b_.grads], stream_);
  scale_values(stream_, data(b_.grads), network_.table().total(), 1.0f / static_cast<float>(ranks_.size()));
  ranks_.all_reduce_sum(
      arena_[b_.minibatch.loss_terms].slice((epoch * config_.num_minibatches + m) * kLossTermCount, kLossTermCount),
      stream_);
}

void Trainer::optimiser_step() {
  const PhaseMark mark(clock_, TrainPhase::Optimiser);
  adam_step(stream_, config_, data(b_.hyper), 0, arena_[b_.params], arena_[b_.grads], arena_[b_.adam_m],
            arena_[b_.adam_v], data(b_.optimizer), data(b_.reduce_scratch));
  workspace_.parameters_changed();
}

void Trainer::end_epoch(std::int64_t epoch) {
  const PhaseMark mark(clock_, TrainPhase::Other);
  const double* last_terms =
      data(b_.minibatch.loss_terms) + (epoch * config_.num_minibatches + config_.num_minibatches - 1) * kLossTermCount;
  rl::end_epoch(stream_, data(b_.hyper), 0, data(b_.state), data(b_.optimizer), last_terms,
                minibatch_size_ * ranks_.size());
}

}  // namespace surge::rl
