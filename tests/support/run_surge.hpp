#pragma once
// Running the built `surge` program (or another test program) from a test: exit code, stdout and
// stderr, with no input.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace surge::testing {

struct Result {
  int exit_code = -1;
  std::string out, err;
  // Both streams, stdout first: for checks that do not care which one a line went to.
  std::string output() const { return out + err; }
};

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline std::size_t line_count(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

// Runs `program` with `arguments` (quoted by the caller where needed) through the shell.
inline Result run_program(const std::string& program, const std::string& arguments) {
  static int counter = 0;
  const std::filesystem::path base = std::filesystem::temp_directory_path() /
                                     ("surge_test_run_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  const std::filesystem::path out = base.string() + ".out", err = base.string() + ".err";
  const std::string command =
      "'" + program + "' " + arguments + " >'" + out.string() + "' 2>'" + err.string() + "' </dev/null";
  const int status = std::system(command.c_str());
  Result result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = read_text(out);
  result.err = read_text(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return result;
}

inline Result run_surge(const std::string& arguments) { return run_program(SURGE_BINARY, arguments); }

}  // namespace surge::testing
