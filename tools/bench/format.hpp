#pragma once
// One number as text in a printf pattern ("%.3g", "%.1f%%", "%.2fx"), for the reports' tables,
// labels and messages.
#include <cstdio>
#include <string>

namespace surge::throughput {

inline std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

}  // namespace surge::throughput
