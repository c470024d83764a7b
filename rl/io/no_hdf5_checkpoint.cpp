// Checkpoints and resume state in a build without HDF5: every reader and writer throws InputError
// saying so, so `surge train --resume` and `surge eval` compile everywhere and answer with one line.
// Built instead of checkpoint.cpp and resume_state.cpp (rl/CMakeLists.txt).
#include "rl/actor_critic.hpp"
#include "rl/io/checkpoint.hpp"
#include "rl/io/resume_state.hpp"
#include "sim/error.hpp"

namespace surge::rl {
namespace {

[[noreturn]] void no_hdf5(const std::string& path) {
  throw InputError("checkpoint '" + path + "': this build has no HDF5: install libhdf5-dev and rebuild");
}

[[noreturn]] void no_hdf5() {
  throw InputError("checkpoints: this build has no HDF5: install libhdf5-dev and rebuild");
}

}  // namespace

bool checkpoints_available() { return false; }

ActorCritic checkpoint_network(const Checkpoint&) { no_hdf5(); }
void write_checkpoint(const std::string& path, const Trainer&) { no_hdf5(path); }
void write_checkpoint(const std::string& path, const Checkpoint&) { no_hdf5(path); }
Checkpoint read_checkpoint(const std::string& path) { no_hdf5(path); }

ResumeState ResumeState::capture(const Trainer&, Engine&) { no_hdf5(); }
void ResumeState::restore(const Checkpoint&, Trainer&, Engine&) const { no_hdf5(); }
void append_resume_state(const std::string& checkpoint_path, const ResumeState&) { no_hdf5(checkpoint_path); }
ResumeState read_resume_state(const std::string& checkpoint_path) { no_hdf5(checkpoint_path); }
void write_resumable_checkpoint(const std::string& path, const Trainer&, const ResumeState&) { no_hdf5(path); }

}  // namespace surge::rl
