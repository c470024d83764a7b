#pragma once
// What both learners of `surge train --agents K` (one learner per agent, tools/cli/train_agents_run.cpp, and
// the batched learner, tools/cli/train_agents_batched.cpp) write: each agent's folder agents/<k> (config.toml,
// metrics.csv, grid_point.toml; its checkpoints are the learner's), RUN/tb/agent_<k>, RUN/metrics.csv,
// RUN/agents.csv, RUN/agents_summary.csv, the progress lines and the final table.
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rl/agent_grid.hpp"
#include "rl/io/checkpoint.hpp"
#include "rl/io/resume_state.hpp"
#include "rl/trainer.hpp"
#include "tools/cli/stop_signal.hpp"
#include "tools/cli/train_agents.hpp"
#include "tools/cli/train_eval.hpp"
#include "tools/cli/train_output.hpp"

namespace surge::cli {

// One agent's outputs and where it stands, whichever learner trains it.
struct AgentRecord {
  rl::AgentSpec spec;
  std::string dir;
  PhysicsConfig physics;
  std::unique_ptr<TrainOutput> output;
  std::unique_ptr<TrainEvaluator> evaluator;
  std::int64_t done = 0;      // iterations done, by this run and the runs it continues
  std::int64_t this_run = 0;  // iterations done by this run
  bool paused = false;        // reached --target-return: no further iteration recorded, its outputs final
  bool best_checkpoints = true;
  double target_time = NAN, target_step = NAN;
  double return_last100 = NAN;

  // Adds the iterations' rows (wall time `wall`; the target's time `wall + wall_offset`), notes the return and
  // the first iteration at `target`.
  void add_rows(const std::vector<rl::IterationMetrics>& ready, double wall, double wall_offset, double target);
};

// Agent k's checkpoint to continue (RUN/agents/<k>/checkpoint.h5), its rows checked.
struct ResumedAgent {
  rl::Checkpoint checkpoint;
  rl::ResumeState state;
  // Once restored: drops the parameters and saved states, keeping what open_agent_outputs reads (the rows and
  // the train state), so that K resumed agents do not hold K whole checkpoints at once.
  void drop_restored();
};
ResumedAgent read_resumed_agent(const std::string& run_dir, std::size_t k);

// Fills agent k's record from the plan (its spec, folder name and physics), writing nothing.
void prepare_agent(AgentRecord& agent, const AgentsPlan& plan, const std::string& run_dir, std::size_t k);
// Opens a prepared agent's outputs: its folder, grid_point.toml (a new run) or the rows it continues
// (`resumed`: done, and with the plan's target where it already stopped), config.toml, its evaluator. A
// resumed run calls it once every agent's checkpoint has been read and restored: a refused checkpoint
// leaves every agent's files as they were.
void open_agent_outputs(AgentRecord& agent, const AgentsPlan& plan, const std::string& run_dir, std::size_t k,
                        const ResumedAgent* resumed);

// RUN/agents.csv and RUN/metrics.csv (every agent's rows so far).
void write_agents_manifest(const std::string& run_dir, const std::vector<const AgentRecord*>& agents);
void write_combined_metrics(const std::string& run_dir, const std::vector<const AgentRecord*>& agents);

// "surge train: K agents of S on DEV, each N envs x T steps, I iterations<detail>, resumed ...; into DIR".
std::string start_line(const std::vector<const AgentRecord*>& agents, const AgentsPlan& plan, std::int64_t iterations,
                       std::int64_t done, const std::string& detail, const std::string& dir);
// The longest run of iterations any agent has done, and the time the runs this one continues took.
std::int64_t most_done(const std::vector<const AgentRecord*>& agents);
double earlier_wall_time(const std::vector<const AgentRecord*>& agents);

std::string progress_line(const std::vector<const AgentRecord*>& agents, std::int64_t done, std::int64_t iterations,
                          double wall);
bool mode_met(TargetMode mode, const std::vector<const AgentRecord*>& agents);

// After each round: whether the run stops (--target-mode met), a progress line at most every 0.5 s on a
// terminal (5 s otherwise), and RUN/metrics.csv again where a checkpoint was written in the round (`saved`).
class RoundEnd {
 public:
  RoundEnd();
  bool operator()(const std::vector<const AgentRecord*>& agents, const AgentsPlan& plan, const std::string& dir,
                  std::int64_t done, std::int64_t iterations, double wall, double wall_offset, bool saved);

 private:
  double last_print_ = -1e300;
  bool tty_;
};

// The end of a run, once every checkpoint is written: metrics.csv, the last progress line, the final table
// and RUN/agents_summary.csv, the target's line, and what to do after a stop. Returns the exit code.
int finish_agents(const std::vector<const AgentRecord*>& agents, const AgentsPlan& plan, const std::string& dir,
                  std::int64_t done, std::int64_t iterations, double wall, bool stop, bool written,
                  const StopSignals& signals);

}  // namespace surge::cli
