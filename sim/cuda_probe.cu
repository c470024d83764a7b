// What this machine offers CUDA, read from the CUDA runtime when the CUDA backend is built and from
// the driver's own files (NVML, /proc/driver/nvidia) either way. Compiled by nvcc when CUDA is on,
// otherwise as plain C++ with the CUDA queries left out.
#include "sim/cuda_probe.hpp"

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "sim/parallel.cuh"

#ifndef SURGE_CUDA_ARCHS
#define SURGE_CUDA_ARCHS "none"
#endif

namespace surge {
namespace {

// ============================== device code ==============================

// The probe loads the very kernel every parallel_for launches, instantiated for a no-op body: if it
// loads, the architectures embedded for Surge's kernels fit the GPU.
struct ProbeNoop {
  SURGE_HD void operator()(std::int64_t) const {}
};

// ============================== host queries ==============================

struct DriverFacts {
  bool found = false;
  std::string release;   // "580.65.06"
  int cuda_version = 0;  // 13000; 0 when unknown
};

// NVML ships with the driver: it names the driver's release without needing the CUDA runtime.
DriverFacts read_nvml() {
  DriverFacts facts;
  void* library = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!library) return facts;
  using InitFn = int (*)();
  using VersionFn = int (*)(char*, unsigned);
  using CudaVersionFn = int (*)(int*);
  auto init = reinterpret_cast<InitFn>(dlsym(library, "nvmlInit_v2"));
  auto shutdown = reinterpret_cast<InitFn>(dlsym(library, "nvmlShutdown"));
  auto driver_version = reinterpret_cast<VersionFn>(dlsym(library, "nvmlSystemGetDriverVersion"));
  auto cuda_version = reinterpret_cast<CudaVersionFn>(dlsym(library, "nvmlSystemGetCudaDriverVersion_v2"));
  if (!cuda_version) cuda_version = reinterpret_cast<CudaVersionFn>(dlsym(library, "nvmlSystemGetCudaDriverVersion"));
  if (init && shutdown && init() == 0) {
    facts.found = true;
    char text[96] = {};
    if (driver_version && driver_version(text, sizeof text) == 0) facts.release = text;
    int version = 0;
    if (cuda_version && cuda_version(&version) == 0) facts.cuda_version = version;
    shutdown();
  }
  dlclose(library);
  return facts;
}

// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 ..." -> "580.65.06".
std::string read_proc_driver_release() {
  std::ifstream file("/proc/driver/nvidia/version");
  std::string line;
  if (!file || !std::getline(file, line)) return "";
  std::istringstream words(line);
  std::string word, previous;
  while (words >> word) {
    if (previous == "Module") return word;
    previous = word;
  }
  return "";
}

DriverFacts read_driver_facts() {
  DriverFacts facts = read_nvml();
  if (facts.release.empty()) facts.release = read_proc_driver_release();
  facts.found = facts.found || !facts.release.empty();
  return facts;
}

}  // namespace

EmbeddedArchs embedded_cuda_archs() {
#if defined(__CUDACC__)
  return parse_cuda_architectures(SURGE_CUDA_ARCHS);
#else
  return parse_cuda_architectures("");
#endif
}

void probe_kernel_load(GpuDescription& gpu) {
#if defined(__CUDACC__)
  cudaFuncAttributes attributes{};
  cudaError_t status = cudaSetDevice(gpu.index);
  if (status == cudaSuccess) status = cudaFuncGetAttributes(&attributes, detail::grid_stride_kernel<ProbeNoop>);
  if (status == cudaSuccess) {
    gpu.kernel_load = KernelLoad::Loaded;
    gpu.loaded_binary_arch = attributes.binaryVersion;
    gpu.loaded_ptx_arch = attributes.ptxVersion;
    gpu.load_error.clear();
  } else {
    gpu.kernel_load = status == cudaErrorNoKernelImageForDevice || status == cudaErrorInvalidDeviceFunction
                          ? KernelLoad::NoImage
                          : KernelLoad::Failed;
    gpu.load_error = std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
    cudaGetLastError();  // clear it, so later calls start clean
  }
#else
  gpu.kernel_load = KernelLoad::Failed;
  gpu.load_error = "this build has no CUDA backend";
#endif
}

bool gpu_memory_info(int index, std::size_t& free_bytes, std::size_t& total_bytes) {
#if defined(__CUDACC__)
  if (cudaSetDevice(index) == cudaSuccess && cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) return true;
  cudaGetLastError();
#else
  (void)index;
  (void)free_bytes;
  (void)total_bytes;
#endif
  return false;
}

MachineDescription describe_machine(ProbeDepth depth) {
  MachineDescription machine;
  machine.archs = embedded_cuda_archs();
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) {
    machine.visible_devices_set = true;
    machine.visible_devices = visible;
  }
  const DriverFacts driver = read_driver_facts();
  machine.driver_found = driver.found;
  machine.driver_release = driver.release;
  machine.driver_cuda_version = driver.cuda_version;
#if defined(__CUDACC__)
  machine.cuda_built = true;
  cudaRuntimeGetVersion(&machine.runtime_version);
  int driver_cuda = 0;
  // Returns 0 when no driver is installed: libcuda is what CUDA itself loads, so it decides.
  if (cudaDriverGetVersion(&driver_cuda) != cudaSuccess) driver_cuda = 0;
  machine.driver_found = driver_cuda != 0;
  machine.driver_cuda_version = driver_cuda;
  if (!machine.driver_found) return machine;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    machine.device_query_error = std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
    cudaGetLastError();
    return machine;
  }
  for (int index = 0; index < count; ++index) {
    GpuDescription gpu;
    gpu.index = index;
    cudaDeviceProp properties{};
    if (cudaGetDeviceProperties(&properties, index) != cudaSuccess) {
      cudaGetLastError();
      gpu.name = "unreadable GPU";
    } else {
      gpu.name = properties.name;
      gpu.cc_major = properties.major;
      gpu.cc_minor = properties.minor;
      gpu.total_bytes = properties.totalGlobalMem;
      gpu.sm_count = properties.multiProcessorCount;
    }
    if (depth == ProbeDepth::Full) {
      std::size_t free_bytes = 0, total_bytes = 0;
      if (gpu_memory_info(index, free_bytes, total_bytes)) gpu.free_bytes = free_bytes;
      probe_kernel_load(gpu);
    }
    machine.gpus.push_back(gpu);
  }
#else
  (void)depth;
#endif
  return machine;
}

const MachineVerdict& quick_machine_verdict() {
  static const MachineVerdict verdict = [] {
    MachineVerdict v;
    v.machine = describe_machine(ProbeDepth::Quick);
    v.diagnosis = diagnose(v.machine);
    return v;
  }();
  return verdict;
}

}  // namespace surge
