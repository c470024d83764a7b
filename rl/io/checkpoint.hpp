#pragma once
// DIR/checkpoint.h5: everything a trained agent is (HDF5, readable with h5py): the parameters and
// the Adam state, one dataset per ParamTable slice, shaped as the slice; the config as TOML; the
// scenario; the step count. Every dataset is chunked with HDF5's Fletcher-32 checksum, and the file is
// in HDF5's 1.10 format, whose metadata is checksummed too (rl/io/checkpoint_file.hpp). Layout:
//   /                    attributes format ("surge-checkpoint"), format_version, scenario, gym_id, obs_dim,
//                        num_actions (0 when continuous), action_dim (0 when discrete), global_step,
//                        iteration, config (TOML text), ranks (of a data-parallel run; absent: 1)
//   /parameters/<slice>  float32: a weight [out][in] (/parameters/actor.0.weight [64][4]), a bias [out]
//                        (/parameters/actor.0.bias [64]; files written before this layout hold [64][1],
//                        and still load), the Gaussian's actor.log_std [action_dim][1]
//   /optimizer           attributes step, learning_rate, beta1, beta2, eps, max_grad_norm
//   /optimizer/adam_m/<slice>, /optimizer/adam_v/<slice>   float32, shaped as the parameters
//   /normalization       where the config has normalize_obs or normalize_reward: float64 datasets
//                        obs_mean, obs_var [obs_dim] and reward_mean, reward_var [1], with attributes
//                        obs_count and reward_count (Gymnasium's RunningMeanStd mean, var and count)
// Without HDF5 (rl/io/no_hdf5_checkpoint.cpp) the functions below throw InputError saying so.
#include <cstdint>
#include <string>
#include <vector>

#include "rl/train_config.hpp"

namespace surge {
struct ScenarioSpec;
}

namespace surge::rl {

class ActorCritic;
class Trainer;

struct Checkpoint {
  std::string path;  // where it was read from (for messages); empty for one built in memory
  std::string scenario;
  std::string gym_id;
  int obs_dim = 0;
  int num_actions = 0;  // discrete actions, or 0
  int action_dim = 0;   // continuous action dimensions (a Gaussian policy with /parameters/actor.log_std), or 0
  TrainConfig config;
  std::int64_t global_step = 0;  // every rank's steps: iteration x batch x ranks
  std::int64_t iteration = 0;
  int ranks = 1;  // the data-parallel run's processes
  // Flat, laid out by the ParamTable of network() below.
  std::vector<float> params, adam_m, adam_v;
  double adam_step = 0.0;
  double learning_rate = 0.0;
  // Running statistics where config.normalize_obs / normalize_reward (rl/normalization.hpp layout:
  // mean, var, count): [2*obs_dim + 1] and [3]; empty otherwise.
  std::vector<double> obs_moments, reward_moments;
};

// Whether this build reads and writes checkpoints: false where HDF5 was not found.
bool checkpoints_available();

// The network (untrained) whose table lays out a checkpoint's parameters.
ActorCritic checkpoint_network(const Checkpoint& checkpoint);

// The trainer's agent as a checkpoint holds it (waits for the trainer's stream).
Checkpoint checkpoint_of(const Trainer& trainer);

// Writes the trainer's state whole or not at all (into a temporary beside `path`, renamed when done).
// Waits for the trainer's stream. Throws Error when the file cannot be written.
void write_checkpoint(const std::string& path, const Trainer& trainer);
void write_checkpoint(const std::string& path, const Checkpoint& checkpoint);

// Throws InputError naming the path when it is missing, not HDF5, or not a Surge checkpoint, and
// "checkpoint 'PATH' is damaged: ..." naming the dataset or attribute when anything in it is not what
// this layout allows: missing, of another type or shape, out of range, failing its checksum.
Checkpoint read_checkpoint(const std::string& path);

// Throws InputError naming the checkpoint when its policy's observations or actions are not the
// scenario's (`surge eval` and `surge train --resume` check this before building anything).
void require_scenario(const Checkpoint& checkpoint, const ScenarioSpec& spec);

}  // namespace surge::rl
