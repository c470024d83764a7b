// The rollout log's staging and writer thread; the file it writes is laid out by rollout_log_file.cpp.
#include "rl/io/rollout_log.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <iostream>
#include <mutex>
#include <thread>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "rl/io/rollout_log_file.hpp"
#include "rl/io/rollout_schema.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"
#include "sim/transfer.hpp"

namespace surge::rl {

std::size_t log_dtype_size(LogDtype dtype) {
  switch (dtype) {
    case LogDtype::Float32: return 4;
    case LogDtype::Float64: return 8;
    case LogDtype::Int32: return 4;
    case LogDtype::Int64: return 8;
    case LogDtype::UInt8: return 1;
  }
  return 0;
}

const char* log_dtype_name(LogDtype dtype) {
  switch (dtype) {
    case LogDtype::Float32: return "float32";
    case LogDtype::Float64: return "float64";
    case LogDtype::Int32: return "int32";
    case LogDtype::Int64: return "int64";
    case LogDtype::UInt8: return "uint8";
  }
  return "?";
}

namespace {

std::int64_t item_count(const LogField& field) {
  std::int64_t count = 1;
  for (std::int64_t d : field.item_shape) count *= d;
  return count;
}

}  // namespace

// ---- state shared by the training thread and the writer thread -------------------------------

struct Slot {
  std::vector<StagingBuffer> buffers;  // per field: [steps][M](item) or [M](item)
  Event begin_copied, end_copied;
  std::int64_t iteration = 0, global_step = 0;
};

struct RolloutLog::State {
  RolloutLogOptions options;
  std::vector<LogField> fields;
  std::vector<std::size_t> env_bytes;  // per field: bytes of one env's item
  Stream copy_stream;
  Event compute_mark;  // the point on the compute stream the copies wait for
  std::vector<Slot> slots;
  int filling = -1;  // the slot being filled between begin_iteration and end_iteration
  std::size_t staging_bytes = 0;

  // Touched by the constructor, then only by the writer thread, then by close().
  std::unique_ptr<RolloutLogFile> file;
  std::int64_t reserve_bytes = 0;
  std::chrono::steady_clock::time_point last_flush = std::chrono::steady_clock::now();

  mutable std::mutex mutex;
  std::condition_variable wake;
  std::deque<int> queue;  // slots waiting for the writer, oldest first
  std::vector<int> free_slots;
  bool stopping = false;
  std::atomic<bool> closed{false};
  std::atomic<bool> failed{false};
  std::string error;
  std::int64_t written = 0, dropped = 0;
  std::thread writer;

  void write_slot(const Slot& slot);
  void writer_loop();
  void write_or_stop(const Slot& slot);
  void fail(const std::string& message);
  std::int64_t room_left() const;
  void finish_file();
};

namespace {

void validate(const RolloutLogOptions& o, const std::vector<LogField>& fields) {
  const std::string where = "rollout log '" + o.path + "'";
  if (o.path.empty()) throw InputError("the rollout log needs a file name (--log-rollouts FILE.h5)");
  if (o.log_envs < 1 || o.first_env < 0 || o.first_env + o.log_envs > o.num_envs)
    throw InputError(where + ": cannot log " + std::to_string(o.log_envs) + " environments starting at env " +
                     std::to_string(o.first_env) + " of " + std::to_string(o.num_envs) + "; use --log-envs 1.." +
                     std::to_string(o.num_envs));
  if (o.every < 1) throw InputError(where + ": --log-every must be at least 1");
  if (o.queue_depth < 1 || o.queue_depth > 64) throw InputError(where + ": the queue depth must be 1..64");
  if (o.deflate_level < 0 || o.deflate_level > 9) throw InputError(where + ": the deflate level must be 0..9");
  SURGE_CHECK(!fields.empty(), "a rollout log needs fields");
  std::vector<std::string> names;
  for (const LogField& field : fields) {
    SURGE_CHECK(!field.name.empty() && field.data, "log field '" + field.name + "' has no name or no data");
    SURGE_CHECK(field.steps >= 0, "log field '" + field.name + "' has negative steps");
    for (std::int64_t d : field.item_shape) SURGE_CHECK(d >= 1, "log field '" + field.name + "' has an empty axis");
    SURGE_CHECK(field.name != kIterationDataset && field.name != kGlobalStepDataset && field.name != kEnvIdDataset,
                "log field '" + field.name + "' takes a reserved name");
    SURGE_CHECK(std::find(names.begin(), names.end(), field.name) == names.end(),
                "log field '" + field.name + "' twice");
    names.push_back(field.name);
  }
}

}  // namespace

// Bytes the file may still grow by: the free space of its file system for unprivileged users, and
// what the process's file-size limit leaves.
std::int64_t RolloutLog::State::room_left() const {
  std::int64_t room = INT64_MAX;
  struct statvfs volume {};
  if (::statvfs(options.path.c_str(), &volume) == 0)
    room = static_cast<std::int64_t>(volume.f_bavail) * static_cast<std::int64_t>(volume.f_frsize);
  struct rlimit limit {};
  struct stat status {};
  if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      ::stat(options.path.c_str(), &status) == 0)
    room = std::min(room, static_cast<std::int64_t>(limit.rlim_cur) - static_cast<std::int64_t>(status.st_size));
  return room;
}

