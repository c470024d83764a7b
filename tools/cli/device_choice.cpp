// --device for every command: the one place where "auto" falling back to the CPU is announced.
#include <iostream>

#include "sim/device.hpp"
#include "tools/cli/commands.hpp"

namespace surge::cli {

std::string device_help() { return "cpu, cuda, cuda:N or auto (the first GPU that can run this build, else the CPU)"; }

namespace {
std::string pending_notice;  // said once the command has got past its input checks
bool announced = false;      // once per process, however many commands resolve a device
}  // namespace

Device resolve_device(const std::string& text) {
  const DeviceChoice choice = choose_device(text);
  if (!choice.fallback.empty() && !announced) {
    pending_notice =
        "surge: no usable GPU (" + choice.fallback + "); running on the CPU backend. 'surge doctor' explains";
    announced = true;
  }
  return choice.device;
}

void say_device_notice() {
  if (pending_notice.empty()) return;
  std::cerr << pending_notice << "\n";
  pending_notice.clear();
}

}  // namespace surge::cli
