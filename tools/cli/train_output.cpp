#include "tools/cli/train_output.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "rl/io/tensorboard.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"
#include "tools/cli/io.hpp"

namespace surge::cli {
namespace {

constexpr std::size_t kEvalMean = 15, kEvalStd = 16;  // column indices

// A cell of metrics.csv: counts as whole numbers, values with nine significant digits, nothing for NaN.
std::string cell(std::size_t column, double value) {
  if (std::isnan(value)) return "";
  return column == 0 || column == 1 || column == 4 ? std::to_string(std::llround(value)) : format_precise(value);
}

}  // namespace

TrainOutput::TrainOutput(std::string dir, std::vector<std::vector<double>> rows,
                         const std::vector<std::string>& columns, std::string tensorboard_dir)
    : dir_(std::move(dir)), tensorboard_dir_(tensorboard_dir.empty() ? dir_ + "/tb" : std::move(tensorboard_dir)) {
  check_rows(rows, columns, "the checkpoint");
  for (auto& row : rows) row.resize(TrainOutput::columns().size(), NAN);
  rows_ = std::move(rows);
  wall_time_offset_s_ = rows_.empty() ? 0.0 : rows_.back()[2];
  require_writable(dir_ + "/metrics.csv", "metrics");
  write_metrics();
  open_tensorboard();
  for (const auto& row : rows_) to_tensorboard(row, false);
}

TrainOutput::~TrainOutput() {
  if (metrics_fd_ >= 0) ::close(metrics_fd_);
}

void TrainOutput::open_tensorboard() {
  std::error_code error;
  std::filesystem::remove_all(tensorboard_dir_, error);  // one event file per run
  try {
    tensorboard_ = std::make_unique<rl::TensorBoardWriter>(tensorboard_dir_);
  } catch (const std::exception& e) {
    std::cerr << "surge train: " << e.what() << "; no TensorBoard events, metrics.csv goes on\n";
  }
}

const std::vector<std::string>& TrainOutput::columns() {
  static const std::vector<std::string> names = {
      "iteration",      "global_step",          "wall_time_s",    "sps",
      "episodes",       "episodic_return_mean", "return_last100", "episodic_length_mean",
      "policy_loss",    "value_loss",           "entropy",        "approx_kl",
      "clipfrac",       "explained_variance",   "learning_rate",  "eval_return_mean",
      "eval_return_std"};
  return names;
}

const std::vector<std::string>& TrainOutput::tags() {
  static const std::vector<std::string> names = {"",
                                                 "",
                                                 "",
                                                 "charts/SPS",
                                                 "charts/episodes",
                                                 "charts/episodic_return",
                                                 "charts/return_last100",
                                                 "charts/episodic_length",
                                                 "losses/policy_loss",
                                                 "losses/value_loss",
                                                 "losses/entropy",
                                                 "losses/approx_kl",
                                                 "losses/clipfrac",
                                                 "losses/explained_variance",
                                                 "charts/learning_rate",
                                                 "eval/return_mean",
                                                 "eval/return_std"};
  return names;
}

void TrainOutput::write_config(const rl::TrainConfig& config, const ScenarioSpec& spec, Device device) {
  scenario_ = spec.name;
  device_ = device.str();
  const std::string header = "# surge train: " + spec.name + " (" + spec.gym_id + ") on " + device.str() + "\n";
  write_atomically(dir_ + "/config.toml", header + config.to_toml());
  if (!tensorboard_) return;
  rl::HParams hparams;
  std::istringstream lines(config.to_toml());
  std::string line, prefix;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.front() == '[') prefix = line.substr(1, line.find(']') - 1) + ".";
    const std::size_t equals = line.find(" = ");
    if (equals == std::string::npos) continue;
    const std::string name = prefix + line.substr(0, equals), value = line.substr(equals + 3);
    char* end = nullptr;
    const double number = std::strtod(value.c_str(), &end);
    if (value == "true" || value == "false")
      hparams.emplace_back(name, value == "true");
    else if (!value.empty() && *end == '\0')
      hparams.emplace_back(name, number);
    else
      hparams.emplace_back(name, value.front() == '"' ? value.substr(1, value.size() - 2) : value);
  }
  try {
    tensorboard_->add_text(0, "config", "```toml\n" + header + config.to_toml() + "```");
    tensorboard_->add_hparams(hparams);
  } catch (const std::exception& e) {
    // One write per message: agents' threads may report at once (tools/cli/train_agents_run.cpp).
    std::cerr << ("surge train: " + std::string(e.what()) + "; TensorBoard events stop here, metrics.csv goes on\n");
    tensorboard_.reset();
  }
}

