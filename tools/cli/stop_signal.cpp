#include "tools/cli/stop_signal.hpp"

#include <csignal>

namespace surge::cli {
namespace {

volatile std::sig_atomic_t received = 0;
struct sigaction previous_int {
}, previous_term{};

void on_signal(int signal_number) { received = signal_number; }

}  // namespace

StopSignals::StopSignals() {
  received = 0;
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  // The handler runs once; a second signal gets the default action and ends the process.
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(SIGINT, &action, &previous_int);
  sigaction(SIGTERM, &action, &previous_term);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &previous_int, nullptr);
  sigaction(SIGTERM, &previous_term, nullptr);
}

void StopSignals::shield() {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGINT, &ignore, nullptr);
  sigaction(SIGTERM, &ignore, nullptr);
}

bool StopSignals::requested() const { return received != 0; }
int StopSignals::signal_number() const { return received; }

const char* StopSignals::name(int signal_number) {
  switch (signal_number) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "a signal";
  }
}

}  // namespace surge::cli
