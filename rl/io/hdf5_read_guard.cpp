#include "rl/io/hdf5_read_guard.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>

namespace surge::rl::hdf5 {

namespace {

// Written before the read starts, so that a signal handler or the watchdog only has to write and exit
// (both async-signal-safe).
char crash_message[640];
std::size_t crash_message_length = 0;
char stall_message[640];
std::size_t stall_message_length = 0;
char message_prefix[64] = "surge";

// Taken by the first thread to say something: a second thread that faults (or the watchdog) meanwhile waits
// for the first one's exit instead of writing its line too (seen under load: the line twice).
std::atomic_flag said = ATOMIC_FLAG_INIT;

void say_and_exit(const char* message, std::size_t length) {
  if (said.test_and_set()) {
    for (;;) ::pause();
  }
  if (::write(STDERR_FILENO, message, length) < 0) {
    // Nothing more can be done from here.
  }
  ::_exit(2);
}

extern "C" void on_read_crash(int) { say_and_exit(crash_message, crash_message_length); }

// CrashGuard's state: how many guards live, the handlers they replaced, the outermost one's line.
std::mutex file_guard_mutex;
int file_guards = 0;
struct sigaction file_previous_segv {
}, file_previous_bus{};
char file_crash_message[1024];
std::size_t file_crash_message_length = 0;

extern "C" void on_file_crash(int) { say_and_exit(file_crash_message, file_crash_message_length); }

// `handler` for SIGSEGV and SIGBUS, keeping the ones it replaces; then the kept ones back.
void take_crashes(void (*handler)(int), struct sigaction* previous_segv, struct sigaction* previous_bus) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  sigaction(SIGSEGV, &action, previous_segv);
  sigaction(SIGBUS, &action, previous_bus);
}

void give_back_crashes(const struct sigaction& previous_segv, const struct sigaction& previous_bus) {
  sigaction(SIGSEGV, &previous_segv, nullptr);
  sigaction(SIGBUS, &previous_bus, nullptr);
}

std::size_t compose(char* buffer, std::size_t capacity, const char* format, const std::string& file,
                    const std::string& name) {
  const int written = std::snprintf(buffer, capacity, format, message_prefix, file.c_str(), name.c_str());
  return written < 0 ? 0 : std::min<std::size_t>(static_cast<std::size_t>(written), capacity - 1);
}

// The process's address space now, from /proc (0 where it cannot be read: no limit is set then).
rlim_t address_space_bytes() {
  std::ifstream statm("/proc/self/statm");
  unsigned long long pages = 0;
  if (!(statm >> pages)) return 0;
  return static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace

void set_guarded_read_prefix(const std::string& prefix) {
  std::snprintf(message_prefix, sizeof message_prefix, "%s", prefix.c_str());
}

CrashGuard::CrashGuard(const std::string& line) {
  const std::lock_guard lock(file_guard_mutex);
  if (file_guards++ > 0) return;
  const int written =
      std::snprintf(file_crash_message, sizeof file_crash_message, "%s: %s\n", message_prefix, line.c_str());
  file_crash_message_length =
      written < 0 ? 0 : std::min<std::size_t>(static_cast<std::size_t>(written), sizeof file_crash_message - 1);
  if (file_crash_message_length > 0) file_crash_message[file_crash_message_length - 1] = '\n';
  take_crashes(on_file_crash, &file_previous_segv, &file_previous_bus);
}

CrashGuard::~CrashGuard() {
  const std::lock_guard lock(file_guard_mutex);
  if (--file_guards > 0) return;
  give_back_crashes(file_previous_segv, file_previous_bus);
}

GuardedRead::GuardedRead(const std::string& file, std::uint64_t file_bytes, const std::string& name, double seconds) {
  crash_message_length = compose(crash_message, sizeof crash_message,
                                 "%s: '%s' is damaged: the HDF5 library crashed reading its attribute '%s'; use "
                                 "an undamaged copy\n",
                                 file, name);
  stall_message_length = compose(stall_message, sizeof stall_message,
                                 "%s: '%s' is damaged: the HDF5 library did not finish reading its attribute "
                                 "'%s' (a loop in its global heap); use an undamaged copy\n",
                                 file, name);

  // The watchdog first: its stack is mapped before the address space is capped.
  watchdog_ = std::thread([this, seconds] {
    std::unique_lock lock(mutex_);
    if (!finished_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return done_; }))
      say_and_exit(stall_message, stall_message_length);
  });

  const rlim_t now = address_space_bytes();
  if (now > 0 && ::getrlimit(RLIMIT_AS, &previous_limit_) == 0) {
    const rlim_t cap = now + static_cast<rlim_t>(file_bytes) + (rlim_t{256} << 20);
    if (previous_limit_.rlim_cur == RLIM_INFINITY || cap < previous_limit_.rlim_cur) {
      rlimit lowered = previous_limit_;
      lowered.rlim_cur = previous_limit_.rlim_max == RLIM_INFINITY ? cap : std::min(cap, previous_limit_.rlim_max);
      limited_ = ::setrlimit(RLIMIT_AS, &lowered) == 0;
    }
  }

  take_crashes(on_read_crash, &previous_segv_, &previous_bus_);
}

GuardedRead::~GuardedRead() {
  give_back_crashes(previous_segv_, previous_bus_);
  if (limited_) ::setrlimit(RLIMIT_AS, &previous_limit_);
  {
    const std::lock_guard lock(mutex_);
    done_ = true;
  }
  finished_.notify_one();
  watchdog_.join();
}

}  // namespace surge::rl::hdf5
