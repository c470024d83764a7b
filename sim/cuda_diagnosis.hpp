#pragma once
// The verdict on what a machine offers CUDA: which GPUs can run this build (natively, through PTX
// JIT, or not at all) and a concrete next step for every problem. Pure functions over a plain
// description, so tests can feed machines that do not exist here; sim/cuda_probe.hpp describes the
// real one. `surge doctor` prints the whole diagnosis; parse_device refuses CUDA with one line of it.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace surge {

// One CUDA architecture as nvcc names it: sm_90 / compute_90 is number 90 (compute capability 9.0).
// Suffix 'a' (sm_90a) is tied to exactly that capability; 'f' (sm_100f) to its family (same major).
struct CudaArch {
  int number = 0;
  char suffix = '\0';  // '\0', 'a' or 'f'

  int major() const { return number / 10; }
  int minor() const { return number % 10; }
  std::string sass_name() const;  // "sm_90a"
  std::string ptx_name() const;   // "compute_90a"
};

// The architectures embedded in a build.
struct EmbeddedArchs {
  std::string configured;      // as CMake was given it, e.g. "80-real,86-real,...,120-virtual"
  std::vector<CudaArch> sass;  // machine code, runs as is on compatible GPUs
  std::vector<CudaArch> ptx;   // PTX, which the driver can compile for newer GPUs at load time
  bool listed = true;          // false for "native", "all", "all-major": only loading a kernel tells
};

// Parses CMake's CUDA_ARCHITECTURES syntax: entries "90" (SASS and PTX), "90-real" (SASS),
// "90-virtual" (PTX), "90a-real", "native", "all", "all-major", separated by ';' or ','.
// "none", "OFF" or "" gives an empty list. Unknown entries are skipped.
EmbeddedArchs parse_cuda_architectures(std::string_view configured);

// Whether machine code for `code` runs on a GPU of compute capability `gpu` (CUDA's rules: same
// major, code minor <= GPU minor; 'a' code only on exactly its capability).
bool sass_runs_on(CudaArch code, int gpu);
// Whether PTX for `code` can be JIT-compiled for a GPU of compute capability `gpu` (code <= GPU;
// 'a' only on exactly its capability, 'f' only within its major).
bool ptx_runs_on(CudaArch code, int gpu);

// How loading a real Surge kernel on a GPU went (cudaFuncGetAttributes), when it was tried.
enum class KernelLoad { NotTried, Loaded, NoImage, Failed };

struct GpuDescription {
  int index = 0;
  std::string name;                // "NVIDIA H200"
  int cc_major = 0, cc_minor = 0;  // compute capability
  std::size_t total_bytes = 0;
  std::size_t free_bytes = 0;  // 0 when not measured (measuring needs a CUDA context)
  int sm_count = 0;
  KernelLoad kernel_load = KernelLoad::NotTried;
  int loaded_binary_arch = 0;  // cudaFuncAttributes::binaryVersion when loaded, e.g. 90
  int loaded_ptx_arch = 0;     // cudaFuncAttributes::ptxVersion when loaded
  std::string load_error;      // CUDA's words when the load failed

  int arch() const { return cc_major * 10 + cc_minor; }
};

// A shared library Surge uses, as this machine has it at run time.
struct LibraryFact {
  std::string name;  // "cuBLASLt"
  bool found = false;
  std::string version;     // "13.1.0"; empty when not found
  std::string path;        // the file it was loaded from
  std::string needed_for;  // what in Surge needs it ("the CUDA learner"); empty when nothing does yet
  std::string install;     // how to install it, for the next step
};

// Everything the verdict looks at. Versions are CUDA's integers: 13000 is CUDA 13.0.
struct MachineDescription {
  bool cuda_built = false;           // this build contains the CUDA backend
  int runtime_version = 0;           // CUDA runtime this build links
  bool driver_found = false;         // an NVIDIA driver (libcuda) is installed
  int driver_cuda_version = 0;       // newest CUDA version the driver supports
  std::string driver_release;        // "580.65.06"; empty when unknown
  std::string device_query_error;    // why listing the GPUs failed; empty when it worked
  bool visible_devices_set = false;  // CUDA_VISIBLE_DEVICES is set ...
  std::string visible_devices;       // ... to this
  std::vector<GpuDescription> gpus;
  EmbeddedArchs archs;
  std::vector<LibraryFact> libraries;  // left empty by the quick probe
};

enum class GpuSupport { Native, PtxJit, None };
const char* to_string(GpuSupport support);  // "native", "ptx-jit", "none"

struct GpuVerdict {
  int index = 0;
  GpuSupport support = GpuSupport::None;
  std::string code;  // what it runs: "sm_90" (native), "compute_120" (PTX JIT); empty for none
};

// Info: all is well. Advice: works, but could be better. Problem: stops CUDA, on one GPU
// (gpu >= 0) or on the whole machine (gpu == -1).
enum class Severity { Info, Advice, Problem };
const char* to_string(Severity severity);  // "ok", "advice", "problem"

struct Finding {
  Severity severity = Severity::Info;
  int gpu = -1;           // the GPU it concerns, or -1 for the machine
  std::string what;       // the fact, in plain words
  std::string next_step;  // what to do about it; empty for Info
};

struct Diagnosis {
  bool cuda_usable = false;            // at least one GPU can run this build
  std::vector<GpuVerdict> gpus;        // one per described GPU, same order
  std::vector<Finding> findings;       // problems first, then advice, then the rest
  std::string headline;                // one line: the verdict as a whole
  std::string build_for_this_machine;  // the SURGE_CUDA_ARCHITECTURES value for exactly these GPUs

  // Why `gpu` cannot run this build and what to do (a Problem); `what` is empty when it can.
  Finding refusal(int gpu) const;
  int first_usable_gpu() const;  // -1 when none
};

Diagnosis diagnose(const MachineDescription& machine);

// The oldest driver of the branch that runs a CUDA runtime of this major version ("580.65.06" for 13).
std::string minimum_driver_for(int runtime_version);

}  // namespace surge
