#include "sim/cuda_diagnosis.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "sim/device.hpp"

namespace surge {

std::string CudaArch::sass_name() const {
  return "sm_" + std::to_string(number) + (suffix ? std::string(1, suffix) : "");
}
std::string CudaArch::ptx_name() const {
  return "compute_" + std::to_string(number) + (suffix ? std::string(1, suffix) : "");
}

namespace {

std::string trim_lower(std::string_view text) {
  std::size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  std::string out(text.substr(begin, end - begin));
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

void add_unique(std::vector<CudaArch>& list, CudaArch arch) {
  for (const CudaArch& a : list)
    if (a.number == arch.number && a.suffix == arch.suffix) return;
  list.push_back(arch);
  std::sort(list.begin(), list.end(), [](CudaArch x, CudaArch y) {
    return x.number < y.number || (x.number == y.number && x.suffix < y.suffix);
  });
}

std::string join_names(const std::vector<CudaArch>& list, bool sass) {
  std::string out;
  for (const CudaArch& a : list) out += (out.empty() ? "" : ", ") + (sass ? a.sass_name() : a.ptx_name());
  return out;
}

// The oldest compute capability each CUDA major version still compiles for.
int oldest_arch_supported(int runtime_version) {
  const int major = runtime_version / 1000;
  if (major >= 13) return 75;
  if (major == 12) return 50;
  if (major == 11) return 35;
  return 0;
}

}  // namespace

EmbeddedArchs parse_cuda_architectures(std::string_view configured) {
  EmbeddedArchs archs;
  archs.configured = std::string(configured);
  std::size_t start = 0;
  while (start <= configured.size()) {
    std::size_t end = configured.find_first_of(";,", start);
    if (end == std::string_view::npos) end = configured.size();
    const std::string entry = trim_lower(configured.substr(start, end - start));
    start = end + 1;
    if (entry.empty() || entry == "none" || entry == "off") continue;
    if (entry == "native" || entry == "all" || entry == "all-major") {
      archs.listed = false;
      continue;
    }
    std::size_t k = 0;
    int number = 0;
    while (k < entry.size() && std::isdigit(static_cast<unsigned char>(entry[k])))
      number = number * 10 + (entry[k++] - '0');
    if (k == 0 || number < 10) continue;
    CudaArch arch{number, '\0'};
    if (k < entry.size() && (entry[k] == 'a' || entry[k] == 'f')) arch.suffix = entry[k++];
    const std::string kind = entry.substr(k);
    if (kind == "-real") {
      add_unique(archs.sass, arch);
    } else if (kind == "-virtual") {
      add_unique(archs.ptx, arch);
    } else if (kind.empty()) {
      add_unique(archs.sass, arch);
      add_unique(archs.ptx, arch);
    }
  }
  return archs;
}

bool sass_runs_on(CudaArch code, int gpu) {
  if (code.suffix == 'a') return code.number == gpu;
  return code.major() == gpu / 10 && code.minor() <= gpu % 10;
}

bool ptx_runs_on(CudaArch code, int gpu) {
  if (code.suffix == 'a') return code.number == gpu;
  if (code.suffix == 'f') return code.major() == gpu / 10 && code.minor() <= gpu % 10;
  return code.number <= gpu;
}

const char* to_string(GpuSupport support) {
  switch (support) {
    case GpuSupport::Native: return "native";
    case GpuSupport::PtxJit: return "ptx-jit";
    case GpuSupport::None: return "none";
  }
  return "none";
}

const char* to_string(Severity severity) {
  switch (severity) {
    case Severity::Info: return "ok";
    case Severity::Advice: return "advice";
    case Severity::Problem: return "problem";
  }
  return "problem";
}

std::string minimum_driver_for(int runtime_version) {
  // The oldest driver of the branch that introduced each major version; later minor versions of the
  // same major run on it through CUDA's minor version compatibility.
  switch (runtime_version / 1000) {
    case 13: return "580.65.06";
    case 12: return "525.60.13";
    case 11: return "450.80.02";
    default: return "";
  }
}

Diagnosis diagnose(const MachineDescription& m) {
  Diagnosis d;
  std::vector<Finding> problems, advice, info;
  const std::string runtime = cuda_version_string(m.runtime_version);
  const std::string min_driver = minimum_driver_for(m.runtime_version);
  const std::string driver_wanted =
      (min_driver.empty() ? std::string("a driver") : ">= " + min_driver) + " (one that supports CUDA " + runtime + ")";

  std::set<int> own_archs;
  for (const GpuDescription& gpu : m.gpus) own_archs.insert(gpu.arch());
  for (int arch : own_archs) {  // appends: GCC 12 warns falsely (-Wrestrict) about a chain of string +
    if (!d.build_for_this_machine.empty()) d.build_for_this_machine += ';';
    d.build_for_this_machine += std::to_string(arch);
    d.build_for_this_machine += "-real";
  }
  if (d.build_for_this_machine.empty()) d.build_for_this_machine = "native";

  // Machine-wide problems: any one of them stops CUDA altogether.
  auto block = [&](std::string what, std::string step) {
    problems.push_back({Severity::Problem, -1, std::move(what), std::move(step)});
  };
  const std::string driver_name = "the NVIDIA driver" + (m.driver_release.empty() ? "" : " " + m.driver_release);
  if (!m.cuda_built) {
    block("this build of Surge has no CUDA backend (it was configured without nvcc, or with SURGE_ENABLE_CUDA=OFF)" +
              (m.driver_found ? ", although " + driver_name + " is installed" : std::string()),
          "to use a GPU, install the CUDA toolkit and rebuild (tools/setup.sh), or run the container image built from "
          "the Dockerfile");
  } else if (!m.driver_found) {
    block("no NVIDIA driver is installed (libcuda.so.1 was not found)",
          "install an NVIDIA driver " + driver_wanted + "; in a container, start it with --gpus all");
  } else if (m.driver_cuda_version < m.runtime_version) {
    const std::string fact = driver_name + " supports CUDA " + cuda_version_string(m.driver_cuda_version) +
                             ", older than the CUDA " + runtime + " runtime this build uses";
    if (m.driver_cuda_version / 1000 < m.runtime_version / 1000) {
      block(fact, "update the driver to " + driver_wanted + ", or rebuild Surge with a CUDA " +
                      cuda_version_string(m.driver_cuda_version) + " toolkit");
    } else {
      advice.push_back({Severity::Advice, -1,
                        fact + ": machine code runs (minor version compatibility) but PTX cannot be JIT-compiled",
                        "update the driver to one that supports CUDA " + runtime});
    }
  }
  if (problems.empty() && m.gpus.empty()) {
    std::string what = "no CUDA GPU is visible";
    if (!m.device_query_error.empty()) what += " (" + m.device_query_error + ")";
    if (m.visible_devices_set) what += " with CUDA_VISIBLE_DEVICES='" + m.visible_devices + "'";
    block(what, std::string("check that nvidia-smi lists a GPU") +
                    (m.visible_devices_set ? "; unset or correct CUDA_VISIBLE_DEVICES" : "") +
                    "; in a container, start it with --gpus all");
  }
  const bool machine_blocked = !problems.empty();

  // Each GPU against the embedded architectures, and against a kernel load where one was tried.
  const bool jit_possible = m.driver_cuda_version >= m.runtime_version;
  for (const GpuDescription& gpu : m.gpus) {
    GpuVerdict verdict;
    verdict.index = gpu.index;
    if (machine_blocked) {
      d.gpus.push_back(verdict);
      continue;
    }
    const int cc = gpu.arch();
    const CudaArch* native = nullptr;
    const CudaArch* ptx = nullptr;
    for (const CudaArch& a : m.archs.sass)
      if (sass_runs_on(a, cc)) native = &a;  // sorted ascending: the last match is the newest
    for (const CudaArch& a : m.archs.ptx)
      if (ptx_runs_on(a, cc)) ptx = &a;
    if (native) {
      verdict.support = GpuSupport::Native;
      verdict.code = native->sass_name();
    } else if (ptx && jit_possible) {
      verdict.support = GpuSupport::PtxJit;
      verdict.code = ptx->ptx_name();
    }
    if (gpu.kernel_load == KernelLoad::Loaded && (verdict.support == GpuSupport::None || !m.archs.listed)) {
      verdict.support = GpuSupport::Native;
      verdict.code = "sm_" + std::to_string(gpu.loaded_binary_arch);
    } else if (gpu.kernel_load == KernelLoad::NoImage || gpu.kernel_load == KernelLoad::Failed) {
      verdict.support = GpuSupport::None;
      verdict.code.clear();
    }
    d.gpus.push_back(verdict);

    const std::string who = "GPU " + std::to_string(gpu.index) + " (" + gpu.name + ", sm_" + std::to_string(cc) + ")";
    const std::string rebuild = "rebuild with -DSURGE_CUDA_ARCHITECTURES=" + std::to_string(cc) + "-real";
    switch (verdict.support) {
      case GpuSupport::Native:
        info.push_back({Severity::Info, gpu.index, who + " runs native code (" + verdict.code + ")", ""});
        break;
      case GpuSupport::PtxJit:
        advice.push_back({Severity::Advice, gpu.index,
                          who + " has no native code in this build and runs " + verdict.code +
                              " PTX through the driver's JIT: the first start compiles every kernel (cached afterwards "
                              "in ~/.nv/ComputeCache)",
                          rebuild + " to embed native code for it and start fast"});
        break;
      case GpuSupport::None: {
        const int oldest = oldest_arch_supported(m.runtime_version);
        if (cc < oldest) {
          problems.push_back(
              {Severity::Problem, gpu.index,
               who + " is older than CUDA " + runtime + " supports (sm_" + std::to_string(oldest) + " and newer)",
               "use --device cpu, or rebuild with an older CUDA toolkit that supports sm_" + std::to_string(cc) +
                   " and -DSURGE_CUDA_ARCHITECTURES=" + std::to_string(cc) + "-real"});
        } else if (gpu.kernel_load == KernelLoad::Failed) {
          problems.push_back(
              {Severity::Problem, gpu.index, who + " could not load Surge's kernels (" + gpu.load_error + ")",
               "check the GPU's state with nvidia-smi (compute mode, errors, memory in use), or use another GPU"});
        } else {
          std::string why;
          if (!m.archs.listed) {
            why = "the architectures nvcc chose for it (" + m.archs.configured + ") do not include sm_" +
                  std::to_string(cc);
          } else {
            why = m.archs.sass.empty() ? "it embeds no machine code"
                                       : "it embeds machine code for " + join_names(m.archs.sass, true);
            if (m.archs.ptx.empty())
              why += " and no PTX";
            else if (!ptx)
              why += " and PTX only for " + join_names(m.archs.ptx, false) + ", newer than the GPU";
            else
              why += " and PTX (" + ptx->ptx_name() + ") that needs a driver supporting CUDA " + runtime +
                     " to JIT-compile";
          }
          if (gpu.kernel_load == KernelLoad::NoImage) why += " (loading a kernel failed: " + gpu.load_error + ")";
          problems.push_back({Severity::Problem, gpu.index, who + " cannot run this build: " + why,
                              rebuild + " (or =native, on this machine)"});
        }
        break;
      }
    }
  }

  for (const LibraryFact& library : m.libraries)
    if (!library.found && !library.needed_for.empty())
      advice.push_back({Severity::Advice, -1, library.name + " was not found; " + library.needed_for + " needs it",
                        library.install});

  int usable = 0, jit = 0;
  for (const GpuVerdict& v : d.gpus) {
    usable += v.support != GpuSupport::None;
    jit += v.support == GpuSupport::PtxJit;
  }
  d.cuda_usable = !machine_blocked && usable > 0;
  if (d.cuda_usable) {
    d.headline = "CUDA ready: " + std::to_string(usable) + " of " + std::to_string(m.gpus.size()) +
                 " GPU(s) can run Surge" + (jit ? " (" + std::to_string(jit) + " through PTX JIT)" : "") +
                 "; --device auto uses cuda:" + std::to_string(d.first_usable_gpu());
  } else {
    d.headline = "CUDA is not usable here: " + problems.front().what + ". Surge will use the CPU backend";
  }
  d.findings = std::move(problems);
  d.findings.insert(d.findings.end(), advice.begin(), advice.end());
  d.findings.insert(d.findings.end(), info.begin(), info.end());
  return d;
}

int Diagnosis::first_usable_gpu() const {
  for (const GpuVerdict& v : gpus)
    if (v.support != GpuSupport::None) return v.index;
  return -1;
}

Finding Diagnosis::refusal(int gpu) const {
  for (const Finding& f : findings)
    if (f.severity == Severity::Problem && f.gpu == -1) return f;
  const auto it = std::find_if(gpus.begin(), gpus.end(), [gpu](const GpuVerdict& v) { return v.index == gpu; });
  if (it == gpus.end())
    return {Severity::Problem, gpu,
            "there is no GPU " + std::to_string(gpu) + " (" + std::to_string(gpus.size()) + " visible)",
            "use cuda:0 .. cuda:" + std::to_string(gpus.size() - 1)};
  if (it->support != GpuSupport::None) return {};
  for (const Finding& f : findings)
    if (f.severity == Severity::Problem && f.gpu == gpu) return f;
  return {Severity::Problem, gpu, "GPU " + std::to_string(gpu) + " cannot run this build", "run 'surge doctor'"};
}

}  // namespace surge
