#pragma once
// Ctrl-C or `kill` during a long run: the first SIGINT or SIGTERM asks the run to stop at the next
// iteration boundary (it then writes what it has and exits); a second one ends the process at once.
namespace surge::cli {

class StopSignals {
 public:
  StopSignals();   // installs the handlers for SIGINT and SIGTERM
  ~StopSignals();  // puts the previous ones back
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  bool requested() const;
  int signal_number() const;  // 0 until a signal came
  // "SIGINT" or "SIGTERM", and the exit code a shell expects after it (128 + the signal number).
  static const char* name(int signal_number);
  // From now on SIGINT and SIGTERM are ignored: the final writes finish whole (SIGKILL still ends it).
  void shield();
  static int exit_code(int signal_number) { return 128 + signal_number; }
};

}  // namespace surge::cli
