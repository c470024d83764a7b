// `surge doctor` and the checks behind --device: the verdict over machines described by hand (an old
// driver, a missing architecture, PTX only, no GPU, no driver, all good), the architecture list
// parser, the doctor on this machine in text and JSON, and how commands refuse or fall back.
#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "sim/cuda_diagnosis.hpp"
#include "sim/device.hpp"
#include "sim/error.hpp"
#include "tests/support/run_surge.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/library_versions.hpp"

namespace fs = std::filesystem;
using namespace surge;

namespace {

constexpr const char* kDefaultArchs = "80-real,86-real,89-real,90-real,100-real,120-real,120-virtual";

GpuDescription gpu(int index, const std::string& name, int major, int minor) {
  GpuDescription g;
  g.index = index;
  g.name = name;
  g.cc_major = major;
  g.cc_minor = minor;
  g.total_bytes = std::size_t(80) << 30;
  g.sm_count = 132;
  return g;
}

// A healthy CUDA 13.0 machine with one H200 and the default architectures.
MachineDescription healthy_machine() {
  MachineDescription m;
  m.cuda_built = true;
  m.runtime_version = 13000;
  m.driver_found = true;
  m.driver_cuda_version = 13000;
  m.driver_release = "580.65.06";
  m.gpus = {gpu(0, "NVIDIA H200", 9, 0)};
  m.archs = parse_cuda_architectures(kDefaultArchs);
  return m;
}

// The same machine with an RTX 5090 (sm_120) in place of the H200, and a build for `archs`.
MachineDescription rtx5090_machine(const char* archs) {
  MachineDescription m = healthy_machine();
  m.gpus = {gpu(0, "NVIDIA GeForce RTX 5090", 12, 0)};
  m.archs = parse_cuda_architectures(archs);
  return m;
}

std::size_t count_severity(const Diagnosis& d, Severity severity) {
  return static_cast<std::size_t>(std::count_if(d.findings.begin(), d.findings.end(),
                                                [severity](const Finding& f) { return f.severity == severity; }));
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

using surge::testing::Result;
using surge::testing::run_surge;

std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++count;
  return count;
}

}  // namespace

TEST_CASE("architecture lists parse as CMake writes them", "[doctor]") {
  const EmbeddedArchs defaults =
      parse_cuda_architectures("80-real;86-real;89-real;90-real;100-real;120-real;120-virtual");
  REQUIRE(defaults.sass.size() == 6);
  const int expected_sass[] = {80, 86, 89, 90, 100, 120};
  for (std::size_t k = 0; k < 6; ++k) CHECK(defaults.sass[k].number == expected_sass[k]);
  REQUIRE(defaults.ptx.size() == 1);
  CHECK(defaults.ptx[0].ptx_name() == "compute_120");
  CHECK(defaults.listed);

  const EmbeddedArchs both = parse_cuda_architectures("90");  // no suffix: machine code and PTX
  REQUIRE(both.sass.size() == 1);
  REQUIRE(both.ptx.size() == 1);
  CHECK(both.sass[0].sass_name() == "sm_90");

  const EmbeddedArchs specific = parse_cuda_architectures("90a-real, 100f-real");
  REQUIRE(specific.sass.size() == 2);
  CHECK(specific.sass[0].sass_name() == "sm_90a");
  CHECK(specific.sass[1].sass_name() == "sm_100f");
  CHECK(specific.ptx.empty());

  CHECK_FALSE(parse_cuda_architectures("native").listed);
  CHECK_FALSE(parse_cuda_architectures("all-major").listed);
  const EmbeddedArchs none = parse_cuda_architectures("none");
  CHECK(none.sass.empty());
  CHECK(none.ptx.empty());
  CHECK(none.listed);
}

