#include "tools/cli/run_folder.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "sim/error.hpp"

namespace surge::cli {
namespace fs = std::filesystem;
namespace {

constexpr const char* kLockName = ".lock";

// The entries of `dir` other than its lock file.
std::vector<std::string> contents(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error))
    if (entry.path().filename() != kLockName) names.push_back(entry.path().filename().string());
  return names;
}

std::string pid_in(int fd) {
  char text[32] = {};
  const ssize_t got = ::pread(fd, text, sizeof text - 1, 0);
  std::string pid(text, got > 0 ? static_cast<std::size_t>(got) : 0);
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid.empty() ? "unknown" : pid;
}

}  // namespace

const std::vector<std::string>& RunFolder::outputs() {
  static const std::vector<std::string> names = {"metrics.csv", "config.toml", "checkpoint.h5", "best.h5",
                                                 "tb",          "agents",      "agents.csv",    "agents_summary.csv"};
  return names;
}

std::string RunFolder::default_dir(const std::string& scenario, const std::string& tag) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  ::localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  const std::string base = "runs/" + scenario + "/" + stamp + "-" + tag;
  std::string dir = base;
  std::error_code error;
  for (int k = 2; fs::exists(dir, error); ++k) dir = base + "-" + std::to_string(k);
  return dir;
}

void RunFolder::require_free(const std::string& dir, bool overwrite, const std::string& command) {
  std::error_code error;
  if (!fs::exists(dir, error)) return;
  if (!fs::is_directory(dir, error))
    throw InputError(command + ": --out " + dir + " is a file, not a folder; give a folder for the run's outputs");
  const std::vector<std::string> names = contents(dir);
  if (names.empty() || overwrite) return;
  std::string listed;
  for (std::size_t k = 0; k < names.size() && k < 3; ++k) listed += (k ? ", " : "") + names[k];
  if (names.size() > 3) listed += ", ...";
  throw InputError(
      command + ": --out " + dir + " already holds files (" + listed +
      "); give a new folder, --overwrite to replace that run, or --resume DIR/checkpoint.h5 to continue it");
}

void RunFolder::require_not_an_output(const std::string& dir, const std::string& path, const std::string& what,
                                      const std::string& command) {
  std::error_code error;
  const fs::path target = fs::weakly_canonical(fs::absolute(path), error);
  for (const std::string& name : outputs()) {
    const fs::path output = fs::weakly_canonical(fs::absolute(fs::path(dir) / name), error);
    const auto [end, _] = std::mismatch(output.begin(), output.end(), target.begin(), target.end());
    if (end == output.end())
      throw InputError(command + ": " + what + " " + path + " would overwrite the run's own " + name +
                       "; give a path outside it, e.g. " + (fs::path(dir) / "rollouts.h5").string());
  }
}

RunFolder::RunFolder(std::string dir, Reuse reuse, const std::string& command) : dir_(std::move(dir)) {
  std::error_code error;
  // The topmost missing folder on the way to dir_: what to remove if the run never starts.
  for (fs::path p = fs::absolute(dir_); !p.empty() && !fs::exists(p, error); p = p.parent_path()) {
    created_ = p.string();
    if (p == p.parent_path()) break;
  }
  fs::create_directories(dir_, error);
  if (error) throw InputError(command + ": cannot create --out " + dir_ + ": " + error.message());
  const std::string lock_path = (fs::path(dir_) / kLockName).string();
  lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (lock_fd_ >= 0)
    lock_created_ = lock_path;  // removed again if the run never starts
  else if (errno == EEXIST)
    lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CLOEXEC);
  if (lock_fd_ < 0)
    throw InputError(command + ": cannot write in --out " + dir_ + ": " + std::strerror(errno) +
                     "; give a folder you can write to");
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const std::string pid = pid_in(lock_fd_);
    ::close(lock_fd_);
    lock_fd_ = -1;
    lock_created_.clear();
    throw InputError(command + ": --out " + dir_ + " is in use by another run (process " + pid +
                     "); wait for it to finish or give another --out");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock_fd_, 0) != 0 || ::pwrite(lock_fd_, pid.data(), pid.size(), 0) < 0) {
    // The lock holds without the pid; a second run then names the process as unknown.
  }
  if (reuse == Reuse::Refuse) {
    try {
      require_free(dir_, false, command);
    } catch (...) {
      release();
      throw;
    }
  }
  if (reuse == Reuse::Overwrite)
    for (const std::string& name : outputs()) fs::remove_all(fs::path(dir_) / name, error);
}

RunFolder::~RunFolder() { release(); }

void RunFolder::release() {
  std::error_code error;
  if (!kept_ && !created_.empty()) {
    fs::remove_all(created_, error);
    created_.clear();
  } else if (!kept_ && !lock_created_.empty()) {
    fs::remove(lock_created_, error);  // the folder was there before: leave it as it was
  }
  lock_created_.clear();
  if (lock_fd_ >= 0) {
    ::close(lock_fd_);  // releases the flock; the file stays, so a waiting run locks the same inode
    lock_fd_ = -1;
  }
}

}  // namespace surge::cli
