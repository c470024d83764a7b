#pragma once
#include <string>
#include <vector>

namespace surge::cli {

using Args = std::vector<std::string>;

// Each returns the process exit code; bad input is thrown as InputError and becomes exit code 2.
int run_step(const Args& args);
int run_bench(const Args& args);

// Shared by the commands: "cpu", "cuda", "auto" -> a Device, with the fallback note for auto.
std::string device_help();

}  // namespace surge::cli