TEST_CASE("CUDA's compatibility rules for machine code and PTX", "[doctor]") {
  const CudaArch sm80{80, '\0'}, sm86{86, '\0'}, sm90a{90, 'a'}, sm100f{100, 'f'}, sm120{120, '\0'};
  CHECK(sass_runs_on(sm80, 80));
  CHECK(sass_runs_on(sm80, 86));  // same major, lower minor
  CHECK(sass_runs_on(sm80, 89));
  CHECK_FALSE(sass_runs_on(sm86, 80));  // a higher minor does not run on a lower one
  CHECK_FALSE(sass_runs_on(sm80, 90));  // never across majors
  CHECK_FALSE(sass_runs_on(sm120, 100));
  CHECK(sass_runs_on(sm120, 121));
  CHECK(sass_runs_on(sm90a, 90));
  CHECK_FALSE(sass_runs_on(sm90a, 91));  // arch-specific code runs on exactly its capability
  CHECK(sass_runs_on(sm100f, 103));
  CHECK_FALSE(sass_runs_on(sm100f, 120));

  CHECK(ptx_runs_on(sm80, 120));  // PTX JIT-compiles forward, across majors
  CHECK(ptx_runs_on(sm120, 120));
  CHECK_FALSE(ptx_runs_on(sm120, 90));
  CHECK_FALSE(ptx_runs_on(sm90a, 100));
  CHECK(ptx_runs_on(sm100f, 103));
  CHECK_FALSE(ptx_runs_on(sm100f, 120));
}

TEST_CASE("verdict: all good", "[doctor]") {
  const Diagnosis d = diagnose(healthy_machine());
  CHECK(d.cuda_usable);
  REQUIRE(d.gpus.size() == 1);
  CHECK(d.gpus[0].support == GpuSupport::Native);
  CHECK(d.gpus[0].code == "sm_90");
  CHECK(count_severity(d, Severity::Problem) == 0);
  CHECK(count_severity(d, Severity::Advice) == 0);
  CHECK(d.first_usable_gpu() == 0);
  CHECK(d.refusal(0).what.empty());
  CHECK(d.build_for_this_machine == "90-real");
  CHECK(contains(d.headline, "CUDA ready"));
  // A GPU number that does not exist is refused with the range that does.
  const Finding missing = d.refusal(3);
  CHECK(contains(missing.what, "no GPU 3"));
  CHECK(contains(missing.next_step, "cuda:0"));
}

TEST_CASE("verdict: a driver older than the runtime", "[doctor]") {
  MachineDescription m = healthy_machine();
  m.driver_cuda_version = 12040;
  m.driver_release = "550.54.15";
  m.gpus.clear();  // CUDA cannot list GPUs with such a driver
  m.device_query_error = "cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version";
  const Diagnosis d = diagnose(m);
  CHECK_FALSE(d.cuda_usable);
  REQUIRE(count_severity(d, Severity::Problem) == 1);  // the driver, not also "no GPU visible"
  const Finding& f = d.findings.front();
  CHECK(f.severity == Severity::Problem);
  CHECK(f.gpu == -1);
  CHECK(contains(f.what, "550.54.15"));
  CHECK(contains(f.what, "CUDA 12.4"));
  CHECK(contains(f.what, "CUDA 13.0"));
  CHECK(contains(f.next_step, ">= 580.65.06"));
  CHECK(contains(f.next_step, "supports CUDA 13.0"));
  CHECK(d.refusal(0).what == f.what);
  CHECK(contains(d.headline, "CPU backend"));
}

TEST_CASE("verdict: a driver one minor version behind runs machine code but cannot JIT", "[doctor]") {
  MachineDescription m = healthy_machine();
  m.runtime_version = 13010;
  m.driver_cuda_version = 13000;
  m.gpus.push_back(gpu(1, "NVIDIA B300", 10, 3));    // native through sm_100
  m.gpus.push_back(gpu(2, "NVIDIA Future", 13, 0));  // only PTX would serve it
  const Diagnosis d = diagnose(m);
  CHECK(d.cuda_usable);
  CHECK(d.gpus[0].support == GpuSupport::Native);
  CHECK(d.gpus[1].support == GpuSupport::Native);
  CHECK(d.gpus[1].code == "sm_100");
  CHECK(d.gpus[2].support == GpuSupport::None);
  CHECK(contains(d.refusal(2).what, "needs a driver supporting CUDA 13.1"));
  CHECK(count_severity(d, Severity::Advice) >= 1);  // minor version compatibility is worth a word
}

