#pragma once
// `surge train` under mpirun: what ranks other than 0 do, and the checks every rank makes first. Rank 0
// runs the ordinary run (it alone writes the run folder, metrics.csv, TensorBoard and checkpoints); the
// others train the same iterations on their own environments and write nothing but what rank 0 asks for:
// at every iteration boundary where rank 0 writes a checkpoint, every rank hands it its state. Every rank
// stops at the same iteration boundary: the stop flag (a target reached, Ctrl-C) is combined once per
// iteration.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rl/collective.hpp"
#include "rl/io/checkpoint.hpp"
#include "rl/io/resume_state.hpp"
#include "rl/train_config.hpp"
#include "rl/train_state.hpp"
#include "sim/engine.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/train_rollout_log.hpp"

namespace surge::cli {

// Whether `metrics` reach --target-return `target` (NaN: no target): the last 100 episodes' mean.
bool target_reached(double target, const rl::IterationMetrics& metrics);

// What a rank other than 0 needs of the run: all but `resumed` as every rank has it.
struct RankRun {
  const rl::TrainConfig& config;
  const PhysicsConfig& physics;
  Device device;
  double target;
  std::int64_t stop_after;               // iterations of this run, or -1
  const rl::Checkpoint* resumed;         // --resume: the agent, and
  const rl::ResumeState* resume_state;   // every rank's state (each takes its own)
  std::optional<RolloutLogRequest> log;  // this rank's rollout log (its own path), if it logs
  bool ranks_log = false;                // whether any rank but 0 logs (rank 0 makes the run folder first)
  std::int64_t checkpoint_every = 0;     // rank 0's periodic checkpoints (0: none)
};

// Whether rank 0 may evaluate or write a checkpoint at the end of `iteration`: the other ranks then wait
// for it without the rank timeout (rl::RankTimeoutPause), at the checkpoint flag and at the next stop flag.
inline bool rank0_long_work(const rl::TrainConfig& config, std::int64_t checkpoint_every, std::int64_t iteration) {
  return (config.eval_every > 0 && iteration % config.eval_every == 0) ||
         (checkpoint_every > 0 && iteration % checkpoint_every == 0);
}

// "surge train: logged N iterations to FILE" once a rollout log is closed (nothing if it failed: it said why).
void report_rollout_log(const rl::RolloutLog& log);

// --log-ranks: "all", or ranks such as 0,2 or 1-3 (each below `size`); a flag per rank.
std::vector<bool> parse_log_ranks(const std::string& text, int size, const Command& cmd);
// Where rank `rank` logs its rollouts: FILE.h5 itself for rank 0, FILE.rank<r>.h5 for the others.
std::string rank_log_path(const std::string& path, int rank);
// Rank 0's rollout log is open (and the run folder made): the other ranks may open theirs. Every rank
// calls it where any rank but 0 logs.
inline void logs_may_open(const rl::Collective& ranks) { ranks.any(false); }

// Rank `ranks.rank()` (not 0) of a data-parallel run: the iterations, its state for rank 0's checkpoints,
// its rollout log if it logs, nothing else written. Returns the exit code (a signal's when one stopped it).
int follow_run(const RankRun& run, const rl::Collective& ranks);

// Rank 0's side of the checkpoint exchange, once per iteration: whether it writes a checkpoint now
// (`wanted`), told to every rank (followers pass false and learn it).
inline bool checkpoint_now(bool wanted, const rl::Collective& ranks) {
  return ranks.any(wanted && rl::checkpoints_available());
}

// Under mpirun with more than one rank: the GPU of a CUDA run is picked by the rank's place on its machine.
Device rank_device(Device device, const rl::RankPlace& place);

}  // namespace surge::cli
