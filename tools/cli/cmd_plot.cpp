// surge plot: the learning curve of a training run, as SVG, from its metrics.csv.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "sim/error.hpp"
#include "sim/format.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/io.hpp"

namespace surge::cli {
namespace {

struct Series {
  std::vector<double> x, y;
};

// A "nice" step for about `count` ticks over `span`: 1, 2 or 5 times a power of ten.
double tick_step(double span, int count) {
  const double raw = span / count;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * magnitude >= raw) return m * magnitude;
  return 10.0 * magnitude;
}

// One panel on linear axes at (left, top) of size (width, height): the series as lines.
void panel(std::ostringstream& svg, double left, double top, double width, double height, const std::string& x_label,
           const std::vector<std::pair<std::string, Series>>& lines, const std::vector<std::string>& colours) {
  double x_min = 0, x_max = 0, y_min = 0, y_max = 0;
  bool first = true;
  for (const auto& [name, series] : lines)
    for (std::size_t k = 0; k < series.x.size(); ++k) {
      if (first) {
        x_min = x_max = series.x[k];
        y_min = y_max = series.y[k];
        first = false;
      }
      x_min = std::min(x_min, series.x[k]);
      x_max = std::max(x_max, series.x[k]);
      y_min = std::min(y_min, series.y[k]);
      y_max = std::max(y_max, series.y[k]);
    }
  x_min = std::min(x_min, 0.0);
  if (x_max <= x_min) x_max = x_min + 1;
  if (y_max <= y_min) {
    y_max += 1;
    y_min -= 1;
  }
  const double y_step = tick_step(y_max - y_min, 5), x_step = tick_step(x_max - x_min, 5);
  y_min = std::floor(y_min / y_step) * y_step;
  y_max = std::ceil(y_max / y_step) * y_step;
  auto px = [&](double x) { return left + (x - x_min) / (x_max - x_min) * width; };
  auto py = [&](double y) { return top + height - (y - y_min) / (y_max - y_min) * height; };
  svg << "<rect x='" << left << "' y='" << top << "' width='" << width << "' height='" << height
      << "' fill='none' stroke='#444'/>\n";
  for (double y = y_min; y <= y_max + 1e-9 * y_step; y += y_step) {
    svg << "<line x1='" << left << "' x2='" << left + width << "' y1='" << py(y) << "' y2='" << py(y)
        << "' stroke='#ddd'/>\n<text x='" << left - 6 << "' y='" << py(y) + 4 << "' font-size='11' text-anchor='end'>"
        << format_compact(y) << "</text>\n";
  }
  for (double x = x_min; x <= x_max + 1e-9 * x_step; x += x_step)
    svg << "<text x='" << px(x) << "' y='" << top + height + 16 << "' font-size='11' text-anchor='middle'>"
        << format_compact(x) << "</text>\n";
  svg << "<text x='" << left + width / 2 << "' y='" << top + height + 34 << "' font-size='12' text-anchor='middle'>"
      << x_label << "</text>\n";
  for (std::size_t s = 0; s < lines.size(); ++s) {
    const Series& series = lines[s].second;
    svg << "<polyline fill='none' stroke='" << colours[s % colours.size()] << "' stroke-width='1.5' points='";
    for (std::size_t k = 0; k < series.x.size(); ++k)
      svg << (k ? " " : "") << px(series.x[k]) << "," << py(series.y[k]);
    svg << "'/>\n";
    svg << "<text x='" << left + 8 << "' y='" << top + 16 + 14 * s << "' font-size='11' fill='"
        << colours[s % colours.size()] << "'>" << lines[s].first << "</text>\n";
  }
}

}  // namespace

