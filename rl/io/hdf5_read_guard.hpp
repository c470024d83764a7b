#pragma once
// A guard around one read of a variable-length string from an untrusted HDF5 file.
//
// HDF5 1.10 trusts what it finds on the way to a variable-length string: the length in the attribute and
// the global heap's object sizes. A damaged file can make H5Aread copy from anywhere (a crash), ask for
// gigabytes (the length is allocated and cleared before the heap is read), or loop for ever (an object of
// size zero in a heap collection). While the guard lives:
// - a crash (SIGSEGV, SIGBUS) ends the program with one line naming the file and exit code 2;
// - the address space may grow by at most the file's size and 256 MiB, so a damaged length makes the
//   allocation fail and the read return an error (RLIMIT_AS, lowered for the read and restored after);
// - a read that has not finished after `seconds` ends the program with one line and exit code 2.
// Only reads of a few strings belong under it: other threads share the address-space limit meanwhile.

#include <signal.h>
#include <sys/resource.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace surge::rl::hdf5 {

// What the guard's lines start with ("surge eval"); main sets it from the command line. Default "surge".
void set_guarded_read_prefix(const std::string& prefix);

// While at least one lives (on any thread), a crash (SIGSEGV, SIGBUS) ends the program with the line
// "PREFIX: `line`" and exit code 2. For whole reads of untrusted files (a checkpoint, a rollout log),
// where HDF5 1.10 follows a damaged object header or heap without checking it (H5Aexists, H5Oopen, ...).
// The outermost guard's line is the one printed; a GuardedRead inside one takes over for its own read.
// (Under AddressSanitizer the guard's handler stands in for the sanitizer's during the read.)
class CrashGuard {
 public:
  explicit CrashGuard(const std::string& line);
  ~CrashGuard();
  CrashGuard(const CrashGuard&) = delete;
  CrashGuard& operator=(const CrashGuard&) = delete;
};

class GuardedRead {
 public:
  // `file`: the file's name for the messages; `file_bytes`: its size, which bounds what a read may allocate.
  GuardedRead(const std::string& file, std::uint64_t file_bytes, const std::string& attribute, double seconds = 10.0);
  ~GuardedRead();
  GuardedRead(const GuardedRead&) = delete;
  GuardedRead& operator=(const GuardedRead&) = delete;

 private:
  struct sigaction previous_segv_ {
  }, previous_bus_{};
  rlimit previous_limit_{};
  bool limited_ = false;
  std::mutex mutex_;
  std::condition_variable finished_;
  bool done_ = false;
  std::thread watchdog_;
};

}  // namespace surge::rl::hdf5
