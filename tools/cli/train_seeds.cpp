#include "tools/cli/train_seeds.hpp"

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <set>
#include <sstream>

#include "sim/error.hpp"
#include "sim/format.hpp"
#include "tools/cli/io.hpp"

namespace surge::cli {
namespace {

std::uint64_t seed_number(const std::string& part, const Command& cmd) {
  std::size_t used = 0;
  unsigned long long value = 0;
  try {
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos) throw std::invalid_argument("");
    value = std::stoull(part, &used);
  } catch (const std::exception&) {
    throw InputError(cmd.complaint("--seeds: '" + part + "' is not a seed (a whole number >= 0); e.g. --seeds 1-5"));
  }
  return value;
}

// Columns on a terminal: UTF-8 continuation bytes (of ± and —) take none.
std::size_t display_width(const std::string& text) {
  std::size_t columns = 0;
  for (unsigned char c : text) columns += (c & 0xC0) != 0x80;
  return columns;
}

std::string pad(std::string text, std::size_t width) {
  const std::size_t columns = display_width(text);
  if (columns < width) text.append(width - columns, ' ');
  return text;
}

}  // namespace

std::string mean_std(const std::vector<double>& values, std::size_t* count) {
  double sum = 0.0, squares = 0.0;
  std::size_t n = 0;
  for (double v : values)
    if (!std::isnan(v)) sum += v, ++n;
  if (count) *count = n;
  if (n == 0) return "—";
  const double mean = sum / n;
  for (double v : values)
    if (!std::isnan(v)) squares += (v - mean) * (v - mean);
  return format_significant(mean) + " ± " + format_significant(std::sqrt(squares / n));
}

std::vector<std::uint64_t> parse_seeds(const std::string& text, const Command& cmd) {
  std::vector<std::uint64_t> seeds;
  std::set<std::uint64_t> seen;
  std::istringstream parts(text);
  std::string part;
  while (std::getline(parts, part, ',')) {
    const std::size_t dash = part.find('-');
    std::uint64_t first = seed_number(part.substr(0, dash), cmd), last = first;
    if (dash != std::string::npos) last = seed_number(part.substr(dash + 1), cmd);
    if (last < first || last - first >= 1000)
      throw InputError(cmd.complaint("--seeds: '" + part + "' is not a range of at most 1000 seeds, low-high"));
    for (std::uint64_t s = first; s <= last; ++s) {
      if (!seen.insert(s).second)
        throw InputError(cmd.complaint("--seeds: seed " + std::to_string(s) + " is given twice"));
      seeds.push_back(s);
      if (seeds.size() > 1000) throw InputError(cmd.complaint("--seeds: at most 1000 seeds"));
    }
  }
  if (seeds.empty()) throw InputError(cmd.complaint("--seeds: give seeds such as 1-5 or 1,4,9"));
  return seeds;
}

std::string seed_dir(const std::string& parent, std::uint64_t seed) { return parent + "/seed" + std::to_string(seed); }

SeedResult summarize_run(const std::vector<std::vector<double>>& rows, double threshold, double target_time,
                         double target_step, const std::string& dir, std::uint64_t seed) {
  SeedResult result;
  result.seed = seed;
  result.dir = dir;
  result.threshold = threshold;
  result.return_last100 = rows.empty() ? NAN : rows.back()[6];
  result.threshold_time = target_time;
  result.threshold_step = target_step;
  // As --target-return decides: the mean of the last 100 episodes, once 100 have ended.
  double finished = 0.0;
  if (std::isnan(target_time))
    for (const auto& row : rows)
      if ((finished += row[4]) >= 100 && row[6] >= threshold) {
        result.threshold_step = row[1];
        result.threshold_time = row[2];
        break;
      }
  return result;
}

EvalResult final_evaluation(const rl::Trainer& trainer, const PhysicsConfig& physics, const rl::TrainConfig& config) {
  rl::TrainConfig settings = config;
  settings.eval_every = 1;
  settings.eval_episodes = 100;
  return TrainEvaluator(config.scenario, physics, settings).run(trainer, 0);
}

std::string aligned_table(const std::vector<std::vector<std::string>>& table) {
  std::vector<std::size_t> widths;
  for (const auto& row : table) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], display_width(row[c]));
  }
  std::string text;
  for (const auto& row : table) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) line += pad(row[c], widths[c] + 2);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    text += line + "\n";
  }
  return text;
}

void report_seeds(const std::vector<SeedResult>& results, const ScenarioSpec& spec, const std::string& parent) {
  const std::string threshold = format_significant(results.front().threshold);
  std::vector<std::vector<std::string>> table = {
      {"seed", "return_last100", "steps to " + threshold, "time to " + threshold, "greedy eval (100 episodes)"}};
  std::vector<double> finals, steps, times, evals;
  std::ostringstream csv;
  csv << "seed,dir,return_last100,threshold,threshold_step,threshold_time_s,greedy_eval_mean,greedy_eval_std\n";
  for (const SeedResult& r : results) {
    const bool reached = !std::isnan(r.threshold_step);
    table.push_back({std::to_string(r.seed), format_significant(r.return_last100),
                     reached ? format_grouped(r.threshold_step) : "not reached",
                     reached ? format_number("%.2f", r.threshold_time) + " s" : "—",
                     format_significant(r.greedy.mean) + " ± " + format_significant(r.greedy.std)});
    finals.push_back(r.return_last100);
    steps.push_back(r.threshold_step);
    times.push_back(r.threshold_time);
    evals.push_back(r.greedy.mean);
    auto value = [](double v) { return std::isnan(v) ? std::string() : format_precise(v); };
    csv << r.seed << "," << r.dir << "," << value(r.return_last100) << "," << value(r.threshold) << ","
        << value(r.threshold_step) << "," << value(r.threshold_time) << "," << value(r.greedy.mean) << ","
        << value(r.greedy.std) << "\n";
  }
  std::size_t reached = 0;
  const std::string steps_text = mean_std(steps, &reached);
  table.push_back({"mean ± std", mean_std(finals),
                   steps_text + " (" + std::to_string(reached) + "/" + std::to_string(results.size()) + " reached)",
                   mean_std(times), mean_std(evals)});
  std::cout << "surge train: " << plural(static_cast<long long>(results.size()), "seed") << " of " << spec.name
            << " (threshold " << threshold << "), in " << parent << "\n"
            << aligned_table(table);
  write_atomically(parent + "/seeds.csv", csv.str());
}

}  // namespace surge::cli
