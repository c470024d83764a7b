#pragma once
// What the libFuzzer targets share: the input as a file (the readers take paths), and the contract every
// reader keeps on bad input: an InputError (exit code 2 in the program) and nothing else. Any other
// exception is a crash here, as it would be exit code 1 there.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "sim/error.hpp"

namespace surge::fuzz {

// A file of this process's own, rewritten with each input.
inline const std::string& input_path(const char* suffix) {
  static const std::string path = [&] {
    const char* folder = std::getenv("TMPDIR");
    return std::string(folder ? folder : "/tmp") + "/surge-fuzz-" + std::to_string(::getpid()) + suffix;
  }();
  return path;
}

inline const std::string& write_input(const std::uint8_t* data, std::size_t size, const char* suffix) {
  const std::string& path = input_path(suffix);
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (!file) std::abort();
  if (size && std::fwrite(data, 1, size, file) != size) std::abort();
  std::fclose(file);
  return path;
}

// SURGE_FUZZ_EXCEPTIONS=any lets any std::exception pass, to look past a known exit-1 bug for memory errors.
inline bool any_exception_passes() {
  static const bool any = [] {
    const char* value = std::getenv("SURGE_FUZZ_EXCEPTIONS");
    return value && std::string(value) == "any";
  }();
  return any;
}

// Runs `read`; an InputError is the reader's answer to bad input, anything else escapes and aborts.
template <class Read>
void expect_input_error_only(Read&& read) {
  try {
    read();
  } catch (const InputError&) {
  } catch (const std::exception& e) {
    if (any_exception_passes()) return;
    std::fprintf(stderr, "fuzz: a bad input threw something other than InputError: %s\n", e.what());
    std::abort();
  }
}

}  // namespace surge::fuzz
