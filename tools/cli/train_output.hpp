#pragma once
// What `surge train` leaves behind and shows while it runs: metrics.csv (and the same columns as
// TensorBoard scalars in DIR/tb), config.toml, the progress line and the closing summary.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "rl/train_config.hpp"
#include "rl/train_state.hpp"
#include "sim/device.hpp"
#include "sim/engine.hpp"

namespace surge::rl {
class Trainer;
class TensorBoardWriter;
}  // namespace surge::rl

namespace surge::cli {

struct RunSummary {
  std::string line;
};

class TrainOutput {
 public:
  // Creates `dir` if needed; throws InputError starting with `complaint` if it cannot be written.
  TrainOutput(std::string dir, const std::string& complaint);
  ~TrainOutput();

  // The columns of metrics.csv, in order.
  static const std::vector<std::string>& columns();

  void write_config(const rl::TrainConfig& config, const ScenarioSpec& spec, Device device);
  // Adds a row to metrics.csv and its values, tagged by column, to DIR/tb at step global_step.
  void add_row(const rl::IterationMetrics& metrics, double wall_time_s);
  // The rows so far (a checkpoint keeps them); a resumed run starts from the rows of the run it
  // continues, and its wall times go on from theirs.
  const std::vector<std::vector<double>>& rows() const { return rows_; }
  void restore_rows(std::vector<std::vector<double>> rows);
  // Rewrites metrics.csv (whole, atomically) if `seconds` passed since it was last written.
  void flush_every(double seconds);
  void write_metrics();

  RunSummary summary(double target, double target_time_s, double target_step) const;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::string scenario_, device_;
  std::vector<std::vector<double>> rows_;
  double wall_time_offset_s_ = 0.0;  // wall time of the run a resumed one continues
  std::unique_ptr<rl::TensorBoardWriter> tensorboard_;
  std::chrono::steady_clock::time_point last_flush_;
};

// The live line on a terminal (rewritten in place), or plain lines at most every few seconds otherwise.
class ProgressPrinter {
 public:
  ProgressPrinter(bool tty, std::int64_t iterations) : tty_(tty), iterations_(iterations) {}
  void update(const rl::IterationMetrics& metrics, double wall_time_s);
  void finish();

 private:
  bool tty_;
  std::int64_t iterations_;
  double last_print_ = -1e300;
  std::string last_line_;
  bool last_line_printed_ = false;
};

}  // namespace surge::cli