void RolloutLog::State::write_slot(const Slot& slot) {
  std::vector<const void*> values;
  for (const StagingBuffer& buffer : slot.buffers) values.push_back(buffer.data());
  file->append(values, slot.iteration, slot.global_step);
  const auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_flush).count() >= options.flush_seconds) {
    file->flush();
    last_flush = now;
  }
}

void RolloutLog::State::fail(const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (failed) return;
    error = message;
    failed = true;
  }
  if (options.on_error) {
    options.on_error(message);
  } else {
    std::fprintf(stderr, "surge: %s\n", message.c_str());
  }
  // Let go of the file now: a full disk should not also keep the file open until training ends.
  file->release();
}

void RolloutLog::State::writer_loop() {
  for (;;) {
    int index = -1;
    {
      std::unique_lock<std::mutex> lock(mutex);
      wake.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty()) return;  // stopping, and everything queued is written
      index = queue.front();
      queue.pop_front();
    }
    const Slot& slot = slots[static_cast<std::size_t>(index)];
    if (!failed) write_or_stop(slot);
    std::lock_guard<std::mutex> lock(mutex);
    free_slots.push_back(index);
  }
}

void RolloutLog::State::write_or_stop(const Slot& slot) {
  const std::string stopped =
      "rollout log '" + options.path + "' stopped at iteration " + std::to_string(slot.iteration);
  try {
    slot.end_copied.synchronize();  // the copies into the staging buffers are done
    if (options.before_write) options.before_write(slot.iteration);
    if (const std::int64_t room = room_left(); room < reserve_bytes) {
      // Close while there is still room for HDF5 to finish the file; a write that fails for want
      // of space could leave it unreadable.
      finish_file();
      fail(stopped + ": only " + format_bytes(static_cast<std::size_t>(std::max<std::int64_t>(room, 0))) +
           " of disk left for it (" + format_bytes(static_cast<std::size_t>(reserve_bytes)) +
           " kept in reserve); the file is closed, whole, with " + std::to_string(written) +
           " iterations; training goes on without it");
      return;
    }
    write_slot(slot);
    std::lock_guard<std::mutex> lock(mutex);
    ++written;
  } catch (const std::exception& e) {
    fail(stopped + ": " + e.what() + "; training goes on without it (" + std::to_string(written) +
         " iterations were logged before the error)");
  }
}

void RolloutLog::State::finish_file() { file->finish(dropped); }

// ---- the training thread's side ---------------------------------------------------------------

