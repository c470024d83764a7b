#pragma once
// `surge train --seeds 1-5`: the seeds, one run folder each (DIR/seed<K>), and the table across them
// (final return, steps and time to the threshold, greedy evaluation; mean ± std over seeds), printed and
// written as DIR/seeds.csv.
#include <cstdint>
#include <string>
#include <vector>

#include "rl/trainer.hpp"
#include "sim/engine.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/train_eval.hpp"

namespace surge::cli {

struct SeedResult {
  std::uint64_t seed = 0;
  std::string dir;
  double return_last100 = 0.0;                        // at the end
  double threshold = 0.0;                             // --target-return, else the scenario's threshold
  double threshold_step = NAN, threshold_time = NAN;  // NaN: not reached
  EvalResult greedy{NAN, NAN};                        // final_evaluation(); NaN when the run did not finish
};

// "1-5", "1,4,9" or "3": at most 1000 seeds, none repeated; InputError naming the bad part otherwise.
std::vector<std::uint64_t> parse_seeds(const std::string& text, const Command& cmd);
std::string seed_dir(const std::string& parent, std::uint64_t seed);  // parent/seed<K>

// A finished run's row of the table, from its metrics rows (TrainOutput columns). With --target-return
// the time it was met is known; otherwise the first row whose return_last100 reaches `threshold`
// once 100 episodes have ended.
SeedResult summarize_run(const std::vector<std::vector<double>>& rows, double threshold, double target_time,
                         double target_step, const std::string& dir, std::uint64_t seed);
// 100 greedy episodes of the trained policy, as `surge eval` plays them.
EvalResult final_evaluation(const rl::Trainer& trainer, const PhysicsConfig& physics, const rl::TrainConfig& config);
// Mean ± std (population) of the values that are not NaN ("—" if none), and how many they are.
std::string mean_std(const std::vector<double>& values, std::size_t* count = nullptr);
// Rows of cells as columns two spaces apart (± and — take one column each), a line per row.
std::string aligned_table(const std::vector<std::vector<std::string>>& table);
// Prints the table and writes parent/seeds.csv.
void report_seeds(const std::vector<SeedResult>& results, const ScenarioSpec& spec, const std::string& parent);

}  // namespace surge::cli
