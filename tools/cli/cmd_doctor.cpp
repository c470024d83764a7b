// surge doctor: explains this machine to the user before anything fails on it.
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "rl/collective.hpp"
#include "rl/cpu_blas_core.hpp"
#include "rl/fused_mlp_bf16.hpp"
#include "rl/gemm.hpp"
#include "rl/precision.hpp"
#include "sim/cuda_diagnosis.hpp"
#include "sim/cuda_probe.hpp"
#include "sim/device.hpp"
#include "sim/format.hpp"
#include "sim/memory_plan.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/json.hpp"
#include "tools/cli/library_versions.hpp"
#include "tools/cli/train_ranks.hpp"
#include "tools/cli/version.hpp"

namespace surge::cli {
namespace {

constexpr int kSchemaVersion = 1;

struct OpenMpFacts {
  int max_threads = 0;
  int processors = 0;
  std::string omp_num_threads;  // the environment variable, empty when unset
};

OpenMpFacts read_openmp() {
  OpenMpFacts facts;
  facts.max_threads = omp_get_max_threads();
  facts.processors = omp_get_num_procs();
  if (const char* value = std::getenv("OMP_NUM_THREADS")) facts.omp_num_threads = value;
  return facts;
}

const char* to_string(KernelLoad load) {
  switch (load) {
    case KernelLoad::NotTried: return "not-tried";
    case KernelLoad::Loaded: return "loaded";
    case KernelLoad::NoImage: return "no-image";
    case KernelLoad::Failed: return "failed";
  }
  return "failed";
}

std::string arch_names(const std::vector<CudaArch>& list, bool sass) {
  std::string out;
  for (const CudaArch& a : list) out += (out.empty() ? "" : ", ") + (sass ? a.sass_name() : a.ptx_name());
  return out.empty() ? "none" : out;
}

std::vector<std::string> arch_list(const std::vector<CudaArch>& list, bool sass) {
  std::vector<std::string> out;
  for (const CudaArch& a : list) out.push_back(sass ? a.sass_name() : a.ptx_name());
  return out;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

std::string cmake_value(const std::string& archs) {
  return archs.find(';') == std::string::npos ? archs : "\"" + archs + "\"";
}

// The device "--device auto" would choose, after the full probe.
Device auto_choice(const Diagnosis& diagnosis) {
  return diagnosis.cuda_usable ? Device::cuda(diagnosis.first_usable_gpu()) : Device::cpu();
}
std::string auto_device(const Diagnosis& diagnosis) { return auto_choice(diagnosis).str(); }

// The CPU GEMM library and the kernels it runs, and whether surge chose them (rl/cpu_blas_core.hpp).
std::string blas_summary() {
  const std::string core = rl::openblas_core();
  if (core.empty()) return rl::cpu_gemm_library();
  const bool dynamic = rl::openblas_config().find("DYNAMIC_ARCH") != std::string::npos;
  const std::string upgrade = dynamic ? rl::openblas_core_upgrade(core) : std::string();
  const char* set = std::getenv("OPENBLAS_CORETYPE");
  const char* rerun = std::getenv("SURGE_OPENBLAS_RERUN");
  std::string text = rl::cpu_gemm_library() + ", " + core + " kernels";
  if (!upgrade.empty())
    return text + " (generic: OpenBLAS does not know this CPU; " + upgrade +
           " kernels fit it, and surge picks them unless SURGE_OPENBLAS_RERUN is set)";
  if (set && rerun && std::string(rerun) == "1")
    return text + " (picked by surge: OpenBLAS took this CPU for an older generic one)";
  if (set) return text + " (OPENBLAS_CORETYPE=" + set + ")";
  return text;
}

void print_row(const std::string& label, const std::string& value) {
  std::printf("  %-22s %s\n", label.c_str(), value.c_str());
}

void print_text(const MachineDescription& m, const Diagnosis& d, const OpenMpFacts& omp) {
  std::printf("surge doctor (Surge %s)\n\nCUDA\n", SURGE_VERSION);
  if (m.driver_found) {
    std::string driver = m.driver_release.empty() ? "installed" : m.driver_release;
    if (m.driver_cuda_version) driver += " (supports CUDA " + cuda_version_string(m.driver_cuda_version) + ")";
    print_row("NVIDIA driver", driver);
  } else {
    print_row("NVIDIA driver", "not found");
  }
  print_row("CUDA runtime of build",
            m.cuda_built ? cuda_version_string(m.runtime_version) : "none (this build has no CUDA backend)");
  if (m.visible_devices_set) print_row("CUDA_VISIBLE_DEVICES", "'" + m.visible_devices + "'");

  std::printf("\nGPUs\n");
  if (m.gpus.empty())
    std::printf("  none visible%s\n", m.device_query_error.empty() ? "" : (" (" + m.device_query_error + ")").c_str());
  for (std::size_t k = 0; k < m.gpus.size(); ++k) {
    const GpuDescription& gpu = m.gpus[k];
    const GpuVerdict& verdict = d.gpus[k];
    std::string memory = format_bytes(gpu.total_bytes);
    if (gpu.free_bytes) memory += " (" + format_bytes(gpu.free_bytes) + " free)";
    std::printf("  %d  %s, compute capability %d.%d (sm_%d), %s, %d SMs\n", gpu.index, gpu.name.c_str(), gpu.cc_major,
                gpu.cc_minor, gpu.arch(), memory.c_str(), gpu.sm_count);
    std::string runs = to_string(verdict.support);
    if (!verdict.code.empty()) runs += " (" + verdict.code + ")";
    if (gpu.kernel_load == KernelLoad::Loaded)
      runs += "; kernel loaded: binary sm_" + std::to_string(gpu.loaded_binary_arch) + ", PTX compute_" +
              std::to_string(gpu.loaded_ptx_arch);
    else if (gpu.kernel_load != KernelLoad::NotTried)
      runs += "; kernel load failed: " + gpu.load_error;
    std::printf("     runs this build: %s\n", runs.c_str());
    if (m.cuda_built) std::printf("     precisions: %s\n", joined(rl::cuda_precisions(gpu.cc_major)).c_str());
  }

  std::printf("\nArchitectures embedded in this build\n");
  print_row("configured", m.archs.configured.empty() || m.archs.configured == "none" ? "none (CPU backend only)"
                                                                                     : m.archs.configured);
  if (m.archs.listed) {
    print_row("SASS (native code)", arch_names(m.archs.sass, true));
    print_row("PTX (JIT-compiled)", arch_names(m.archs.ptx, false));
  } else {
    print_row("SASS and PTX", "chosen by nvcc at build time; a kernel load on each GPU tells");
  }

  std::printf("\nLibraries (as this machine has them)\n");
  for (const LibraryFact& library : m.libraries)
    print_row(library.name, library.found ? library.version + "  " + library.path : "not found");

  std::printf("\nCPU\n");
  print_row("OpenMP threads", std::to_string(omp.max_threads) + " (of " + std::to_string(omp.processors) +
                                  " processors; OMP_NUM_THREADS " +
                                  (omp.omp_num_threads.empty() ? "unset" : "=" + omp.omp_num_threads) + ")");

  print_row("BLAS", blas_summary());
  print_row("precisions",
            joined(rl::cpu_precisions()) + (rl::bf16_native_supported()
                                                ? " (bf16 on AVX-512 BF16)"
                                                : " (bf16 needs AVX-512 BF16, which this CPU or build lacks)"));
  const std::string mpi = rl::mpi_library();
  print_row("MPI", mpi.empty() ? "none: training runs as one process (apt-get install libopenmpi-dev, rebuild)"
                               : mpi + (rl::nccl_compiled() ? "; NCCL between GPUs" : "; CPU ranks only (no NCCL)"));
  const rl::RankPlace place = rl::rank_place();
  if (place.size > 1)
    print_row("this process", "rank " + std::to_string(place.rank) + " of " + std::to_string(place.size) + " on " +
                                  place.host + " (local rank " + std::to_string(place.local_rank) +
                                  "), --device auto trains on " + rank_device(auto_choice(d), place).str());

  std::printf("\nVerdict\n  %s\n", d.headline.c_str());
  if (!d.cuda_usable)
    std::printf("  --device auto runs on the CPU; --device cuda stops with exit code 2 and the problem below.\n");
  for (const Finding& f : d.findings) {
    std::printf("  [%s] %s\n", to_string(f.severity), f.what.c_str());
    if (!f.next_step.empty()) std::printf("      next: %s\n", f.next_step.c_str());
  }
  std::printf("\nTo build for exactly %s (a faster build, smaller binary):\n",
              m.gpus.empty() ? "one GPU" : "this machine's GPUs");
  std::printf("  cmake -S . -B build -DSURGE_CUDA_ARCHITECTURES=%s && cmake --build build -j\n",
              cmake_value(d.build_for_this_machine).c_str());
  if (m.gpus.empty())
    std::printf(
        "  (\"native\" means the GPUs of the machine that builds; or name one: 80-real A100, 86-real RTX 30,\n"
        "   89-real RTX 40 / L40, 90-real H100 / H200, 100-real B200, 120-real RTX 50)\n");
}

std::string json_text(const MachineDescription& m, const Diagnosis& d, const OpenMpFacts& omp) {
  JsonObject driver;
  driver.add("found", m.driver_found)
      .add("release", m.driver_release)
      .add("cuda_version", m.driver_cuda_version ? cuda_version_string(m.driver_cuda_version) : std::string())
      .add("cuda_version_int", m.driver_cuda_version);
  JsonObject runtime;
  runtime.add("cuda_version", m.cuda_built ? cuda_version_string(m.runtime_version) : std::string())
      .add("cuda_version_int", m.runtime_version);
  std::vector<JsonObject> gpus;
  for (std::size_t k = 0; k < m.gpus.size(); ++k) {
    const GpuDescription& gpu = m.gpus[k];
    JsonObject g;
    g.add("index", gpu.index)
        .add("name", gpu.name)
        .add("compute_capability", std::to_string(gpu.cc_major) + "." + std::to_string(gpu.cc_minor))
        .add("arch", gpu.arch())
        .add("total_bytes", static_cast<std::int64_t>(gpu.total_bytes))
        .add("free_bytes", static_cast<std::int64_t>(gpu.free_bytes))
        .add("sm_count", gpu.sm_count)
        .add("support", to_string(d.gpus[k].support))
        .add("code", d.gpus[k].code)
        .add("kernel_load", to_string(gpu.kernel_load))
        .add("loaded_binary_arch", gpu.loaded_binary_arch)
        .add("loaded_ptx_arch", gpu.loaded_ptx_arch)
        .add("load_error", gpu.load_error)
        .add("precisions", m.cuda_built ? rl::cuda_precisions(gpu.cc_major) : std::vector<std::string>{});
    gpus.push_back(g);
  }
  JsonObject archs;
  archs.add("configured", m.archs.configured)
      .add("listed", m.archs.listed)
      .add("sass", arch_list(m.archs.sass, true))
      .add("ptx", arch_list(m.archs.ptx, false));
  JsonObject libraries;
  for (const LibraryFact& library : m.libraries) {
    JsonObject l;
    l.add("found", library.found).add("version", library.version).add("path", library.path);
    libraries.add(library.name, l);
  }
  JsonObject openmp;
  openmp.add("max_threads", omp.max_threads)
      .add("processors", omp.processors)
      .add("omp_num_threads", omp.omp_num_threads);
  std::vector<JsonObject> findings;
  for (const Finding& f : d.findings) {
    JsonObject j;
    j.add("severity", to_string(f.severity)).add("gpu", f.gpu).add("what", f.what).add("next_step", f.next_step);
    findings.push_back(j);
  }
  JsonObject cpu;
  cpu.add("precisions", rl::cpu_precisions()).add("avx512_bf16", rl::bf16_native_supported());
  cpu.add("blas", rl::cpu_gemm_library()).add("blas_kernels", rl::openblas_core());
  cpu.add("blas_config", rl::openblas_config());
  JsonObject mpi;
  const rl::RankPlace place = rl::rank_place();
  mpi.add("library", rl::mpi_library())
      .add("nccl", rl::nccl_compiled())
      .add("rank", place.rank)
      .add("ranks", place.size)
      .add("host", place.host);
  JsonObject verdict;
  verdict.add("cuda_usable", d.cuda_usable)
      .add("auto_device", auto_device(d))
      .add("headline", d.headline)
      .add("build_for_this_machine", d.build_for_this_machine)
      .add_objects("findings", findings);

  JsonObject json;
  json.add("schema_version", kSchemaVersion)
      .add("surge_version", SURGE_VERSION)
      .add("cuda_built", m.cuda_built)
      .add("driver", driver)
      .add("runtime", runtime)
      .add("cuda_visible_devices", m.visible_devices_set ? m.visible_devices : std::string())
      .add_objects("gpus", gpus)
      .add("architectures", archs)
      .add("libraries", libraries)
      .add("openmp", openmp)
      .add("cpu", cpu)
      .add("mpi", mpi)
      .add("verdict", verdict);
  return json.str();
}

// The summary the kernel_report target writes into the build folder, beside bin/surge.
int print_kernel_report() {
  std::error_code error;
  const std::filesystem::path binary = std::filesystem::read_symlink("/proc/self/exe", error);
  const std::filesystem::path report = binary.parent_path().parent_path() / "kernel-report.txt";
  std::ifstream in(report);
  if (error || !in) {
    std::printf(
        "no kernel resource report beside this build (%s): CUDA builds write it with their\n"
        "kernel_report target (cmake --build <build> --target kernel_report)\n",
        report.string().c_str());
    return 0;
  }
  std::printf("Kernel resources (%s)\n", report.string().c_str());
  std::cout << in.rdbuf();
  return 0;
}

}  // namespace

int run_doctor(const Args& args) {
  Command cmd("doctor",
              "Explains what this machine offers Surge: the NVIDIA driver and the CUDA version it supports, the\n"
              "CUDA runtime this build uses, every GPU (compute capability, memory, SMs) and whether it runs this\n"
              "build natively, through PTX JIT or not at all, the libraries found, the OpenMP threads, and a\n"
              "verdict with a next step for every problem. Loads a kernel on every GPU to be sure.");
  cmd.flag("json", "print the same facts as one JSON object (schema in docs/doctor.md)")
      .flag("build", "print this build's kernel resource report instead (CUDA builds: kernel-report.txt)")
      .note(
          "Exits 0 whenever it could look, also on a machine without a GPU, where Surge runs on the CPU;\n"
          "scripts read verdict.cuda_usable from --json.")
      .example("surge doctor")
      .example("surge doctor --json > machine.json");
  if (!cmd.parse_or_print_usage(args)) return 0;
  if (cmd.flag_set("build")) return print_kernel_report();
  MachineDescription machine = describe_machine(ProbeDepth::Full);
  machine.libraries = probe_libraries(machine.runtime_version, machine.cuda_built);
  const Diagnosis diagnosis = diagnose(machine);
  const OpenMpFacts omp = read_openmp();
  if (cmd.flag_set("json")) {
    std::cout << json_text(machine, diagnosis, omp) << "\n";
  } else {
    print_text(machine, diagnosis, omp);
  }
  rl::finish_ranks();
  return 0;
}

}  // namespace surge::cli
