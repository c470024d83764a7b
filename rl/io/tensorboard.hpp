#pragma once
// TensorBoard scalar event files, written and read by us: TFRecord framing (length, masked CRC-32C
// of the length, data, masked CRC-32C of the data) around protobuf-encoded Event messages, each
// holding a Summary of scalar values. Only the fields TensorBoard needs for scalars are encoded:
//   Event         { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//   Summary       { repeated Value value = 1; }
//   Summary.Value { string tag = 1; float simple_value = 2; }
// and, for a run's config, a text summary (the text plugin's string tensor) and the hparams plugin's
// session_start_info, so TensorBoard's HPARAMS tab lists the run with its config.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace surge::rl {

using ScalarValues = std::vector<std::pair<std::string, float>>;  // (tag, value)
using HParams = std::vector<std::pair<std::string, std::variant<double, bool, std::string>>>;

// One decoded Event; fields a record did not carry keep their defaults.
struct TensorBoardEvent {
  double wall_time = 0.0;
  std::int64_t step = 0;
  std::string file_version;  // set in the first event of a file only
  ScalarValues scalars;
};

// Encoding, exposed for the tests and the reader.
std::string encode_tfrecord(std::string_view data);
std::string encode_file_version_event(double wall_time);  // the "brain.Event:2" header event
std::string encode_scalar_event(double wall_time, std::int64_t step, const ScalarValues& scalars);
std::string encode_text_event(double wall_time, std::int64_t step, const std::string& tag, const std::string& text);
std::string encode_hparams_event(double wall_time, const HParams& hparams);
// Scalars only (text and hparams values are skipped); throws surge::Error on malformed input.
TensorBoardEvent decode_event(std::string_view message);

// Every event in an event file, in order. Throws surge::Error naming the byte offset of a record
// whose framing or checksum is wrong, or that is cut short.
std::vector<TensorBoardEvent> read_tensorboard_events(const std::filesystem::path& file);

// Seconds since the Unix epoch, as TensorBoard's wall_time wants it.
double wall_clock_seconds();

// Appends scalar events to a new file `events.out.tfevents.<time>.<host>.<pid>` in a folder.
// Each add_scalars() call is one Event with one Summary, flushed to the operating system at once so
// that a killed run loses nothing it reported; a record cut short by a crash is ignored by readers.
class TensorBoardWriter {
 public:
  // Creates `folder` (and its parents) if needed. Throws InputError if the file cannot be created.
  explicit TensorBoardWriter(const std::filesystem::path& folder);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // Throws surge::Error if the write fails (a full disk, say).
  void add_scalars(std::int64_t step, const ScalarValues& scalars, double wall_time = wall_clock_seconds());
  // A text summary (Markdown), and the run's hyperparameters for the HPARAMS tab; same errors.
  void add_text(std::int64_t step, const std::string& tag, const std::string& text);
  void add_hparams(const HParams& hparams);
  void close();  // idempotent; the destructor calls it
  const std::filesystem::path& path() const { return path_; }

 private:
  void write_record(const std::string& data);
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
};

}  // namespace surge::rl
