#include "tools/cli/train_output.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "rl/io/tensorboard.hpp"
#include "rl/trainer.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"
#include "tools/cli/io.hpp"

namespace surge::cli {

TrainOutput::TrainOutput(std::string dir, const std::string& complaint) : dir_(std::move(dir)) {
  std::error_code error;
  std::filesystem::create_directories(dir_, error);
  if (error) throw InputError(complaint + ": " + error.message());
  require_writable(dir_ + "/metrics.csv", "metrics");
  tensorboard_ = std::make_unique<rl::TensorBoardWriter>(dir_ + "/tb");
  last_flush_ = std::chrono::steady_clock::now();
}

TrainOutput::~TrainOutput() = default;

void TrainOutput::restore_rows(std::vector<std::vector<double>> rows) {
  rows_ = std::move(rows);
  wall_time_offset_s_ = rows_.empty() ? 0.0 : rows_.back()[2];
}

const std::vector<std::string>& TrainOutput::columns() {
  static const std::vector<std::string> names = {
      "iteration",      "global_step",          "wall_time_s",  "sps",        "episodes", "episodic_return_mean",
      "return_last100", "episodic_length_mean", "policy_loss",  "value_loss", "entropy",  "approx_kl",
      "clipfrac",       "explained_variance",   "learning_rate"};
  return names;
}

void TrainOutput::write_config(const rl::TrainConfig& config, const ScenarioSpec& spec, Device device) {
  scenario_ = spec.name;
  device_ = device.str();
  AtomicFile file(dir_ + "/config.toml");
  file.stream() << "# surge train: " << spec.name << " (" << spec.gym_id << ") on " << device.str() << "\n"
                << config.to_toml();
  file.commit();
}

void TrainOutput::add_row(const rl::IterationMetrics& m, double wall_time_s) {
  wall_time_s += wall_time_offset_s_;
  rows_.push_back({m.iteration, m.global_step, wall_time_s, wall_time_s > 0 ? m.global_step / wall_time_s : NAN,
                   m.episodes, m.episodic_return_mean, m.return_last100, m.episodic_length_mean, m.policy_loss,
                   m.value_loss, m.entropy, m.approx_kl, m.clipfrac, m.explained_variance, m.learning_rate});
  if (!tensorboard_) return;
  rl::ScalarValues scalars;
  for (std::size_t k = 0; k < columns().size(); ++k)
    scalars.emplace_back(columns()[k], static_cast<float>(rows_.back()[k]));
  try {
    tensorboard_->add_scalars(static_cast<std::int64_t>(m.global_step), scalars);
  } catch (const std::exception& e) {
    std::cerr << "surge train: " << e.what() << "; TensorBoard events stop here, metrics.csv goes on\n";
    tensorboard_.reset();
  }
}

void TrainOutput::flush_every(double seconds) {
  const auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_flush_).count() < seconds) return;
  write_metrics();
}

void TrainOutput::write_metrics() {
  AtomicFile file(dir_ + "/metrics.csv");
  const auto& names = columns();
  for (std::size_t k = 0; k < names.size(); ++k) file.stream() << (k ? "," : "") << names[k];
  file.stream() << "\n";
  for (const auto& row : rows_) {
    for (std::size_t k = 0; k < row.size(); ++k)
      file.stream() << (k ? "," : "")
                    << (k == 0 || k == 1 || k == 4 ? std::to_string(std::llround(row[k])) : format_precise(row[k]));
    file.stream() << "\n";
  }
  file.commit();
  last_flush_ = std::chrono::steady_clock::now();
}

RunSummary TrainOutput::summary(double target, double target_time_s, double target_step) const {
  std::ostringstream line;
  const double steps = rows_.empty() ? 0.0 : rows_.back()[1];
  const double wall = rows_.empty() ? 0.0 : rows_.back()[2];
  const double last100 = rows_.empty() ? NAN : rows_.back()[6];
  line << "surge train: " << scenario_ << " on " << device_ << ": " << format_grouped(steps) << " steps in "
       << format_number("%.2f", wall) << " s (" << format_grouped(wall > 0 ? steps / wall : 0.0)
       << " SPS), return_last100 " << format_precise(last100);
  if (!std::isnan(target)) {
    if (std::isnan(target_time_s)) {
      line << "; target " << format_precise(target) << " not reached";
    } else {
      line << "; target " << format_precise(target) << " reached at " << format_number("%.2f", target_time_s)
           << " s (step " << format_grouped(target_step) << ")";
    }
  }
  return {line.str()};
}

void ProgressPrinter::update(const rl::IterationMetrics& m, double wall_time_s) {
  const double sps = wall_time_s > 0 ? m.global_step / wall_time_s : 0.0;
  const double remaining = (static_cast<double>(iterations_) - m.iteration) * wall_time_s / m.iteration;
  std::ostringstream line;
  char buffer[160];
  std::snprintf(buffer, sizeof buffer, "iter %lld/%lld  steps %s  SPS %s  return %s  last100 %s  ETA %s",
                static_cast<long long>(m.iteration), static_cast<long long>(iterations_),
                format_grouped(m.global_step).c_str(), format_grouped(sps).c_str(),
                format_precise(std::round(m.episodic_return_mean * 10) / 10).c_str(),
                format_precise(std::round(m.return_last100 * 10) / 10).c_str(), format_duration(remaining).c_str());
  last_line_ = buffer;
  if (tty_) {
    std::cerr << "\r" << last_line_ << "   " << std::flush;
    return;
  }
  last_line_printed_ = wall_time_s - last_print_ >= 2.0;
  if (last_line_printed_) {
    std::cerr << last_line_ << "\n";
    last_print_ = wall_time_s;
  }
}

void ProgressPrinter::finish() {
  if (tty_)
    std::cerr << "\n";
  else if (!last_line_.empty() && !last_line_printed_)
    std::cerr << last_line_ << "\n";
}

}  // namespace surge::cli