RolloutLog::RolloutLog(RolloutLogOptions options, std::vector<LogField> fields) : state_(std::make_unique<State>()) {
  validate(options, fields);
  State& s = *state_;
  s.options = std::move(options);
  s.fields = std::move(fields);
  s.copy_stream = Stream(s.options.device);
  s.compute_mark = Event(s.options.device);

  std::size_t slot_bytes = 0;
  for (const LogField& field : s.fields) {
    s.env_bytes.push_back(static_cast<std::size_t>(item_count(field)) * log_dtype_size(field.dtype));
    slot_bytes +=
        s.env_bytes.back() * static_cast<std::size_t>(s.options.log_envs * std::max<std::int64_t>(field.steps, 1));
  }
  s.staging_bytes = slot_bytes * static_cast<std::size_t>(s.options.queue_depth);
  // By default: room for four more iterations, plus HDF5's chunk cache (up to 1 MiB per dataset)
  // that the closing flush writes out, plus 1 MiB of metadata.
  const auto datasets = static_cast<std::int64_t>(s.fields.size()) + 2;
  s.reserve_bytes = s.options.reserve_bytes >= 0
                        ? s.options.reserve_bytes
                        : 4 * static_cast<std::int64_t>(slot_bytes) + (datasets + 1) * (std::int64_t(1) << 20);
  constexpr std::size_t staging_limit = std::size_t(8) << 30;
  if (s.staging_bytes > staging_limit)
    throw InputError("rollout log '" + s.options.path + "': staging " + std::to_string(s.options.queue_depth) +
                     " iterations of " + std::to_string(slot_bytes >> 20) +
                     " MiB exceeds 8 GiB of host memory; log fewer "
                     "environments (--log-envs)");

  s.file = std::make_unique<RolloutLogFile>(s.options, s.fields);

  for (int k = 0; k < s.options.queue_depth; ++k) {
    Slot slot;
    for (const LogField& field : s.fields)
      slot.buffers.emplace_back(
          s.options.device, s.env_bytes[slot.buffers.size()] *
                                static_cast<std::size_t>(s.options.log_envs * std::max<std::int64_t>(field.steps, 1)));
    slot.begin_copied = Event(s.options.device);
    slot.end_copied = Event(s.options.device, /*blocking_sync=*/true);
    s.slots.push_back(std::move(slot));
    s.free_slots.push_back(k);
  }
  s.writer = std::thread([&s] { s.writer_loop(); });
}

RolloutLog::~RolloutLog() { close(); }

bool RolloutLog::wants(std::int64_t iteration) const {
  const State& s = *state_;
  return (iteration - s.options.first_iteration) % s.options.every == 0 && !s.failed && !s.closed;
}

namespace {

// Enqueues the copies of the fields captured at `when` into `slot`, ordered after the work on
// `compute`; later work on `compute` waits on the device until they are done.
void stage_fields(const RolloutLogOptions& options, const std::vector<LogField>& fields,
                  const std::vector<std::size_t>& env_bytes, LogCapture when, Slot& slot, Event& compute_mark,
                  Event& copied, const Stream& copy_stream, const Stream& compute) {
  bool any = false;
  for (const LogField& field : fields) any = any || field.capture == when;
  if (!any) return;
  compute_mark.record(compute);
  compute_mark.wait(copy_stream);
  for (std::size_t f = 0; f < fields.size(); ++f) {
    const LogField& field = fields[f];
    if (field.capture != when) continue;
    const std::size_t row_bytes = env_bytes[f] * static_cast<std::size_t>(options.log_envs);
    const std::size_t pitch =
        field.only_logged_envs ? row_bytes : env_bytes[f] * static_cast<std::size_t>(options.num_envs);
    const auto* source = static_cast<const char*>(field.data) +
                         (field.only_logged_envs ? 0 : env_bytes[f] * static_cast<std::size_t>(options.first_env));
    copy_rows(slot.buffers[f].data(), row_bytes, Device::cpu(), source, pitch, options.device, row_bytes,
              static_cast<std::size_t>(std::max<std::int64_t>(field.steps, 1)), copy_stream);
  }
  copied.record(copy_stream);
  copied.wait(compute);
}

}  // namespace

bool RolloutLog::begin_iteration(std::int64_t iteration, const Stream& stream) {
  State& s = *state_;
  SURGE_CHECK(s.filling < 0, "begin_iteration called twice without end_iteration");
  if (!wants(iteration)) return false;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.free_slots.empty()) {
      ++s.dropped;  // the writer is behind: drop this iteration whole rather than wait for it
      return false;
    }
    s.filling = s.free_slots.back();
    s.free_slots.pop_back();
  }
  Slot& slot = s.slots[static_cast<std::size_t>(s.filling)];
  slot.iteration = iteration;
  stage_fields(s.options, s.fields, s.env_bytes, LogCapture::AtBegin, slot, s.compute_mark, slot.begin_copied,
               s.copy_stream, stream);
  return true;
}

