#pragma once
// What the standalone benchmark programs (bench_cnn, bench_conv_onednn) share: the median, the load
// average they report beside it, and a main() that turns errors into the command-line convention.
#include <algorithm>
#include <exception>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "sim/error.hpp"

namespace surge::bench {

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

// "1.05 0.98 0.90" from /proc/loadavg, or "unknown".
inline std::string load_average() {
  std::ifstream file("/proc/loadavg");
  std::string one, five, fifteen;
  file >> one >> five >> fifteen;
  return one.empty() ? "unknown" : one + " " + five + " " + fifteen;
}

// Runs `run`; bad input becomes "NAME: message" on stderr and exit code 2, any other error exit code 1.
template <class Run>
int standalone_main(const char* name, const Run& run) {
  try {
    return run();
  } catch (const InputError& error) {
    std::cerr << name << ": " << error.what() << "\n";
    return 2;
  } catch (const std::exception& error) {
    std::cerr << name << ": " << error.what() << "\n";
    return 1;
  }
}

}  // namespace surge::bench
