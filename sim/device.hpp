#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace surge {

enum class DeviceKind : std::uint8_t { Cpu, Cuda };

// Where memory lives and kernels run. Trivially copyable; views carry one.
struct Device {
  DeviceKind kind = DeviceKind::Cpu;
  int index = 0;

  static constexpr Device cpu() { return {DeviceKind::Cpu, 0}; }
  static constexpr Device cuda(int index = 0) { return {DeviceKind::Cuda, index}; }
  constexpr bool is_cpu() const { return kind == DeviceKind::Cpu; }
  constexpr bool is_cuda() const { return kind == DeviceKind::Cuda; }
  friend constexpr bool operator==(Device a, Device b) { return a.kind == b.kind && a.index == b.index; }
  std::string str() const;  // "cpu" or "cuda:0"
};

// What this process can do with CUDA, found once and cached. It is the verdict of
// sim/cuda_diagnosis.hpp (what `surge doctor` prints in full), in brief.
struct CudaStatus {
  bool compiled = false;    // this build contains CUDA kernels
  bool usable = false;      // at least one GPU can run this build
  int device_count = 0;     // GPUs visible, usable or not
  int driver_version = 0;   // CUDA version the driver supports, e.g. 13000; 0 if no driver
  int runtime_version = 0;  // CUDA runtime this build links, e.g. 13000
  std::string reason;       // why CUDA is not usable, in plain words; empty if usable
};
const CudaStatus& cuda_status();

// A device chosen from the command line. `fallback` says briefly why "auto" chose the CPU.
struct DeviceChoice {
  Device device;
  std::string fallback;
};

// Parses "cpu", "cuda", "cuda:N" or "auto". "auto" means the first GPU that can run this build,
// else the CPU. Asking for CUDA on a machine that cannot run it is bad input: throws InputError
// with one line of the doctor's verdict (what is wrong and what to do).
DeviceChoice choose_device(std::string_view text);
Device parse_device(std::string_view text);

// Formats a CUDA version number (13000 -> "13.0").
std::string cuda_version_string(int version);

}  // namespace surge
