#pragma once
// What a checkpoint must hold beyond the agent (rl/io/checkpoint.hpp) for `surge train --resume` to
// continue a run exactly where it stopped: the trainer's saved state (the entries of its buffer tables
// marked kSaved that the agent does not hold: iteration counters, the Adam scalars, the ring of recent
// returns, the running episode returns, the discounted-return accumulators), the environments' state
// (physics state, per-env parameters, step counters, episode accumulators, RNG offsets) and the metrics
// rows so far. Stored in the checkpoint file under /resume:
//   /resume              attribute metrics_columns (text [C])
//   /resume/<entry>      one dataset per saved trainer entry, named as BufferEntry::saved_name says and
//                        shaped as its value_dims: train_state int64 [1][4] (iteration, epochs_applied,
//                        last100_head, last100_count), optimizer float64 [1][7] (learning_rate, step,
//                        grad_norm_sq, grad_scale, step_size, bias_correction2_sqrt, frozen),
//                        recent_returns float64 [100], running_return float32 [N], reward_accumulator
//                        float32 [N] where normalize_reward
//   /resume/metrics      float64 [rows][C]     the metrics.csv rows so far
//   /resume/env_<entry>  the engine's saved entries the same way: env_state float32 [N][state_dim],
//                        env_params [N][params] in the scenario's parameter type (float32, or float64 for
//                        a scenario that keeps its parameters so), env_episode_steps int32 [N],
//                        env_episode_returns float32 [N], env_rng_offsets uint64 [N]
//   /resume/rank<r>/...  a data-parallel run's rank r (1 .. ranks-1, the root's attribute `ranks`; rank 0's
//                        entries are the ones above): its trainer and env_ entries, named and shaped as above
// Files of the first release keep train_state as an int64 [4] attribute of /resume and the other
// entries flat; they load the same.
// Without HDF5 (rl/io/no_hdf5_checkpoint.cpp) the functions below throw InputError saying so.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "rl/train_state.hpp"
#include "sim/buffer_table.hpp"
#include "sim/error.hpp"

namespace surge {
class Engine;
}

namespace surge::rl {

class Trainer;
struct Checkpoint;

// One rank's own state: what ResumeState::trainer and ::engine hold for rank 0.
struct RankResume {
  std::vector<SavedBuffer> trainer, engine;
};

struct ResumeState {
  std::string path;                     // the checkpoint it was read from (for messages)
  std::vector<SavedBuffer> trainer;     // Trainer::save_state() less the agent's entries (kAgent)
  std::vector<SavedBuffer> engine;      // the engine's saved entries (state, params, counters, RNG offsets)
  int ranks = 1;                        // of the run that saved it
  std::vector<RankResume> other_ranks;  // [ranks - 1]: ranks 1 .. ranks-1 of a data-parallel run
  std::vector<std::string> metrics_columns;
  std::vector<std::vector<double>> metrics_rows;

  // Copies the device state to the host (waits for the trainer's stream). Data-parallel, every rank
  // calls it at the same point: rank 0's state gathers the others' (other_ranks); theirs hold their own.
  static ResumeState capture(const Trainer& trainer, Engine& engine);
  // Puts the agent and this state back into a trainer and engine built from the checkpoint's config,
  // the trainer's rank taking its own part; throws InputError when their sizes or the number of ranks
  // differ from the checkpoint's.
  void restore(const Checkpoint& agent, Trainer& trainer, Engine& engine) const;
  // Rank 0's whole trainer state: the agent's entries (parameters, Adam moments, normalisation statistics)
  // followed by `trainer`, as Trainer::save_state() gave them (for a learner that restores it itself).
  std::vector<SavedBuffer> trainer_state(const Checkpoint& agent) const;
  // Iterations the saved run had completed (its train_state).
  std::int64_t iteration() const {
    const std::optional<TrainState> state = saved_value<TrainState>(trainer, "train_state");
    if (!state) throw InputError("the resume state holds no train_state; the checkpoint is damaged");
    return state->iteration;
  }
};

// Adds /resume to a checkpoint file written by write_checkpoint, or reads it; read throws InputError
// naming the path when the checkpoint has none (it was written by an older build or by hand), and
// "checkpoint 'PATH' is damaged: ..." when an entry is unreadable, fails its checksum, or train_state
// or the metrics are out of range: train_state int64 [1][4] with iteration equal to the checkpoint's,
// last100_head in 0..99 and last100_count in 0..100; metrics [iteration][columns].
void append_resume_state(const std::string& checkpoint_path, const ResumeState& state);
ResumeState read_resume_state(const std::string& checkpoint_path);

// A checkpoint with resume state, written whole or not at all: the agent (write_checkpoint) and /resume
// go into a temporary file that is renamed over `path` once complete.
void write_resumable_checkpoint(const std::string& path, const Trainer& trainer, const ResumeState& state);
// The same for an agent given as a Checkpoint (an agent of the batched learner): the same file as a Trainer
// of that state writes.
void write_resumable_checkpoint(const std::string& path, const Checkpoint& agent, const ResumeState& state);

}  // namespace surge::rl
