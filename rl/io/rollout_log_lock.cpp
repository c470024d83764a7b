#include "rl/io/rollout_log_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "sim/error.hpp"

namespace surge::rl {
namespace {

// The pid the lock file names, as text ("unknown" when it names none yet).
std::string holder_of(int fd) {
  char text[32] = {};
  const ssize_t length = ::pread(fd, text, sizeof text - 1, 0);
  std::string pid;
  for (ssize_t k = 0; k < length && text[k] >= '0' && text[k] <= '9'; ++k) pid += text[k];
  return pid.empty() ? "unknown" : pid;
}

}  // namespace

RolloutLogLock::RolloutLogLock(const std::string& log_path) : path_(lock_path(log_path)) {
  // The previous holder removes the file while it holds the lock: a lock taken on a file that is no
  // longer the one at path_ (opened just before that removal) is retried on the new file.
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      throw InputError("cannot create the rollout log '" + log_path + "': its lock file '" + path_ +
                       "' cannot be created (" + std::strerror(errno) +
                       "); check that its folder exists and is writable");
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      const std::string holder = holder_of(fd);
      ::close(fd);
      if (error == EWOULDBLOCK)
        throw InputError("the rollout log '" + log_path + "' is being written by another run (pid " + holder +
                         ", which holds '" + path_ + "'); wait for it to finish or log to another file");
      throw InputError("cannot lock '" + path_ + "' for the rollout log '" + log_path + "': " + std::strerror(error));
    }
    struct stat opened {};
    struct stat named {};
    if (::fstat(fd, &opened) == 0 && ::stat(path_.c_str(), &named) == 0 && opened.st_dev == named.st_dev &&
        opened.st_ino == named.st_ino) {
      fd_ = fd;
      const std::string pid = std::to_string(::getpid()) + "\n";
      // Without the pid the lock still holds; only a second run's message would lack it.
      const bool noted =
          ::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, pid.data(), pid.size(), 0) == static_cast<ssize_t>(pid.size());
      static_cast<void>(noted);
      return;
    }
    ::close(fd);
  }
  throw InputError("cannot lock '" + path_ + "' for the rollout log '" + log_path +
                   "': it keeps being replaced; is another run starting on the same file?");
}

RolloutLogLock::~RolloutLogLock() { release(); }

void RolloutLogLock::release() noexcept {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // while still locked: see the constructor
  ::close(fd_);
  fd_ = -1;
}

}  // namespace surge::rl
