// surge: the command line.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>

#include "rl/cpu_blas_core.hpp"
#include "rl/io/hdf5_read_guard.hpp"
#include "scenarios/registry.hpp"
#include "sim/device.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"
#include "sim/runtime_internal.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/version.hpp"

#ifndef SURGE_CUDA_ARCHS
#define SURGE_CUDA_ARCHS "none"
#endif

namespace {

const char* kUsage = R"(Usage: surge <command> [options]

Surge steps thousands to millions of reinforcement-learning environments in parallel, on a GPU
or on the CPU, and writes their observations straight into rollout buffers.

Commands:
  train           PPO on a scenario (or several seeds): a run folder with metrics.csv, config.toml,
                  checkpoint.h5 and TensorBoard events; a progress line and a summary
  config show     the effective training config as TOML, and where each value came from
  eval            a trained policy's mean return over K episodes, from its checkpoint
  plot            learning curves (one run, or seeds of a config as a band) as SVG
  render          a scenario's state as a PNG, or environments playing (or a policy) as a GIF or MP4
  step            one batched transition of given states (CSV in, CSV out)
  bench env       environment throughput: env-steps per second and bytes written per step
  bench train     end-to-end PPO training throughput, CUDA graphs on and off
  bench sweep     env-steps/s against the number of environments, the knee, a recommended N
  bench roofline  each training phase's FLOPs and bytes against this machine's measured roofs
  h5 info         a rollout log's contents: fields, iterations logged, environments
  h5 episodes     the episodes a rollout log holds, as CSV
  h5 export       one logged iteration (or more) as CSV
  doctor          what this machine offers: driver, CUDA, GPUs, architectures, libraries, and a verdict

Options:
  --help      show this help (every command takes --help too)
  --version   show the version and how this build was made

Scenarios and their physics parameters (for --physics and a config's [physics] table):
)";

void print_usage() {
  std::cout << kUsage;
  for (const std::string& name : surge::scenario_names()) {
    std::string line = "  " + name;
    line.resize(std::max<std::size_t>(line.size() + 2, 28), ' ');
    const surge::ScenarioSpec& spec = surge::scenario_spec(name);
    for (int j = 0; j < spec.param_count(); ++j) line += (j ? ", " : "") + std::string(spec.params[j].name);
    std::cout << line << "\n";
  }
}

// "surge train", "surge bench env", "surge h5 info": what the user typed, for the start of an error line.
std::string command_name(const std::vector<std::string>& args) {
  std::string name = "surge";
  if (args.empty()) return name;
  name += " " + args[0];
  const bool has_subcommands = args[0] == "bench" || args[0] == "h5" || args[0] == "config";
  if (has_subcommands && args.size() > 1 && !args[1].empty() && args[1][0] != '-') name += " " + args[1];
  return name;
}

// An error as one line on stderr: the command's name first (messages from shared code lack it), and a
// line break inside (a file name may hold one) written as \n.
std::string one_line(const std::string& message, const std::vector<std::string>& args) {
  std::string line = message.rfind("surge", 0) == 0 ? "" : command_name(args) + ": ";
  for (char c : message) line += c == '\n' ? std::string("\\n") : c == '\r' ? std::string("\\r") : std::string(1, c);
  return line;
}

void print_version() {
  const surge::CudaStatus& cuda = surge::cuda_status();
  std::cout << "surge " << SURGE_VERSION << "\n";
#if defined(SURGE_WITH_CUDA)
  std::cout << "CUDA backend: built with CUDA " << surge::cuda_version_string(cuda.runtime_version)
            << ", architectures " << SURGE_CUDA_ARCHS << "\n";
  std::cout << "GPU: "
            << (cuda.usable ? std::to_string(cuda.device_count) + " usable" : "none usable (" + cuda.reason + ")")
            << "\n";
#else
  (void)cuda;
  std::cout << "CUDA backend: not built (CPU backend only)\n";
#endif
}

}  // namespace

int main(int argc, char** argv) {
  surge::rl::rerun_with_openblas_core(argv);  // before anything: OpenBLAS has picked its kernels at load
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
      print_usage();
      if (!args.empty()) return 0;
      std::cerr << "surge: no command given; the commands are listed above\n";
      return 2;
    }
    if (args[0] == "--version" || args[0] == "version") {
      print_version();
      return 0;
    }
    surge::cpu_order();  // a bad SURGE_CPU_ORDER is refused before any command writes anything
    const std::string command = args[0];
    surge::rl::hdf5::set_guarded_read_prefix(command_name(args));
    const surge::cli::Args rest(args.begin() + 1, args.end());
    int (*run)(const surge::cli::Args&) = nullptr;
    if (command == "step") run = surge::cli::run_step;
    if (command == "bench") run = surge::cli::run_bench;
    if (command == "train") run = surge::cli::run_train;
    if (command == "eval") run = surge::cli::run_eval;
    if (command == "h5") run = surge::cli::run_h5;
    if (command == "doctor") run = surge::cli::run_doctor;
    if (command == "plot") run = surge::cli::run_plot;
    if (command == "config") run = surge::cli::run_config;
    if (command == "render") run = surge::cli::run_render;
    if (!run) {
      std::cerr << "surge: unknown command '" << surge::format_excerpt(command) << "'; see 'surge --help'\n";
      return 2;
    }
    const int code = run(rest);
    surge::cli::say_device_notice();  // if the command did not say it as it started
    return code;
  } catch (const surge::InputError& e) {
    std::cerr << one_line(e.what(), args) << "\n";
    return 2;
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the file system refused (a loop of links, a name too long): the input's doing, not a bug.
    std::cerr << one_line(e.what(), args) << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "surge: error: " << e.what() << "\n";
    return 1;
  }
}
