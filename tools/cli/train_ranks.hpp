#pragma once
// `surge train` under mpirun: what ranks other than 0 do, and the checks every rank makes first. Rank 0
// runs the ordinary run (it alone writes the run folder, metrics.csv, TensorBoard and checkpoints); the
// others train the same iterations on their own environments and write nothing. Every rank stops at the
// same iteration boundary: the stop flag (a target reached, Ctrl-C) is combined once per iteration.
#include <cstdint>

#include "rl/collective.hpp"
#include "rl/train_config.hpp"
#include "rl/train_state.hpp"
#include "sim/engine.hpp"

namespace surge::cli {

// Whether `metrics` reach --target-return `target` (NaN: no target): the last 100 episodes' mean.
bool target_reached(double target, const rl::IterationMetrics& metrics);

// Rank `ranks.rank()` (not 0) of a data-parallel run: the iterations, then nothing written. Returns the
// exit code (a signal's when one stopped it).
int follow_run(const rl::TrainConfig& config, const PhysicsConfig& physics, Device device, double target,
               std::int64_t stop_after, const rl::Collective& ranks);

// Under mpirun with more than one rank: the GPU of a CUDA run is picked by the rank's place on its machine.
Device rank_device(Device device, const rl::RankPlace& place);

}  // namespace surge::cli
