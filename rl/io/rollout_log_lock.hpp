#pragma once
// One writer per rollout log: a sidecar lock file, FILE.h5.lock, held with flock(LOCK_EX | LOCK_NB)
// from before the log is created (or reopened to resume) until it is closed, and holding the pid of
// the process that owns the log. A second run given the same path stops before it touches the log.
//
// Why a sidecar rather than a lock on FILE.h5 itself: HDF5 (1.10 and later) flocks the files it
// opens, and flock locks belong to open file descriptions, so a lock of ours on FILE.h5 would make
// HDF5's own open of it in this process fail; and the file must be locked before H5Fcreate
// truncates it, which is the very thing to prevent. The kernel drops the lock when its holder dies,
// so a lock file left by a killed run does not block the next one.
#include <string>

namespace surge::rl {

class RolloutLogLock {
 public:
  // Takes the lock of the log at `log_path`. Throws InputError naming the log and the pid that holds
  // it when another process (or another log in this one) holds it, and when the lock file cannot be
  // created.
  explicit RolloutLogLock(const std::string& log_path);
  ~RolloutLogLock();  // release()
  RolloutLogLock(const RolloutLogLock&) = delete;
  RolloutLogLock& operator=(const RolloutLogLock&) = delete;

  // Removes the lock file and lets go of the lock. Idempotent.
  void release() noexcept;
  static std::string lock_path(const std::string& log_path) { return log_path + ".lock"; }

 private:
  std::string path_;  // the lock file
  int fd_ = -1;
};

}  // namespace surge::rl
