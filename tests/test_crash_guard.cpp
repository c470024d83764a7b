// hdf5::CrashGuard (rl/io/hdf5_read_guard.hpp): a crash while a guard lives ends the process with the
// outermost guard's line and exit code 2; once the last guard is gone a crash is a crash again. Each case
// runs in a forked child whose stderr goes to a pipe.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <functional>
#include <string>

#include "rl/io/hdf5_read_guard.hpp"

namespace {

struct ChildResult {
  int status = 0;
  std::string err;
};

ChildResult run_child(const std::function<void()>& body) {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(pipe_fds[1], STDERR_FILENO);
    ::close(pipe_fds[0]);
    body();
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  ChildResult result;
  char buffer[512];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) result.err.append(buffer, n);
  ::close(pipe_fds[0]);
  REQUIRE(::waitpid(pid, &result.status, 0) == pid);
  return result;
}

}  // namespace

TEST_CASE("a crash inside a crash guard is one line and exit code 2", "[crash_guard]") {
  const ChildResult result = run_child([] {
    surge::rl::hdf5::set_guarded_read_prefix("surge eval");
    const surge::rl::hdf5::CrashGuard outer("checkpoint 'a.h5' is damaged: the library crashed reading it");
    const surge::rl::hdf5::CrashGuard inner("this line is not the one printed");
    ::raise(SIGSEGV);
  });
  REQUIRE(WIFEXITED(result.status));
  CHECK(WEXITSTATUS(result.status) == 2);
  CHECK(result.err == "surge eval: checkpoint 'a.h5' is damaged: the library crashed reading it\n");
}

TEST_CASE("a bus error inside a crash guard is answered the same way", "[crash_guard]") {
  const ChildResult result = run_child([] {
    const surge::rl::hdf5::CrashGuard guard("log 'b.h5' is damaged");
    ::raise(SIGBUS);
  });
  REQUIRE(WIFEXITED(result.status));
  CHECK(WEXITSTATUS(result.status) == 2);
  CHECK(result.err.find("log 'b.h5' is damaged\n") != std::string::npos);
}

TEST_CASE("after the last crash guard a crash is a crash again", "[crash_guard]") {
  const ChildResult result = run_child([] {
    std::signal(SIGSEGV, SIG_DFL);  // the test framework's handler (and a sanitizer's) out of the way
    { const surge::rl::hdf5::CrashGuard first("first"); }
    {
      const surge::rl::hdf5::CrashGuard outer("outer");
      { const surge::rl::hdf5::CrashGuard inner("inner"); }
    }
    ::raise(SIGSEGV);
  });
  // The handler from before the guards answers: the default one kills the child with the signal.
  REQUIRE(WIFSIGNALED(result.status));
  CHECK(WTERMSIG(result.status) == SIGSEGV);
  CHECK(result.err.find("first") == std::string::npos);
  CHECK(result.err.find("outer") == std::string::npos);
}