TEST_CASE("verdict: a GPU newer than every embedded architecture, without PTX", "[doctor]") {
  MachineDescription m = rtx5090_machine("80-real;86-real;89-real;90-real");
  const Diagnosis d = diagnose(m);
  CHECK_FALSE(d.cuda_usable);
  CHECK(d.gpus[0].support == GpuSupport::None);
  const Finding refusal = d.refusal(0);
  CHECK(refusal.gpu == 0);
  CHECK(contains(refusal.what, "RTX 5090"));
  CHECK(contains(refusal.what, "sm_120"));
  CHECK(contains(refusal.what, "no PTX"));
  CHECK(contains(refusal.next_step, "-DSURGE_CUDA_ARCHITECTURES=120-real"));
  CHECK(d.build_for_this_machine == "120-real");
  CHECK(contains(d.headline, "CPU backend"));

  // PTX that is newer than the GPU does not help either.
  m.archs = parse_cuda_architectures("80-real;90-real;130-virtual");
  const Diagnosis newer = diagnose(m);
  CHECK(newer.gpus[0].support == GpuSupport::None);
  CHECK(contains(newer.refusal(0).what, "newer than the GPU"));
}

TEST_CASE("verdict: PTX only runs through the JIT, with advice to build for the card", "[doctor]") {
  MachineDescription m = rtx5090_machine("80-real;90-real;90-virtual");
  const Diagnosis d = diagnose(m);
  CHECK(d.cuda_usable);
  CHECK(d.gpus[0].support == GpuSupport::PtxJit);
  CHECK(d.gpus[0].code == "compute_90");
  CHECK(count_severity(d, Severity::Problem) == 0);
  REQUIRE(count_severity(d, Severity::Advice) == 1);
  const Finding& advice = d.findings.front();
  CHECK(advice.gpu == 0);
  CHECK(contains(advice.what, "JIT"));
  CHECK(contains(advice.next_step, "-DSURGE_CUDA_ARCHITECTURES=120-real"));
  CHECK(d.refusal(0).what.empty());
}

TEST_CASE("verdict: no GPU, no driver, no CUDA backend", "[doctor]") {
  SECTION("a driver but no GPU") {
    MachineDescription m = healthy_machine();
    m.gpus.clear();
    m.device_query_error = "cudaErrorNoDevice: no CUDA-capable device is detected";
    m.visible_devices_set = true;
    m.visible_devices = "";
    const Diagnosis d = diagnose(m);
    CHECK_FALSE(d.cuda_usable);
    const Finding f = d.refusal(0);
    CHECK(contains(f.what, "no CUDA GPU is visible"));
    CHECK(contains(f.what, "CUDA_VISIBLE_DEVICES=''"));
    CHECK(contains(f.next_step, "nvidia-smi"));
    CHECK(contains(f.next_step, "CUDA_VISIBLE_DEVICES"));
    CHECK(contains(f.next_step, "--gpus all"));
    CHECK(d.build_for_this_machine == "native");
  }
  SECTION("no driver") {
    MachineDescription m = healthy_machine();
    m.driver_found = false;
    m.driver_cuda_version = 0;
    m.driver_release.clear();
    m.gpus.clear();
    const Diagnosis d = diagnose(m);
    CHECK_FALSE(d.cuda_usable);
    REQUIRE(count_severity(d, Severity::Problem) == 1);
    CHECK(contains(d.findings.front().what, "no NVIDIA driver"));
    CHECK(contains(d.findings.front().next_step, ">= 580.65.06"));
  }
  SECTION("a build without the CUDA backend") {
    MachineDescription m;
    m.archs = parse_cuda_architectures("none");
    const Diagnosis d = diagnose(m);
    CHECK_FALSE(d.cuda_usable);
    CHECK(contains(d.findings.front().what, "no CUDA backend"));
    CHECK(contains(d.findings.front().next_step, "rebuild"));
    CHECK(contains(d.headline, "CPU backend"));
  }
}

