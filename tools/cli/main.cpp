// surge: the command line.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>

#include "scenarios/registry.hpp"
#include "sim/device.hpp"
#include "sim/error.hpp"
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
  step        one batched transition of given states (CSV in, CSV out)
  bench env   environment throughput: env-steps per second and bytes written per step
  train       PPO on a scenario: metrics.csv, a progress line and a summary
  eval        a trained policy's mean return over K episodes, from its checkpoint
  h5          read a rollout log: info, episodes, export as CSV
  doctor      what this machine offers: driver, CUDA, GPUs, architectures, libraries, and a verdict
  plot        a training run's learning curve (return against steps and wall time) as SVG

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

// "surge train", or "surge bench env" for a command with subcommands: the name errors start with.
std::string command_path(const std::vector<std::string>& args) {
  if (args.empty()) return "surge";
  std::string path = "surge " + args[0];
  if ((args[0] == "bench" || args[0] == "h5") && args.size() > 1 && args[1].rfind("-", 0) != 0) path += " " + args[1];
  return path;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
      print_usage();
      return args.empty() ? 2 : 0;
    }
    if (args[0] == "--version" || args[0] == "version") {
      print_version();
      return 0;
    }
    surge::cpu_order();  // a bad SURGE_CPU_ORDER is refused before any command writes anything
    const std::string command = args[0];
    const surge::cli::Args rest(args.begin() + 1, args.end());
    if (command == "step") return surge::cli::run_step(rest);
    if (command == "bench") return surge::cli::run_bench(rest);
    if (command == "train") return surge::cli::run_train(rest);
    if (command == "eval") return surge::cli::run_eval(rest);
    if (command == "h5") return surge::cli::run_h5(rest);
    if (command == "doctor") return surge::cli::run_doctor(rest);
    if (command == "plot") return surge::cli::run_plot(rest);
    std::cerr << "surge: unknown command '" << command << "'; see 'surge --help'\n";
    return 2;
  } catch (const surge::InputError& e) {
    // Errors thrown below a command (readers, parsers) do not know which command called them: say it.
    const std::string message = e.what();
    if (message.rfind("surge", 0) != 0) std::cerr << command_path(args) << ": ";
    std::cerr << message << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "surge: error: " << e.what() << "\n";
    return 1;
  }
}
