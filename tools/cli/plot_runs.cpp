#include "tools/cli/plot_runs.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "sim/error.hpp"
#include "sim/format.hpp"
#include "tools/cli/io.hpp"

namespace surge::cli {
namespace {

namespace fs = std::filesystem;

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

// "seed2" before "seed10": runs of digits compare as numbers.
bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      std::size_t end_a = i, end_b = j;
      while (end_a < a.size() && std::isdigit(static_cast<unsigned char>(a[end_a]))) ++end_a;
      while (end_b < b.size() && std::isdigit(static_cast<unsigned char>(b[end_b]))) ++end_b;
      const std::string digits_a = a.substr(i, end_a - i), digits_b = b.substr(j, end_b - j);
      const std::string number_a = digits_a.substr(std::min(digits_a.find_first_not_of('0'), digits_a.size()));
      const std::string number_b = digits_b.substr(std::min(digits_b.find_first_not_of('0'), digits_b.size()));
      if (number_a.size() != number_b.size()) return number_a.size() < number_b.size();
      if (number_a != number_b) return number_a < number_b;
      i = end_a;
      j = end_b;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return i == a.size() && j < b.size();
}

// What a run's config.toml says about it; all empty when there is none.
void read_config(const fs::path& file, PlotRun& run) {
  std::ifstream in(file);
  if (!in) return;
  std::string line, section, header_scenario;
  bool first_line = true;
  while (std::getline(in, line)) {
    const std::string text = trim(line);
    // The header comment train writes: "# surge train: <scenario> (<gym id>) on <device>".
    const std::string header = "# surge train: ";
    if (first_line && text.rfind(header, 0) == 0)
      header_scenario = text.substr(header.size(), text.find(' ', header.size()) - header.size());
    first_line = false;
    if (text.empty() || text[0] == '#') continue;
    if (text[0] == '[') {
      section = text.substr(1, text.find(']') - 1);
      run.config += text + "\n";
      continue;
    }
    const auto eq = text.find('=');
    if (eq == std::string::npos) {
      run.config += text + "\n";
      continue;
    }
    const std::string key = (section.empty() ? "" : section + ".") + trim(text.substr(0, eq));
    const std::string value = trim(text.substr(eq + 1));
    if (key == "seed") {
      run.seed = value;
      continue;
    }
    if (key == "scenario" && value.size() >= 2 && value.front() == '"' && value.back() == '"')
      run.scenario = value.substr(1, value.size() - 2);
    run.settings[key] = value;
    run.config += key + " = " + value + "\n";
  }
  if (run.scenario.empty()) run.scenario = header_scenario;
}

// A cell as a number; empty cells and `nan` (older files) are missing values, not zeros.
double optional_cell(const CsvTable& table, std::size_t row, int column) {
  const std::string& text = table.rows[row][static_cast<std::size_t>(column)];
  if (text.empty() || text == "nan" || text == "-nan") return NAN;
  return parse_cell(table, row, column);
}

int required_column(const CsvTable& table, const std::string& name) {
  const int column = table.column(name);
  if (column < 0)
    throw InputError("surge plot: '" + table.path + "' has no column '" + name +
                     "'; name one of its columns with --y, or give the metrics.csv of a surge train run");
  return column;
}

PlotRun read_run(const std::string& folder, const fs::path& csv_path, const std::string& x_column,
                 const std::string& y_column) {
  PlotRun run;
  run.folder = folder;
  read_config(csv_path.parent_path() / "config.toml", run);
  const CsvTable table = CsvTable::read(csv_path.string());
  const int x = required_column(table, x_column), y = required_column(table, y_column);
  for (std::size_t row = 0; row < table.rows.size(); ++row) {
    run.x.push_back(parse_cell(table, row, x));
    run.y.push_back(optional_cell(table, row, y));
    if (row > 0 && run.x[row] < run.x[row - 1])
      throw InputError("surge plot: '" + table.path + "' row " + std::to_string(row + 1) + ": " + x_column +
                       " goes backwards; give the metrics.csv of one surge train run");
  }
  if (std::none_of(run.y.begin(), run.y.end(), [](double v) { return std::isfinite(v); }))
    throw InputError("surge plot: '" + table.path + "' has no value in column " + y_column +
                     " (every cell is empty); train longer, choose another --y, or leave this run out");
  return run;
}

// The x range where a run has values: its first and last rows with a value.
std::pair<double, double> covered(const PlotRun& run) {
  double first = NAN, last = NAN;
  for (std::size_t k = 0; k < run.x.size(); ++k)
    if (std::isfinite(run.y[k])) {
      if (std::isnan(first)) first = run.x[k];
      last = run.x[k];
    }
  return {first, last};
}

// The run's value at x, linear between its rows; NaN outside its rows or next to a missing value.
double value_at(const PlotRun& run, double x) {
  const auto it = std::lower_bound(run.x.begin(), run.x.end(), x);
  if (it == run.x.end()) return NAN;
  const std::size_t k = static_cast<std::size_t>(it - run.x.begin());
  if (*it == x) return run.y[k];
  if (k == 0) return NAN;
  const double x0 = run.x[k - 1], x1 = run.x[k], y0 = run.y[k - 1], y1 = run.y[k];
  return y0 + (y1 - y0) * (x - x0) / (x1 - x0);  // NaN when either end is missing
}

// Where the runs of a group came from: their common parent folder, or the first run and a count.
std::string origin(const std::vector<PlotRun>& runs, const std::vector<std::size_t>& members) {
  if (members.size() == 1) return runs[members[0]].folder;
  const std::string parent = fs::path(runs[members[0]].folder).parent_path().string();
  for (std::size_t m : members)
    if (fs::path(runs[m].folder).parent_path().string() != parent || parent.empty())
      return runs[members[0]].folder + " and " + plural(static_cast<long long>(members.size() - 1), "other");
  return parent;
}

}  // namespace