int run_plot(const Args& args) {
  Command cmd("plot",
              "Draws the learning curve of a training run: the mean return against environment steps and\n"
              "against wall time, from DIR/metrics.csv, into DIR/learning_curve.svg.");
  cmd.option("out", "FILE.svg", "where to write the figure [default: DIR/learning_curve.svg]")
      .note("Usage: surge plot DIR [--out FILE.svg]")
      .example("surge train --scenario cartpole --out runs/cartpole && surge plot runs/cartpole");
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << cmd.usage();
    return 0;
  }
  if (args.empty() || args[0].rfind("--", 0) == 0)
    throw InputError(cmd.complaint("name the run folder: surge plot DIR"));
  const std::string dir = args[0];
  if (!cmd.parse_or_print_usage(Args(args.begin() + 1, args.end()))) return 0;
  const std::string csv_path = (std::filesystem::path(dir) / "metrics.csv").string();
  if (!std::filesystem::is_directory(dir))
    throw InputError("surge plot: '" + dir + "' is not a folder; give the --out folder of a surge train run");
  if (!std::filesystem::exists(csv_path))
    throw InputError("surge plot: '" + csv_path + "' does not exist; run surge train --out " + dir + " first");
  const std::string out_path =
      cmd.has("out") ? cmd.get("out") : (std::filesystem::path(dir) / "learning_curve.svg").string();
  require_writable(out_path, "figure");
  const CsvTable table = CsvTable::read(csv_path);
  const int step_col = table.column("global_step"), time_col = table.column("wall_time_s");
  const int last100_col = table.column("return_last100"), mean_col = table.column("episodic_return_mean");
  const int episodes_col = table.column("episodes");
  if (step_col < 0 || time_col < 0 || last100_col < 0 || mean_col < 0 || episodes_col < 0)
    throw InputError("surge plot: '" + csv_path +
                     "' lacks the columns global_step, wall_time_s, episodes, episodic_return_mean, return_last100");
  Series last100_steps, mean_steps, last100_time, mean_time;
  for (std::size_t row = 0; row < table.rows.size(); ++row) {
    if (parse_cell(table, row, episodes_col) <= 0) continue;  // no episode finished yet: no return to draw
    const double step = parse_cell(table, row, step_col), time = parse_cell(table, row, time_col);
    const double last100 = parse_cell(table, row, last100_col), mean = parse_cell(table, row, mean_col);
    last100_steps.x.push_back(step);
    last100_steps.y.push_back(last100);
    mean_steps.x.push_back(step);
    mean_steps.y.push_back(mean);
    last100_time.x.push_back(time);
    last100_time.y.push_back(last100);
    mean_time.x.push_back(time);
    mean_time.y.push_back(mean);
  }
  if (last100_steps.x.empty())
    throw InputError("surge plot: '" + csv_path + "' has no iteration with a finished episode yet");

  const std::vector<std::string> colours = {"#9ecae1", "#1f77b4"};
  std::ostringstream svg;
  svg << "<?xml version='1.0' encoding='UTF-8'?>\n"
      << "<svg xmlns='http://www.w3.org/2000/svg' width='1000' height='420' viewBox='0 0 1000 420' "
         "font-family='sans-serif'>\n"
      << "<rect width='1000' height='420' fill='white'/>\n"
      << "<text x='500' y='24' font-size='15' text-anchor='middle'>Learning curve: " << dir << "</text>\n"
      << "<text x='20' y='210' font-size='12' transform='rotate(-90 20 210)' text-anchor='middle'>episodic "
         "return</text>\n";
  panel(svg, 80, 50, 380, 300, "environment steps",
        {{"mean return of the iteration", mean_steps}, {"mean of the last 100 episodes", last100_steps}}, colours);
  panel(svg, 580, 50, 380, 300, "wall time (s)",
        {{"mean return of the iteration", mean_time}, {"mean of the last 100 episodes", last100_time}}, colours);
  svg << "</svg>\n";
  write_atomically(out_path, svg.str());
  std::cerr << "surge plot: " << last100_steps.x.size() << " iterations -> " << out_path << "\n";
  return 0;
}

}  // namespace surge::cli
