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
// A library call that failed: the detail is the library's name for the status and its own words.
[[noreturn]] void throw_status(const char* file, int line, const char* expression, const char* status_name,
                               const char* status_text);

}  // namespace surge

// Internal invariant: throws surge::Error with file, line and the failed expression.
#define SURGE_CHECK(cond, detail)                                           \
  do {                                                                      \
    if (!(cond)) ::surge::throw_error(__FILE__, __LINE__, #cond, (detail)); \
  } while (0)

// What every library check (SURGE_CUDA_CHECK, SURGE_CUBLAS_CHECK, ...) does: evaluates `expr` once and,
// when its status is not `success`, throws with the status's name and text from the library.
#define SURGE_DETAIL_CHECK_STATUS(expr, expression_text, Status, success, name_of, text_of)                       \
  do {                                                                                                            \
    const Status surge_status_ = (expr);                                                                          \
    if (surge_status_ != (success))                                                                               \
      ::surge::throw_status(__FILE__, __LINE__, expression_text, name_of(surge_status_), text_of(surge_status_)); \
  } while (0)