std::vector<PlotRun> read_runs(const std::vector<std::string>& paths, const std::string& x_column,
                               const std::string& y_column) {
  std::vector<PlotRun> runs;
  for (const std::string& path : paths) {
    const fs::path given(path);
    if (fs::is_regular_file(given)) {
      runs.push_back(read_run(path, given, x_column, y_column));
    } else if (fs::is_regular_file(given / "agents.csv") && fs::is_directory(given / "agents")) {
      // A run of agents (docs/agents.md): each agent's folder is a run, so a grid point's seeds are a band.
      const std::vector<PlotRun> agents = read_runs({(given / "agents").string()}, x_column, y_column);
      runs.insert(runs.end(), agents.begin(), agents.end());
    } else if (fs::is_regular_file(given / "metrics.csv")) {
      runs.push_back(read_run(path, given / "metrics.csv", x_column, y_column));
    } else if (fs::is_directory(given)) {
      std::vector<std::string> names;
      for (const fs::directory_entry& entry : fs::directory_iterator(given))
        if (entry.is_directory() && fs::is_regular_file(entry.path() / "metrics.csv"))
          names.push_back(entry.path().filename().string());
      if (names.empty())
        throw InputError("surge plot: '" + path +
                         "' holds no metrics.csv and no run folders with one; give the --out folder of a surge "
                         "train run");
      std::sort(names.begin(), names.end(), natural_less);
      for (const std::string& name : names)
        runs.push_back(read_run((given / name).string(), given / name / "metrics.csv", x_column, y_column));
    } else {
      throw InputError("surge plot: '" + path +
                       "' does not exist; give the --out folder of a surge train run, or its metrics.csv");
    }
  }
  return runs;
}

std::vector<double> trailing_mean(const std::vector<double>& values, int window) {
  SURGE_CHECK(window >= 1, "a moving average needs a window of at least one row");
  std::vector<double> out(values.size(), NAN);
  for (std::size_t k = 0; k < values.size(); ++k) {
    if (!std::isfinite(values[k])) continue;
    double sum = 0;
    int count = 0;
    const std::size_t first = k + 1 >= static_cast<std::size_t>(window) ? k + 1 - window : 0;
    for (std::size_t j = first; j <= k; ++j)
      if (std::isfinite(values[j])) {
        sum += values[j];
        ++count;
      }
    out[k] = sum / count;
  }
  return out;
}

std::vector<PlotGroup> group_runs(const std::vector<PlotRun>& runs) {
  std::vector<std::vector<std::size_t>> members;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    auto same = std::find_if(members.begin(), members.end(), [&](const std::vector<std::size_t>& group) {
      return !runs[r].config.empty() && runs[group[0]].config == runs[r].config;
    });
    if (same == members.end())
      members.push_back({r});
    else
      same->push_back(r);
  }
  // The settings that differ between groups name them in the legend.
  std::vector<std::string> differing;
  if (members.size() > 1) {
    std::map<std::string, bool> keys;
    for (const auto& group : members)
      for (const auto& [key, value] : runs[group[0]].settings) keys[key] = true;
    for (const auto& entry : keys) {
      const std::string& key = entry.first;  // a plain reference: Clang 14 cannot capture a structured binding
      auto value_of = [&](const std::vector<std::size_t>& group) {
        const auto it = runs[group[0]].settings.find(key);
        return it == runs[group[0]].settings.end() ? std::string("(unset)") : it->second;
      };
      for (const auto& group : members)
        if (value_of(group) != value_of(members[0])) {
          differing.push_back(key);
          break;
        }
    }
  }

  std::vector<PlotGroup> groups;
  for (const auto& group : members) {
    const PlotRun& first = runs[group[0]];
    PlotGroup out;
    out.runs = static_cast<int>(group.size());
    std::string what;
    for (const std::string& key : differing) {
      const auto it = first.settings.find(key);
      what += (what.empty() ? "" : ", ") + key + " = " + (it == first.settings.end() ? "(unset)" : it->second);
    }
    out.label = origin(runs, group) + (what.empty() || what.size() > 60 ? "" : ": " + what);
    if (group.size() == 1) {
      out.label += first.seed.empty() ? "" : " (seed " + first.seed + ")";
      out.x = first.x;
      out.mean = first.y;
      groups.push_back(out);
      continue;
    }
    const bool seeds = std::all_of(group.begin(), group.end(), [&](std::size_t m) { return !runs[m].seed.empty(); });
    out.label += " (mean of " + plural(out.runs, seeds ? "seed" : "run") + ", band: min\u2013max)";
    double low = -INFINITY, high = INFINITY;
    for (std::size_t m : group) {
      const auto [from, to] = covered(runs[m]);
      low = std::max(low, from);
      high = std::min(high, to);
    }
    for (double x : first.x) {
      if (x < low || x > high) continue;
      double sum = 0, min_value = INFINITY, max_value = -INFINITY;
      for (std::size_t m : group) {
        const double y = value_at(runs[m], x);
        sum += y;
        min_value = std::min(min_value, y);
        max_value = std::max(max_value, y);
      }
      const bool missing = !std::isfinite(sum);
      out.x.push_back(x);
      out.mean.push_back(missing ? NAN : sum / out.runs);
      out.low.push_back(missing ? NAN : min_value);
      out.high.push_back(missing ? NAN : max_value);
    }
    if (out.x.empty())
      throw InputError("surge plot: the runs of " + origin(runs, group) +
                       " share no stretch of x where all have a value; plot them one by one");
    groups.push_back(out);
  }
  return groups;
}

}  // namespace surge::cli
