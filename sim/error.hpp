#pragma once
#include <stdexcept>
#include <string>

namespace surge {

// A failure inside Surge or a library it calls: carries where it happened and what failed.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad input from the user (a flag, a file, a value). The command line turns it into one line
// on stderr and exit code 2; the message names the bad value and the way out.
class InputError : public Error {
 public:
  using Error::Error;
};

[[noreturn]] void throw_error(const char* file, int line, const char* expression, const std::string& detail);

}  // namespace surge

// Internal invariant: throws surge::Error with file, line and the failed expression.
#define SURGE_CHECK(cond, detail)                                   \
  do {                                                              \
    if (!(cond)) ::surge::throw_error(__FILE__, __LINE__, #cond, (detail)); \
  } while (0)