void RolloutLog::end_iteration(std::int64_t global_step, const Stream& stream) {
  State& s = *state_;
  if (s.filling < 0) return;
  Slot& slot = s.slots[static_cast<std::size_t>(s.filling)];
  slot.global_step = global_step;
  stage_fields(s.options, s.fields, s.env_bytes, LogCapture::AtEnd, slot, s.compute_mark, slot.end_copied,
               s.copy_stream, stream);
  // With nothing captured at the end, the writer still waits for the copies made at the beginning.
  if (std::none_of(s.fields.begin(), s.fields.end(), [](const LogField& f) { return f.capture == LogCapture::AtEnd; }))
    slot.end_copied.record(s.copy_stream);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.queue.push_back(s.filling);
  }
  s.filling = -1;
  s.wake.notify_one();
}

void RolloutLog::close() noexcept {
  State& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.closed) return;
    s.closed = true;
    s.stopping = true;
    if (s.filling >= 0) s.free_slots.push_back(s.filling);  // begun but never ended: not logged
    s.filling = -1;
  }
  // Copies into a slot begun but never ended are still in flight; its staging is freed with the log.
  s.copy_stream.synchronize_noexcept();
  s.wake.notify_all();
  if (s.writer.joinable()) s.writer.join();
  if (s.failed) return;
  try {
    s.finish_file();
  } catch (const std::exception& e) {
    s.fail("rollout log '" + s.options.path + "' could not be closed cleanly: " + e.what());
  }
}

RolloutLogStats RolloutLog::stats() const {
  const State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  RolloutLogStats stats;
  stats.written = s.written;
  stats.dropped = s.dropped;
  stats.failed = s.failed;
  stats.error = s.error;
  stats.staging_bytes = s.staging_bytes;
  return stats;
}

const std::string& RolloutLog::path() const { return state_->options.path; }

std::vector<LogField> pixel_log_fields(const std::uint8_t* frames, const std::uint8_t* first, std::int64_t steps,
                                       int stack, int height, int width, int channels) {
  SURGE_CHECK(steps >= 1 && stack >= 1 && height >= 1 && width >= 1 && (channels == 1 || channels == 3),
              "pixel log fields: bad frame store shape");
  LogField pixels;
  pixels.name = "frames";
  pixels.dtype = LogDtype::UInt8;
  pixels.steps = steps + stack - 1;
  pixels.item_shape = {height, width, channels};
  pixels.data = frames;
  pixels.description =
      "frames in drawing order: slot s is observation row s - (frame_stack - 1), the first frame_stack - 1 "
      "carried over from the iteration before; a stack is slots t .. t + frame_stack - 1, each frame older "
      "than the latest frame_first among them replaced by that frame";
  pixels.chunk_steps = kFramesPerChunk;
  pixels.chunk_envs = 1;
  LogField starts = pixels;
  starts.name = "frame_first";
  starts.item_shape = {};
  starts.data = first;
  starts.description = "1 where the frame in the same slot of 'frames' is the first of its episode";
  starts.chunk_steps = 0;  // a few bytes per frame: one chunk per iteration, as the vector fields
  starts.chunk_envs = 0;
  return {pixels, starts};
}

std::vector<LogAttribute> pixel_log_attributes(int stack, int height, int width, int channels) {
  return {{"observation", std::string("pixels")},
          {"frame_stack", std::int64_t{stack}},
          {"frame_shape", std::vector<std::int64_t>{height, width, channels}},
          {"frame_stack_rule",
           std::string("the observation acted on at step t (0 .. T-1) of env m in an iteration is frames[t .. t + "
                       "frame_stack - 1][m], oldest first, every slot before the latest slot among them whose "
                       "frame_first is 1 showing that slot's frame instead (Gymnasium's FrameStackObservation, "
                       "padding \"reset\"); it is laid out [H][W][frame_stack * C], channel k * C + c of the k-th "
                       "oldest frame, as the encoder reads it")}};
}

}  // namespace surge::rl
