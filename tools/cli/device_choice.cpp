// --device for every command: the one place where "auto" falling back to the CPU is announced.
#include <iostream>

#include "sim/device.hpp"
#include "tools/cli/commands.hpp"

namespace surge::cli {

std::string device_help() { return "cpu, cuda, cuda:N or auto (the first GPU that can run this build, else the CPU)"; }

Device resolve_device(const std::string& text) {
  const DeviceChoice choice = choose_device(text);
  static bool announced = false;  // once per process, however many commands resolve a device
  if (!choice.fallback.empty() && !announced) {
    std::cerr << "surge: no usable GPU (" << choice.fallback
              << "); running on the CPU backend. 'surge doctor' explains\n";
    announced = true;
  }
  return choice.device;
}

}  // namespace surge::cli
