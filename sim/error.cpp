#include "sim/error.hpp"

namespace surge {

void throw_error(const char* file, int line, const char* expression, const std::string& detail) {
  std::string message = std::string(file) + ":" + std::to_string(line) + ": check failed: " + expression;
  if (!detail.empty()) message += " (" + detail + ")";
  throw Error(message);
}

void throw_status(const char* file, int line, const char* expression, const char* status_name,
                  const char* status_text) {
  throw_error(file, line, expression, std::string(status_name) + ": " + status_text);
}

}  // namespace surge
