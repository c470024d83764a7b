// Checkpoints and resume state in a build without HDF5: every reader and writer throws InputError
// saying so, so `surge train --resume` and `surge eval` compile everywhere and answer with one line.
// Built instead of checkpoint.cpp and resume_state.cpp (rl/CMakeLists.txt).
#include "rl/actor_critic.hpp"
#include "rl/io/checkpoint.hpp"
#include "rl/io/no_hdf5.hpp"
#include "rl/io/resume_state.hpp"

namespace surge::rl {
bool checkpoints_available() { return false; }

ActorCritic checkpoint_network(const Checkpoint&) { no_hdf5("checkpoints"); }
Checkpoint checkpoint_of(const Trainer&) { no_hdf5("checkpoints"); }
void write_checkpoint(const std::string& path, const Trainer&) { no_hdf5("checkpoint '" + path + "'"); }
void write_checkpoint(const std::string& path, const Checkpoint&) { no_hdf5("checkpoint '" + path + "'"); }
Checkpoint read_checkpoint(const std::string& path) { no_hdf5("checkpoint '" + path + "'"); }
void require_scenario(const Checkpoint&, const ScenarioSpec&) { no_hdf5("checkpoints"); }

ResumeState ResumeState::capture(const Trainer&, Engine&) { no_hdf5("checkpoints"); }
void ResumeState::restore(const Checkpoint&, Trainer&, Engine&) const { no_hdf5("checkpoints"); }
void append_resume_state(const std::string& checkpoint_path, const ResumeState&) {
  no_hdf5("checkpoint '" + checkpoint_path + "'");
}
std::vector<SavedBuffer> ResumeState::trainer_state(const Checkpoint&) const { no_hdf5("checkpoints"); }
ResumeState read_resume_state(const std::string& checkpoint_path) { no_hdf5("checkpoint '" + checkpoint_path + "'"); }
void write_resumable_checkpoint(const std::string& path, const Trainer&, const ResumeState&) {
  no_hdf5("checkpoint '" + path + "'");
}
void write_resumable_checkpoint(const std::string& path, const Checkpoint&, const ResumeState&) {
  no_hdf5("checkpoint '" + path + "'");
}

}  // namespace surge::rl
