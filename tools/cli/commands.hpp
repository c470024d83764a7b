#pragma once
#include <string>
#include <vector>

#include "sim/device.hpp"

namespace surge::cli {

using Args = std::vector<std::string>;

// Each returns the process exit code; bad input is thrown as InputError and becomes exit code 2.
int run_step(const Args& args);
int run_bench(const Args& args);
int run_train(const Args& args);
int run_eval(const Args& args);
// surge h5 (cmd_h5.cpp); in builds without HDF5 it answers that it cannot read rollout logs.
int run_h5(const Args& args);
// surge bench sweep and surge bench roofline (cmd_sweep.cpp, cmd_roofline.cpp), dispatched by run_bench.
int run_bench_sweep(const Args& args);
int run_bench_roofline(const Args& args);
int run_bench_train(const Args& args);  // cmd_bench_train.cpp

int run_doctor(const Args& args);
int run_config(const Args& args);  // cmd_config.cpp: surge config show
int run_plot(const Args& args);    // cmd_plot.cpp
int run_render(const Args& args);  // cmd_render.cpp: pictures and videos of a scenario

// Shared by the commands: the help text of --device, and --device's value -> a Device. "cuda" on a
// machine that cannot run it throws InputError with one line of the doctor's verdict; "auto" falls
// back to the CPU and says so on stderr, once per process, through say_device_notice(): a long command
// calls it as it starts work, main() after a command that ended without an input error (so that an
// error stays one line).
std::string device_help();
Device resolve_device(const std::string& text);
void say_device_notice();

}  // namespace surge::cli