TEST_CASE("verdict: a kernel load outweighs the architecture list", "[doctor]") {
  MachineDescription m = healthy_machine();
  m.gpus[0].kernel_load = KernelLoad::NoImage;
  m.gpus[0].load_error = "cudaErrorNoKernelImageForDevice: no kernel image is available for execution on the device";
  Diagnosis d = diagnose(m);
  CHECK(d.gpus[0].support == GpuSupport::None);
  CHECK(contains(d.refusal(0).what, "no kernel image"));

  // "native" lists nothing up front; a kernel that loads settles it.
  m.archs = parse_cuda_architectures("native");
  m.gpus[0].kernel_load = KernelLoad::NotTried;
  d = diagnose(m);
  CHECK(d.gpus[0].support == GpuSupport::None);
  m.gpus[0].kernel_load = KernelLoad::Loaded;
  m.gpus[0].loaded_binary_arch = 90;
  d = diagnose(m);
  CHECK(d.gpus[0].support == GpuSupport::Native);
  CHECK(d.gpus[0].code == "sm_90");
}

TEST_CASE("verdict: one unusable GPU among usable ones", "[doctor]") {
  MachineDescription m = healthy_machine();
  m.archs = parse_cuda_architectures("90-real");
  m.gpus = {gpu(0, "Tesla V100", 7, 0), gpu(1, "NVIDIA H200", 9, 0), gpu(2, "NVIDIA GeForce RTX 5090", 12, 0)};
  const Diagnosis d = diagnose(m);
  CHECK(d.cuda_usable);
  CHECK(d.first_usable_gpu() == 1);
  CHECK(d.refusal(1).what.empty());
  // The V100 is older than CUDA 13 supports: rebuilding for it with this toolkit would not help.
  CHECK(contains(d.refusal(0).what, "older than CUDA 13.0 supports"));
  CHECK(contains(d.refusal(0).next_step, "older CUDA toolkit"));
  CHECK(contains(d.refusal(2).next_step, "120-real"));
  CHECK(d.build_for_this_machine == "70-real;90-real;120-real");
  // Problems are listed before anything else.
  CHECK(d.findings[0].severity == Severity::Problem);
  CHECK(d.findings[1].severity == Severity::Problem);
  CHECK(d.findings.back().severity == Severity::Info);
}

TEST_CASE("verdict: a missing library someone needs is advice with an install step", "[doctor]") {
  MachineDescription m = healthy_machine();
  m.libraries.push_back({"cuBLASLt", false, "", "", "the CUDA learner", "apt-get install libcublas-13-0"});
  m.libraries.push_back({"cuDNN", false, "", "", "", "install cuDNN"});  // nothing needs it: no finding
  const Diagnosis d = diagnose(m);
  CHECK(d.cuda_usable);
  REQUIRE(count_severity(d, Severity::Advice) == 1);
  CHECK(contains(d.findings.front().what, "cuBLASLt"));
  CHECK(d.findings.front().next_step == "apt-get install libcublas-13-0");
}

TEST_CASE("library version numbers decode as the libraries define them", "[doctor]") {
  CHECK(cli::decode_cublas_version(130100) == "13.1.0");
  CHECK(cli::decode_cublas_version(120805) == "12.8.5");
  CHECK(cli::decode_cudnn_version(91900) == "9.19.0");
  CHECK(cli::decode_cudnn_version(8907) == "8.9.7");
  CHECK(cli::decode_curand_version(10400) == "10.4.0");
  CHECK(cli::decode_curand_version(10309) == "10.3.9");
}

