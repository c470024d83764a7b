#pragma once
// The runs `surge plot` draws: found from the paths given, read from metrics.csv and config.toml,
// smoothed, and gathered into groups of seeds whose mean and min-max band are drawn.
#include <map>
#include <string>
#include <vector>

namespace surge::cli {

// One training run: a metrics.csv and, where it lies beside it, a config.toml.
struct PlotRun {
  std::string folder;    // as the user named it (or the argument joined with a subfolder)
  std::string scenario;  // from `scenario = "..."` or the header comment; empty when unknown
  std::string seed;      // the `seed` key as written; empty when unknown
  std::string config;    // config.toml without comment lines and the seed key: runs that share it are seeds
  std::map<std::string, std::string> settings;  // config.toml's keys (section.key) and values, seed left out
  std::vector<double> x, y;                     // one point per metrics.csv row; y is NaN where the cell is empty
};

// The run folders named by `paths`: each a run folder, a metrics.csv, a folder whose direct
// subfolders are run folders (read in natural order: seed2 before seed10), or a run of agents (its
// agents/<k> folders). `x_column` and `y_column`
// name the metrics.csv columns. Throws InputError on a path that is none of these or a bad file.
std::vector<PlotRun> read_runs(const std::vector<std::string>& paths, const std::string& x_column,
                               const std::string& y_column);

// The trailing moving average over `window` rows: each value the mean of the non-missing values among
// itself and the window - 1 rows before it; a missing value stays missing.
std::vector<double> trailing_mean(const std::vector<double>& values, int window);

// Runs of one configuration: the seeds' mean and their min-max band on a common x grid, or one run.
struct PlotGroup {
  std::string label;                       // what sets the group apart, and how many seeds it holds
  std::vector<double> x, mean, low, high;  // NaN marks a gap
  int runs = 0;
};

// Runs whose configs are identical but for the seed form one group, in the order first met. The
// seeds' curves are resampled by linear interpolation onto the x values of the group's first run,
// clipped to the x range every run of the group covers.
std::vector<PlotGroup> group_runs(const std::vector<PlotRun>& runs);

}  // namespace surge::cli
