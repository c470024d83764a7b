// surge plot: learning curves of training runs, as SVG, from their metrics.csv: seeds of one
// configuration as a mean with a min-max band, the scenario's threshold as a dashed line.
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "scenarios/registry.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/io.hpp"
#include "tools/cli/plot_chart.hpp"
#include "tools/cli/plot_runs.hpp"

namespace surge::cli {
namespace {

// What a metrics.csv column holds, for the axis label.
std::string describe_column(const std::string& column) {
  if (column == "return_last100") return "mean return of the last 100 episodes";
  if (column == "episodic_return_mean") return "mean return of the episodes ended in the iteration";
  if (column == "eval_return_mean") return "mean return of the evaluation episodes";
  return column;
}

// The one scenario of all the runs; refused when they disagree. Empty when no run names one.
std::string common_scenario(const std::vector<PlotRun>& runs) {
  std::string scenario, where;
  for (const PlotRun& run : runs) {
    if (run.scenario.empty()) continue;
    if (!scenario.empty() && run.scenario != scenario)
      throw InputError("surge plot: the runs are of different scenarios (" + scenario + " in " + where + ", " +
                       run.scenario + " in " + run.folder + "); plot each scenario on its own");
    scenario = run.scenario;
    where = run.folder;
  }
  return scenario;
}

bool known_scenario(const std::string& name) {
  const std::vector<std::string> known = scenario_names();
  return std::find(known.begin(), known.end(), name) != known.end();
}

// --threshold: a number, `none`, or by default the scenario's reward threshold (none if unknown).
void set_threshold(const Command& cmd, const std::string& scenario, LineFigure& figure) {
  if (cmd.has("threshold")) {
    if (cmd.get("threshold") == "none") return;
    figure.threshold = cmd.get_double("threshold", -1e300, 1e300);
    figure.has_threshold = true;
    return;
  }
  if (scenario.empty()) return;
  if (!known_scenario(scenario))
    throw InputError("surge plot: the runs' config.toml names scenario '" + scenario +
                     "', which this build does not know; give --threshold R or --threshold none");
  figure.threshold = scenario_spec(scenario).reward_threshold;
  figure.has_threshold = true;
}

}  // namespace

int run_plot(const Args& args) {
  Command cmd("plot",
              "Draws learning curves: the return against environment steps (or wall time), from each run's\n"
              "metrics.csv. Runs whose config.toml are identical but for the seed are one group, drawn as their\n"
              "mean with a shaded min-max band; their curves are resampled by linear interpolation onto the x\n"
              "values of the group's first run, clipped to the x range every run of the group covers. A single\n"
              "run is a line. The scenario's reward threshold is a dashed line.");
  cmd.option("smooth", "K", "a trailing moving average over K iterations, applied to each run (1: none)", "1")
      .option("threshold", "R",
              "the dashed threshold line at return R, or 'none' [default: the scenario's reward threshold]")
      .option("x", "AXIS", "steps (environment steps) or time (wall time in s)", "steps")
      .option("y", "COLUMN", "the metrics.csv column to draw", "return_last100")
      .option("out", "FILE.svg", "where to write the figure [default: DIR/learning_curve.svg for one DIR]")
      .note(
          "Usage: surge plot DIR... [options]. Each DIR is a run folder (metrics.csv, config.toml), a\n"
          "metrics.csv, or a folder whose subfolders are run folders (DIR/seed1, DIR/seed2, ...).\n"
          "Cells left empty (or `nan`, in older files) are gaps in the curve, not zeros.")
      .example("surge train --scenario cartpole --out runs/cartpole && surge plot runs/cartpole")
      .example("surge train --scenario cartpole --seeds 1-3 --out runs/seeds && surge plot runs/seeds --smooth 10")
      .example("surge plot runs/lr-a runs/lr-b --x time --threshold none --out compare.svg");
  // Run folders come first or between options; every option takes a value.
  std::vector<std::string> paths, options;
  for (std::size_t k = 0; k < args.size(); ++k) {
    if (args[k].rfind("-", 0) != 0) {
      paths.push_back(args[k]);
      continue;
    }
    options.push_back(args[k]);
    if (args[k].rfind("--", 0) == 0 && args[k].find('=') == std::string::npos && k + 1 < args.size())
      options.push_back(args[++k]);
  }
  if (!cmd.parse_or_print_usage(options)) return 0;
  if (paths.empty()) throw InputError(cmd.complaint("name the run folder: surge plot DIR"));
  const int smooth = static_cast<int>(cmd.get_int("smooth", 1, 1000000));
  const std::string x_axis = cmd.get("x");
  if (x_axis != "steps" && x_axis != "time")
    throw InputError(cmd.complaint("--x '" + x_axis + "' is neither steps nor time"));
  if (paths.size() > 1 && !cmd.has("out"))
    throw InputError(cmd.complaint("several runs given; name the figure with --out FILE.svg"));
  const std::string out_path = cmd.has("out") ? cmd.get("out")
                               : std::filesystem::is_regular_file(paths[0])
                                   ? (std::filesystem::path(paths[0]).parent_path() / "learning_curve.svg").string()
                                   : (std::filesystem::path(paths[0]) / "learning_curve.svg").string();

  std::vector<PlotRun> runs = read_runs(paths, x_axis == "steps" ? "global_step" : "wall_time_s", cmd.get("y"));
  const std::string scenario = common_scenario(runs);
  LineFigure figure;
  set_threshold(cmd, scenario, figure);
  try {
    require_writable(out_path, "figure");
  } catch (const InputError& e) {
    const std::string what = e.what();
    throw InputError(what.rfind("surge ", 0) == 0 ? what : "surge plot: " + what);
  }
  if (smooth > 1)
    for (PlotRun& run : runs) run.y = trailing_mean(run.y, smooth);
  const std::vector<PlotGroup> groups = group_runs(runs);

  figure.title = scenario.empty() ? std::string("Learning curves")
                 : known_scenario(scenario)
                     ? "Learning curves: " + scenario_spec(scenario).gym_id + " (" + scenario + ")"
                     : "Learning curves: " + scenario;
  figure.subtitle = smooth > 1 ? "each run smoothed by a trailing mean over " + plural(smooth, "iteration") : "";
  figure.x_label = x_axis == "steps" ? "environment steps" : "wall time (s)";
  figure.y_label = describe_column(cmd.get("y"));
  for (std::size_t k = 0; k < groups.size(); ++k) {
    const PlotGroup& group = groups[k];
    figure.curves.push_back({group.label, okabe_ito()[k % okabe_ito().size()], group.x, group.mean,
                             group.runs > 1 ? group.low : std::vector<double>{},
                             group.runs > 1 ? group.high : std::vector<double>{}});
  }
  write_atomically(out_path, line_figure_svg(figure));
  std::cerr << "surge plot: " << plural(static_cast<long long>(runs.size()), "run") << " in "
            << plural(static_cast<long long>(groups.size()), "group") << " -> " << out_path << "\n";
  return 0;
}

}  // namespace surge::cli