void TrainOutput::to_tensorboard(const std::vector<double>& row, bool eval_only) {
  if (!tensorboard_) return;
  rl::ScalarValues scalars;
  for (std::size_t k = eval_only ? kEvalMean : 0; k < row.size(); ++k)
    if (!tags()[k].empty() && !std::isnan(row[k])) scalars.emplace_back(tags()[k], static_cast<float>(row[k]));
  if (scalars.empty()) return;
  try {
    tensorboard_->add_scalars(static_cast<std::int64_t>(row[1]), scalars);
  } catch (const std::exception& e) {
    // One write per message: agents' threads may report at once (tools/cli/train_agents_run.cpp).
    std::cerr << ("surge train: " + std::string(e.what()) + "; TensorBoard events stop here, metrics.csv goes on\n");
    tensorboard_.reset();
  }
}

void TrainOutput::check_rows(const std::vector<std::vector<double>>& rows, const std::vector<std::string>& columns,
                             const std::string& source) {
  const auto& today = TrainOutput::columns();
  bool prefix = columns.size() <= today.size() && columns.size() >= 3;
  for (std::size_t k = 0; prefix && k < columns.size(); ++k) prefix = columns[k] == today[k];
  if (!prefix)
    throw InputError("surge train: " + source +
                     " keeps metrics with other columns than surge train writes; it was written by another "
                     "version of surge train, or damaged");
  for (std::size_t r = 0; r < rows.size(); ++r)
    if (rows[r].size() != columns.size())
      throw InputError("surge train: " + source + " keeps a metrics row (" + std::to_string(r + 1) + ") of " +
                       std::to_string(rows[r].size()) + " values for " + std::to_string(columns.size()) +
                       " columns; the file is damaged");
}

void TrainOutput::add_row(const rl::IterationMetrics& m, double wall_time_s) {
  wall_time_s += wall_time_offset_s_;
  rows_.push_back({m.iteration, m.global_step, wall_time_s, wall_time_s > 0 ? m.global_step / wall_time_s : NAN,
                   m.episodes, m.episodic_return_mean, m.return_last100, m.episodic_length_mean, m.policy_loss,
                   m.value_loss, m.entropy, m.approx_kl, m.clipfrac, m.explained_variance, m.learning_rate, NAN, NAN});
  to_tensorboard(rows_.back(), false);
  append_rows();
}

void TrainOutput::set_eval(double mean, double std) {
  if (rows_.empty()) return;
  rows_.back()[kEvalMean] = mean;
  rows_.back()[kEvalStd] = std;
  to_tensorboard(rows_.back(), true);
}

double TrainOutput::best_eval() const {
  double best = NAN;
  for (const auto& row : rows_)
    if (!std::isnan(row[kEvalMean]) && !(row[kEvalMean] <= best)) best = row[kEvalMean];
  return best;
}

std::string TrainOutput::csv_rows(std::size_t first, std::size_t end) const {
  std::ostringstream text;
  for (std::size_t r = first; r < end; ++r) {
    for (std::size_t k = 0; k < rows_[r].size(); ++k) text << (k ? "," : "") << cell(k, rows_[r][k]);
    text << "\n";
  }
  return text.str();
}

bool TrainOutput::append_rows(bool include_latest) {
  // The latest row waits for its evaluation, unless the run is over.
  const std::size_t end = include_latest || rows_.empty() ? rows_.size() : rows_.size() - 1;
  if (rows_in_file_ >= end) return true;
  if (metrics_fd_ < 0) return false;
  const std::string text = csv_rows(rows_in_file_, end);
  const off_t size = ::lseek(metrics_fd_, 0, SEEK_END);
  const ssize_t written = ::write(metrics_fd_, text.data(), text.size());
  if (written == static_cast<ssize_t>(text.size())) {
    rows_in_file_ = end;
    append_failed_ = false;
    return true;
  }
  const int error = errno;
  if (size >= 0 && ::ftruncate(metrics_fd_, size) != 0) {
    // The file keeps a cut row; write_metrics() at the end writes it whole again.
  }
  if (!append_failed_)
    std::cerr << ("surge train: cannot add to " + dir_ + "/metrics.csv (" +
                  std::strerror(written < 0 ? error : ENOSPC) +
                  "); training goes on, and the missing rows are tried again with the next ones\n");
  append_failed_ = true;
  return false;
}