TEST_CASE("surge doctor on this machine", "[doctor][cli]") {
  const Result r = run_surge("doctor");
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  for (const char* part : {"NVIDIA driver", "CUDA runtime of build", "GPUs", "Architectures embedded", "cuBLASLt",
                           "cuDNN", "cuRAND", "HDF5", "OpenMP threads", "Verdict", "-DSURGE_CUDA_ARCHITECTURES="})
    CHECK(contains(r.out, part));
  if (cuda_status().usable) {
    CHECK(contains(r.out, "CUDA ready"));
  } else {
    // CI and development machines have no GPU: the doctor says so plainly and names the fallback.
    CHECK(contains(r.out, "CPU backend"));
    CHECK(contains(r.out, "[problem]"));
    CHECK(contains(r.out, "next: "));
  }
}

TEST_CASE("surge doctor --build prints the build's kernel report, or says where it would be", "[doctor][cli]") {
  const Result r = run_surge("doctor --build");
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  // A CUDA build writes the report with its kernel_report target; a CPU build has none.
  CHECK((contains(r.out, "Kernel resources (") ? contains(r.out, "spilling: ")
                                               : contains(r.out, "no kernel resource report")));
}

TEST_CASE("surge doctor --json follows its schema", "[doctor][cli]") {
  const Result r = run_surge("doctor --json");
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j.at("schema_version").get<int>() == 1);
  CHECK(j.at("surge_version").is_string());
  CHECK(j.at("cuda_built").is_boolean());
  CHECK(j.at("cuda_visible_devices").is_string());
  for (const char* key : {"driver", "runtime", "architectures", "libraries", "openmp", "verdict"})
    CHECK(j.at(key).is_object());
  const auto& driver = j.at("driver");
  CHECK(driver.at("found").is_boolean());
  CHECK(driver.at("release").is_string());
  CHECK(driver.at("cuda_version").is_string());
  CHECK(driver.at("cuda_version_int").is_number_integer());
  CHECK(j.at("runtime").at("cuda_version").is_string());
  CHECK(j.at("runtime").at("cuda_version_int").is_number_integer());
  REQUIRE(j.at("gpus").is_array());
  for (const auto& g : j.at("gpus")) {
    for (const char* key : {"name", "compute_capability", "support", "code", "kernel_load", "load_error"})
      CHECK(g.at(key).is_string());
    for (const char* key :
         {"index", "arch", "total_bytes", "free_bytes", "sm_count", "loaded_binary_arch", "loaded_ptx_arch"})
      CHECK(g.at(key).is_number_integer());
    CHECK((g.at("support") == "native" || g.at("support") == "ptx-jit" || g.at("support") == "none"));
  }
  const auto& archs = j.at("architectures");
  CHECK(archs.at("configured").is_string());
  CHECK(archs.at("listed").is_boolean());
  CHECK(archs.at("sass").is_array());
  CHECK(archs.at("ptx").is_array());
  for (const char* name : {"cuBLASLt", "cuDNN", "cuRAND", "HDF5"}) {
    INFO(name);
    const auto& library = j.at("libraries").at(name);
    CHECK(library.at("found").is_boolean());
    CHECK(library.at("version").is_string());
    CHECK(library.at("path").is_string());
    if (library.at("found").get<bool>()) CHECK_FALSE(library.at("version").get<std::string>().empty());
  }
  CHECK(j.at("openmp").at("max_threads").get<int>() >= 1);
  CHECK(j.at("openmp").at("processors").get<int>() >= 1);
  CHECK(j.at("openmp").at("omp_num_threads").is_string());
  const auto& verdict = j.at("verdict");
  CHECK(verdict.at("cuda_usable").is_boolean());
  CHECK(verdict.at("auto_device").is_string());
  CHECK(verdict.at("headline").is_string());
  CHECK(verdict.at("build_for_this_machine").is_string());
  REQUIRE(verdict.at("findings").is_array());
  for (const auto& f : verdict.at("findings")) {
    const std::string severity = f.at("severity").get<std::string>();
    CHECK((severity == "ok" || severity == "advice" || severity == "problem"));
    CHECK(f.at("gpu").is_number_integer());
    CHECK(f.at("what").is_string());
    CHECK(f.at("next_step").is_string());
  }
  // The same facts as the process itself sees.
  CHECK(j.at("cuda_built").get<bool>() == cuda_status().compiled);
  CHECK(verdict.at("cuda_usable").get<bool>() == cuda_status().usable);
  CHECK(j.at("gpus").size() == static_cast<std::size_t>(cuda_status().device_count));
  if (!cuda_status().usable) {
    CHECK(verdict.at("auto_device") == "cpu");
    CHECK(verdict.at("findings").at(0).at("severity") == "problem");
  }
}

