#pragma once
// The HDF5 rollout log: every K-th iteration, the rollout of M environments (a fixed range of env
// ids) is appended to chunked, compressed (shuffle + deflate), extendable datasets. The schema is
// in docs/hdf5-schema.md.
//
// It never holds training up. The fields are described once (name, type, shape, device pointer);
// at begin_iteration()/end_iteration() their slices are copied on a separate copy stream into
// staging buffers (page-locked on a GPU; a plain copy on the CPU backend), and a writer thread
// writes them. When every staging slot is still waiting for the writer, the iteration is dropped
// whole and counted rather than stalling or growing. The file is written in HDF5's SWMR mode and
// flushed after every iteration, so it stays readable whatever moment the process dies at.
// The log stops with one clear message, and never throws into the training loop, when the disk is
// about to fill (the file is then closed cleanly and reads back whole) or when HDF5 fails.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "sim/device.hpp"
#include "sim/stream.hpp"

namespace surge::rl {

enum class LogDtype : std::uint8_t { Float32, Float64, Int32, Int64, UInt8 };
std::size_t log_dtype_size(LogDtype dtype);
const char* log_dtype_name(LogDtype dtype);  // "float32", ...

// When a field is copied: before the rollout writes anything (accumulators of the running episodes,
// say) or after the iteration's rollout and its advantages are complete.
enum class LogCapture : std::uint8_t { AtBegin, AtEnd };

// One field of the rollout, as it lies in device memory:
//   per-step fields (steps > 0):  [steps][num_envs](item_shape), logged as [iteration][steps][M](item_shape)
//   per-env fields  (steps == 0): [num_envs](item_shape),        logged as [iteration][M](item_shape)
// where num_envs is RolloutLogOptions::num_envs. Buffers with a longer time axis (obs [T+1][N][...])
// are described with steps = T: only the first T rows are logged.
struct LogField {
  std::string name;  // the dataset's name
  LogDtype dtype = LogDtype::Float32;
  std::int64_t steps = 0;                // T, or 0 for a per-env field
  std::vector<std::int64_t> item_shape;  // {} for one value per env and step, {obs_dim}, {action_dim}
  const void* data = nullptr;            // on RolloutLogOptions::device
  LogCapture capture = LogCapture::AtEnd;
  std::string description;  // stored with the dataset
  // The buffer's env axis holds only the logged envs ([steps][M](item) or [M](item)) rather than all
  // num_envs of them: a copy kept for the log alone (the trainer's raw observations).
  bool only_logged_envs = false;
  // The chunk's extent along the step and env axes (0: every step, and as many envs as fit in 1 MiB).
  // Frames are chunked a few at a time, so that reading one stack decompresses little.
  std::int64_t chunk_steps = 0, chunk_envs = 0;
};

// A file attribute: text, an integer, or an array of numbers or text.
struct LogAttribute {
  std::string name;
  std::variant<std::string, std::int64_t, std::vector<std::int64_t>, std::vector<float>, std::vector<std::string>>
      value;
};

struct RolloutLogOptions {
  std::string path;                  // the .h5 file; created (replacing any file there) unless resuming
  Device device = Device::cpu();     // where the fields live
  std::int64_t num_envs = 0;         // N: the env axis of the device buffers
  std::int64_t first_env = 0;        // the logged envs are first_env .. first_env + log_envs - 1
  std::int64_t env_id_base = 0;      // added to first_env.. in env_id: a data-parallel rank's first global env
  std::int64_t log_envs = 0;         // M
  std::int64_t every = 1;            // log the iterations with (iteration - first_iteration) % every == 0
  std::int64_t first_iteration = 0;  // the number of a run's first iteration, where every env starts afresh
  int queue_depth = 4;               // iterations staged in host memory at most (one is being written)
  int deflate_level = 1;             // 0 (none, shuffle only) .. 9; 1 packs float rollouts about as
                                     // small as 4 at twice the speed
  // The file is flushed (the iterations appended since the last flush written out, then the
  // `iteration` index extended over them) at most this often, and on close. 0: after every
  // iteration, so that the file holds every iteration written whatever moment the process dies at;
  // each chunk holds one iteration, so a flush rewrites nothing.
  double flush_seconds = 0.0;
  // The log stops, cleanly closing the file, when less room than this is left to it (free disk
  // space, or the process's file-size limit): a write that fails for want of space can leave an
  // HDF5 file unreadable. -1: four uncompressed iterations plus 1 MiB per dataset plus 1 MiB.
  std::int64_t reserve_bytes = -1;
  std::vector<LogAttribute> attributes;
  // Resuming a run at this iteration: an existing log at `path` is opened and cut back to the
  // iterations before it (a run killed after its last checkpoint may have logged some beyond). -1: a new file.
  std::int64_t resume_iteration = -1;
  // Called once, on the writer thread, with the message when the log stops on an error; by
  // default the message goes to stderr.
  std::function<void(const std::string&)> on_error;
  // Called on the writer thread before each iteration is written (tests hold the writer with it).
  std::function<void(std::int64_t iteration)> before_write;
};

struct RolloutLogStats {
  std::int64_t written = 0;       // iterations on disk
  std::int64_t dropped = 0;       // iterations dropped because the writer had fallen behind
  bool failed = false;            // the log stopped on an error
  std::string error;              // why, when failed
  std::size_t staging_bytes = 0;  // host memory held for staging
};

inline constexpr std::int64_t kRolloutLogSchemaVersion = 1;

// Pixel observations in a rollout log (docs/hdf5-schema.md, "Pixel observations"), from a frame store
// laid out as scenarios/pixel_obs.hpp keeps it: `frames` [T + stack][N][height][width][channels] uint8,
// whose slot s holds observation row s - (stack - 1), and `first` [T + stack][N], 1 where a frame is the
// first of its episode. Logs slots 0 .. T + stack - 2 (the stack - 1 carried over from the previous
// iteration, then rows 0 .. T - 1) as the per-step fields "frames" and "frame_first", chunked
// kFramesPerChunk frames of one env at a time and compressed; an observation's stack is rebuilt from
// them by the rule the schema gives. Add pixel_log_attributes(stack) to the options' attributes.
inline constexpr std::int64_t kFramesPerChunk = 4;
std::vector<LogField> pixel_log_fields(const std::uint8_t* frames, const std::uint8_t* first, std::int64_t steps,
                                       int stack, int height, int width, int channels);
std::vector<LogAttribute> pixel_log_attributes(int stack, int height, int width, int channels);

class RolloutLog {
 public:
  // Creates (or, when resuming, reopens) the file and writes its attributes; throws InputError for
  // bad options, a file that cannot be created, or a build without HDF5, naming the path.
  RolloutLog(RolloutLogOptions options, std::vector<LogField> fields);
  ~RolloutLog();  // close()
  RolloutLog(const RolloutLog&) = delete;
  RolloutLog& operator=(const RolloutLog&) = delete;

  bool wants(std::int64_t iteration) const;  // due by `every`, and the log is still open

  // At the top of an iteration, before the rollout writes to the fields. Returns whether this
  // iteration is being logged (false when not wanted, dropped, or the log has stopped). The copies
  // are ordered after the work on `stream`, and later work on `stream` waits for them on the device.
  bool begin_iteration(std::int64_t iteration, const Stream& stream);
  // After the rollout and its advantages and returns; `global_step` is the trainer's count of
  // environment steps at the end of the iteration. Does nothing if begin_iteration returned false.
  void end_iteration(std::int64_t global_step, const Stream& stream);

  // Writes what is queued, records the counts, flushes and closes the file. Idempotent; never throws.
  void close() noexcept;

  RolloutLogStats stats() const;
  const std::string& path() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace surge::rl