void TrainOutput::write_metrics() {
  AtomicFile file(dir_ + "/metrics.csv");
  const auto& names = columns();
  for (std::size_t k = 0; k < names.size(); ++k) file.stream() << (k ? "," : "") << names[k];
  file.stream() << "\n" << csv_rows(0, rows_.size());
  file.commit();
  if (metrics_fd_ >= 0) ::close(metrics_fd_);
  metrics_fd_ = ::open((dir_ + "/metrics.csv").c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  rows_in_file_ = rows_.size();
}

RunSummary TrainOutput::summary(double target, double target_time_s, double target_step) const {
  std::ostringstream line;
  const double steps = rows_.empty() ? 0.0 : rows_.back()[1];
  const double wall = rows_.empty() ? 0.0 : rows_.back()[2];
  const double last100 = rows_.empty() ? NAN : rows_.back()[6];
  line << "surge train: " << scenario_ << " on " << device_ << ": " << format_grouped(steps) << " steps in "
       << format_number("%.2f", wall) << " s (" << format_grouped(wall > 0 ? steps / wall : 0.0)
       << " SPS), return_last100 " << (std::isnan(last100) ? "— (no episode ended)" : format_significant(last100));
  const double best = best_eval();
  if (!std::isnan(best)) line << ", best eval " << format_significant(best);
  if (!std::isnan(target)) {
    if (std::isnan(target_time_s)) {
      line << "; target " << format_significant(target) << " not reached";
    } else {
      line << "; target " << format_significant(target) << " reached at " << format_number("%.2f", target_time_s)
           << " s (step " << format_grouped(target_step) << ")";
    }
  }
  return {line.str()};
}

namespace {
std::size_t terminal_width() {
  winsize size{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  if (const char* columns = std::getenv("COLUMNS"))
    if (const long value = std::atol(columns); value > 0) return static_cast<std::size_t>(value);
  return 80;
}

std::string value_or_dash(double value) {
  return std::isnan(value) ? "—" : format_precise(std::round(value * 10) / 10);
}

// Cuts `text` to `width` columns, counting a UTF-8 character (the dash) as one column.
std::string cut(const std::string& text, std::size_t width) {
  std::size_t columns = 0;
  for (std::size_t k = 0; k < text.size(); ++k) {
    if ((static_cast<unsigned char>(text[k]) & 0xC0) == 0x80) continue;  // continuation byte
    if (columns++ == width) return text.substr(0, k);
  }
  return text;
}
}  // namespace

ProgressPrinter::ProgressPrinter(bool tty, std::int64_t iterations)
    : tty_(tty), iterations_(iterations), width_(tty ? terminal_width() : 1000) {}

std::string ProgressPrinter::line(const rl::IterationMetrics& m, std::int64_t iterations, double wall_time_s,
                                  std::size_t width) {
  const double sps = wall_time_s > 0 ? m.global_step / wall_time_s : 0.0;
  const double remaining = (static_cast<double>(iterations) - m.iteration) * wall_time_s / m.iteration;
  const std::string text = "iter " + std::to_string(static_cast<long long>(m.iteration)) + "/" +
                           std::to_string(static_cast<long long>(iterations)) + "  steps " +
                           format_grouped(m.global_step) + "  SPS " + format_grouped(sps) + "  return " +
                           value_or_dash(m.episodic_return_mean) + "  last100 " + value_or_dash(m.return_last100) +
                           "  ETA " + format_duration(remaining);
  return cut(text, width);
}

void ProgressPrinter::update(const rl::IterationMetrics& m, double wall_time_s) {
  if (tty_) {
    // At most ten redraws a second; the last line is drawn by finish().
    last_line_ = line(m, iterations_, wall_time_s, width_ - 1);
    last_line_printed_ = wall_time_s - last_print_ >= 0.1;
    if (last_line_printed_) {
      std::cerr << "\r\033[K" << last_line_ << std::flush;
      last_print_ = wall_time_s;
    }
    return;
  }
  last_line_ = line(m, iterations_, wall_time_s, width_);
  last_line_printed_ = wall_time_s - last_print_ >= 2.0;
  if (last_line_printed_) {
    std::cerr << last_line_ << "\n";
    last_print_ = wall_time_s;
  }
}

void ProgressPrinter::finish() {
  if (tty_) {
    if (!last_line_.empty() && !last_line_printed_) std::cerr << "\r\033[K" << last_line_;
    if (!last_line_.empty()) std::cerr << "\n";
  } else if (!last_line_.empty() && !last_line_printed_) {
    std::cerr << last_line_ << "\n";
  }
}

}  // namespace surge::cli