TEST_CASE("--device auto falls back to the CPU and says so once", "[doctor][device]") {
  if (cuda_status().usable) {
    CHECK(cli::resolve_device("auto").is_cuda());
    return;
  }
  // In process: however often a device is resolved and the note asked for, it appears once, and only
  // when asked for (a command asks once it is past its input checks, so that an error stays one line).
  std::ostringstream captured;
  std::streambuf* previous = std::cerr.rdbuf(captured.rdbuf());
  const Device first = cli::resolve_device("auto");
  const bool silent_until_asked = captured.str().empty();
  cli::say_device_notice();
  const Device second = cli::resolve_device("auto");
  cli::say_device_notice();
  std::cerr.rdbuf(previous);
  CHECK(silent_until_asked);
  CHECK(first.is_cpu());
  CHECK(second.is_cpu());
  CHECK(occurrences(captured.str(), "no usable GPU") == 1);
  CHECK(occurrences(captured.str(), "\n") == 1);
  CHECK(contains(captured.str(), cuda_status().reason));

  // And from the command line.
  const Result r = run_surge("bench env --device auto --num-envs 64 --steps 4 --repeats 1");
  INFO("stderr:\n" << r.err);
  CHECK(r.exit_code == 0);
  CHECK(occurrences(r.err, "no usable GPU") == 1);
  CHECK(contains(r.err, "running on the CPU"));
  CHECK(contains(r.out, "device                   cpu"));
  // Asking for the CPU outright says nothing about GPUs.
  const Result cpu = run_surge("bench env --device cpu --num-envs 64 --steps 4 --repeats 1");
  CHECK(cpu.exit_code == 0);
  CHECK(occurrences(cpu.err, "no usable GPU") == 0);
}

TEST_CASE("--device cuda on a machine that cannot run it stops with one line of the verdict", "[doctor][device]") {
  // cuda:99 exists on no machine, so this case also runs where GPUs do.
  for (const char* device : {"cuda", "cuda:99"}) {
    if (std::string(device) == "cuda" && cuda_status().usable) continue;
    for (const std::string& command :
         {std::string("bench env --num-envs 64 --steps 4 --repeats 1 --device ") + device,
          std::string("bench env --dry-run --device ") + device,
          std::string("step --scenario cartpole --input in.csv --output out.csv --device ") + device}) {
      const Result r = run_surge(command);
      INFO("surge " << command << "\nstderr: " << r.err);
      CHECK(r.exit_code == 2);
      CHECK(occurrences(r.err, "\n") == 1);
      // The command's name first, as on every error line, then the option.
      const std::string name = "surge " + command.substr(0, command.find(" --"));
      CHECK(r.err.rfind(name + ": --device " + device + ": ", 0) == 0);
      CHECK(contains(r.err, "--device cpu"));
      CHECK(contains(r.err, "surge doctor"));
      CHECK(r.out.empty());
    }
  }
  if (!cuda_status().usable) {
    // The line carries the verdict's own reason, the same one the doctor gives first.
    const Result r = run_surge("bench env --device cuda");
    CHECK(contains(r.err, cuda_status().reason));
    try {
      parse_device("cuda");
      FAIL("parse_device(\"cuda\") accepted a machine without a usable GPU");
    } catch (const InputError& e) {
      CHECK(contains(e.what(), cuda_status().reason));
    }
  }
}
