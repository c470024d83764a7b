// The batched learner's per-agent state for checkpoints (rl/batched_trainer.hpp): agent k's replica of the
// per-agent buffers and its entries of the [K] arrays, under the names a Trainer of its run alone uses.
#include <cstring>
#include <string>

#include "rl/batched_trainer.hpp"
#include "sim/error.hpp"

namespace surge::rl {
namespace {

// One element of a [K] array of structs, as a Trainer's [1] entry of it saves: [1][fields].
template <class T>
SavedBuffer struct_entry(const std::string& name, DType fields, const T& value) {
  SavedBuffer saved{name, fields, {1, static_cast<std::int64_t>(sizeof(T) / dtype_size(fields))}, false, {}};
  saved.bytes.resize(sizeof(T));
  std::memcpy(saved.bytes.data(), &value, sizeof(T));
  return saved;
}

template <class T>
T struct_value(const std::vector<SavedBuffer>& saved, const std::string& name, DType fields, const std::string& what) {
  const SavedBuffer* found = find_saved(saved, name);
  if (!found) throw InputError(what + " lacks '" + name + "'; resume with a checkpoint of this run's kind");
  if (found->dtype != fields || found->bytes.size() != sizeof(T))
    throw InputError(what + "'s '" + name + "' is not one " + dtype_name(fields) + " record of " +
                     std::to_string(sizeof(T) / dtype_size(fields)) + " fields; the file is damaged");
  T value;
  std::memcpy(&value, found->bytes.data(), sizeof(T));
  return value;
}

}  // namespace

std::vector<SavedBuffer> BatchedTrainer::save_state(int agent) const {
  SURGE_CHECK(agent >= 0 && agent < agents_, "agent " + std::to_string(agent) + " of " + std::to_string(agents_));
  std::vector<SavedBuffer> saved = save_buffers(agent_arena_, stream_, agent);
  // In a Trainer's table order: the learner's parameters and moments, its scalars, then the metrics' state.
  // The agent table's saved entries come in a Trainer's order (learner, metrics, then normalisation); its
  // scalars, kept in [K] arrays here, come after the learner's three arrays, as in a Trainer's table.
  std::vector<SavedBuffer> ordered;
  for (SavedBuffer& buffer : saved) {
    ordered.push_back(std::move(buffer));
    if (ordered.back().name == "adam_v") {
      ordered.push_back(struct_entry("optimizer", DType::Float64, optimizer_scalars(agent)));
      ordered.push_back(struct_entry("train_state", DType::Int64, train_state(agent)));
    }
  }
  return ordered;
}

void BatchedTrainer::restore_state(int agent, const std::vector<SavedBuffer>& saved) {
  SURGE_CHECK(agent >= 0 && agent < agents_, "agent " + std::to_string(agent) + " of " + std::to_string(agents_));
  const std::string what = "the checkpoint";
  const auto optimizer = struct_value<OptimizerScalars>(saved, "optimizer", DType::Float64, what);
  const auto state = struct_value<TrainState>(saved, "train_state", DType::Int64, what);
  // The kernels index the ring of recent returns with these: a damaged file must not reach them.
  if (state.iteration < 0 || state.epochs_applied < 0 || state.last100_head < 0 ||
      state.last100_head >= kRecentEpisodes || state.last100_count < 0 || state.last100_count > kRecentEpisodes)
    throw InputError("the checkpoint's train_state (iteration " + std::to_string(state.iteration) + ", ring head " +
                     std::to_string(state.last100_head) + ", ring count " + std::to_string(state.last100_count) +
                     ") is out of range; the file is damaged");
  restore_buffers(agent_arena_, saved, what, stream_, agent);
  std::vector<OptimizerScalars> optimizers = to_host(shared_arena_[s_.optimizer], stream_);
  std::vector<TrainState> states = to_host(shared_arena_[s_.state], stream_);
  optimizers[static_cast<std::size_t>(agent)] = optimizer;
  states[static_cast<std::size_t>(agent)] = state;
  from_host(shared_arena_[s_.optimizer], optimizers, stream_);
  from_host(shared_arena_[s_.state], states, stream_);
  // The restored environments' observations start the next iteration (obs[T] moves to obs[0]).
  const std::int64_t row = num_envs_ * obs_dim_;
  engine_.observe_agents(agent_arena_.at(b_.obs, 0).slice(num_steps_ * row, row),
                         static_cast<std::int64_t>(agent_arena_.replica_stride_bytes()), stream_);
  normalize_observations(num_steps_ * num_envs_);  // by the statistics as restored: they counted it already
  stream_.synchronize();
}

}  // namespace surge::rl
