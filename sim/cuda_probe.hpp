#pragma once
// Describes this machine for the CUDA verdict (sim/cuda_diagnosis.hpp). The CUDA queries live in
// cuda_probe.cu; without the CUDA backend only what the driver shows outside CUDA (NVML, /proc) is read.
#include <cstddef>

#include "sim/cuda_diagnosis.hpp"

namespace surge {

enum class ProbeDepth {
  Quick,  // versions and GPU properties: creates no CUDA context
  Full,   // also free memory and a kernel load on every GPU, which creates a context on each
};
MachineDescription describe_machine(ProbeDepth depth);

// The quick description and its diagnosis, found once per process (what parse_device consults).
struct MachineVerdict {
  MachineDescription machine;
  Diagnosis diagnosis;
};
const MachineVerdict& quick_machine_verdict();

// Loads a real Surge kernel (the parallel_for kernel) on GPU `gpu.index`, creating its context,
// and records how it went in `gpu`.
void probe_kernel_load(GpuDescription& gpu);

// Free and total memory of a GPU (creates its context); false without the CUDA backend or on failure.
bool gpu_memory_info(int index, std::size_t& free_bytes, std::size_t& total_bytes);

// The architectures embedded in this build, from the list it was configured with.
EmbeddedArchs embedded_cuda_archs();

}  // namespace surge
