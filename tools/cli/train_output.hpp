#pragma once
// What `surge train` leaves behind and shows while it runs: metrics.csv (and the same values as
// TensorBoard scalars in DIR/tb, grouped as charts/, losses/ and eval/), config.toml (also in
// TensorBoard, as text and as hyperparameters), the progress line and the closing summary.
#include <memory>
#include <string>
#include <vector>

#include "rl/train_config.hpp"
#include "rl/train_state.hpp"
#include "sim/device.hpp"
#include "sim/engine.hpp"

namespace surge::rl {
class TensorBoardWriter;
}  // namespace surge::rl

namespace surge::cli {

struct RunSummary {
  std::string line;
};

class TrainOutput {
 public:
  // Writes into the existing folder `dir`: metrics.csv at once (its header and the rows of the run a
  // resumed one continues, so an interrupted run always leaves one) and DIR/tb, written anew (one
  // event file per run, the restored rows first). Restored rows were written with `columns`. The events
  // go to `tensorboard_dir` instead where one is given (an agent of several: RUN/tb/agent_<k>).
  explicit TrainOutput(std::string dir, std::vector<std::vector<double>> rows = {},
                       const std::vector<std::string>& columns = TrainOutput::columns(),
                       std::string tensorboard_dir = "");
  // Throws InputError unless `columns` are today's or an older release's (a prefix of them) and every
  // row has one value per column; `source` names the file for the message.
  static void check_rows(const std::vector<std::vector<double>>& rows, const std::vector<std::string>& columns,
                         const std::string& source);
  ~TrainOutput();

  // The columns of metrics.csv, in order. A value that does not exist (the mean return of an
  // iteration in which no episode ended, an evaluation that did not run) is an empty cell in
  // metrics.csv and no point in TensorBoard; in memory it is NaN.
  static const std::vector<std::string>& columns();
  // The TensorBoard tag of each column ("" for the ones that are not scalars: iteration, steps, time).
  static const std::vector<std::string>& tags();

  void write_config(const rl::TrainConfig& config, const ScenarioSpec& spec, Device device);
  // Adds a row to metrics.csv and its values to DIR/tb at step global_step.
  void add_row(const rl::IterationMetrics& metrics, double wall_time_s);
  // The evaluation after the latest row's iteration: into that row and TensorBoard's eval/.
  void set_eval(double mean, double std);
  // The best eval_return_mean so far (NaN before the first evaluation).
  double best_eval() const;
  // The rows so far (a checkpoint keeps them); a resumed run's wall times go on from those it restored.
  const std::vector<std::vector<double>>& rows() const { return rows_; }
  // metrics.csv grows by whole rows: each row is appended with one write() once the next row exists (the
  // latest may still get its evaluation), so a killed run leaves whole rows, at most the latest two
  // missing. A failed append (a full disk) is cut back to the last whole row, reported once, and retried
  // with the rows still missing when the next one comes.
  // With `include_latest` (at the end of a run) the latest row too. Returns whether the file holds them.
  bool append_rows(bool include_latest = false);
  // Writes metrics.csv whole, every row included (atomically: the old file stays until the new one is
  // complete); throws what the write throws.
  void write_metrics();

  RunSummary summary(double target, double target_time_s, double target_step) const;
  const std::string& dir() const { return dir_; }

 private:
  void to_tensorboard(const std::vector<double>& row, bool eval_only);
  std::string csv_rows(std::size_t first, std::size_t end) const;
  void open_tensorboard();
  std::string dir_, tensorboard_dir_;
  std::string scenario_, device_;
  std::vector<std::vector<double>> rows_;
  double wall_time_offset_s_ = 0.0;  // wall time of the run a resumed one continues
  std::unique_ptr<rl::TensorBoardWriter> tensorboard_;
  int metrics_fd_ = -1;           // metrics.csv, open for appending
  std::size_t rows_in_file_ = 0;  // rows metrics.csv holds
  bool append_failed_ = false;
};

// The live line on a terminal (rewritten in place, at most ten times a second, cut to the terminal's
// width), or plain lines at most every few seconds otherwise.
class ProgressPrinter {
 public:
  ProgressPrinter(bool tty, std::int64_t iterations);
  void update(const rl::IterationMetrics& metrics, double wall_time_s);
  void finish();
  // The line for one iteration, cut to `width` columns: "—" where no episode has ended.
  static std::string line(const rl::IterationMetrics& metrics, std::int64_t iterations, double wall_time_s,
                          std::size_t width);

 private:
  bool tty_;
  std::int64_t iterations_;
  std::size_t width_;
  double last_print_ = -1e300;
  std::string last_line_;
  bool last_line_printed_ = false;
};

}  // namespace surge::cli
