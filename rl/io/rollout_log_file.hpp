#pragma once
// The rollout log's file layout (docs/hdf5-schema.md), apart from its staging and writer thread
// (rollout_log.cpp): the file created with its attributes, env_id, the index datasets and one
// extendable dataset per field, or an existing log reopened and cut back to resume a run; staged
// iterations appended; the file flushed and closed. HDF5 stays behind this class; builds without
// HDF5 compile no_hdf5_rollout_log.cpp instead, whose constructor throws InputError.
// Every member takes HDF5's library lock (rl/io/hdf5_util.hpp) itself.
#include <cstdint>
#include <memory>
#include <vector>

#include "rl/io/rollout_log.hpp"
#include "rl/io/rollout_log_lock.hpp"

namespace surge::rl {

class RolloutLogFile {
 public:
  // Takes the log's lock (rl/io/rollout_log_lock.hpp), then creates options.path (replacing any file
  // there) or, when options.resume_iteration >= 0 and the file exists, reopens it cut back to the
  // complete iterations before resume_iteration; either way in SWMR mode (docs/hdf5-schema.md, crash
  // safety). Throws InputError naming the path when another process holds the lock or it can do neither.
  RolloutLogFile(const RolloutLogOptions& options, const std::vector<LogField>& fields);
  ~RolloutLogFile();  // release()
  RolloutLogFile(const RolloutLogFile&) = delete;
  RolloutLogFile& operator=(const RolloutLogFile&) = delete;

  std::int64_t rows() const { return rows_; }                        // iterations the file's index covers
  std::int64_t dropped_earlier() const { return dropped_earlier_; }  // counted by the run this one resumes

  // Appends one iteration: each field's staged values ([steps][M](item) or [M](item)) and
  // global_step. The iteration index gets it at the next flush(): a row counts once `iteration`
  // covers it, so a crash before leaves no half-written row that readers would take for whole.
  void append(const std::vector<const void*>& field_values, std::int64_t iteration, std::int64_t global_step);
  // Writes out the appended rows, then extends `iteration` over them and writes out the metadata.
  void flush();
  // Flushes, records the iterations dropped (this run's; the earlier runs' are added), closes and
  // lets go of the lock. Does nothing once released.
  void finish(std::int64_t dropped);
  // Lets go of the file and the lock at once, writing nothing more (after an error).
  void release() noexcept;

 private:
  struct Datasets;
  std::unique_ptr<RolloutLogLock> lock_;
  std::unique_ptr<Datasets> datasets_;
  std::int64_t rows_ = 0;
  std::int64_t dropped_earlier_ = 0;
};

}  // namespace surge::rl
