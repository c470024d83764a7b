#pragma once
// A small command-line parser with the error style Surge promises: one line that names the bad
// value and the way out (thrown as InputError, which main turns into exit code 2).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/error.hpp"

namespace surge::cli {

// Numbers in flags and CSV cells, one rule for both (TOML's, as --set and config files read them):
// spaces and tabs around the number are ignored, a leading + or - is allowed, and anything else
// (a space inside, a NUL, hex, inf, nan, a trailing letter) makes the text not a number.
// Decimal integers: [+-]digits. Decimal numbers: [+-]digits[.digits][e[+-]digits] (digits on at least
// one side of the point).
std::optional<long long> parse_integer_text(const std::string& text);
std::optional<double> parse_number_text(const std::string& text);

class Command {
 public:
  Command(std::string path, std::string summary);

  // --name VALUE (also --name=VALUE). An empty default means "not given unless passed".
  Command& option(const std::string& name, const std::string& value_name, const std::string& help,
                  const std::string& default_value = "", bool required = false);
  // --name VALUE, may be given several times.
  Command& repeated(const std::string& name, const std::string& value_name, const std::string& help);
  // --name, a switch.
  Command& flag(const std::string& name, const std::string& help);
  Command& example(const std::string& line);
  Command& note(const std::string& text);

  // Returns false when --help was asked for (usage then goes to stdout).
  bool parse(const std::vector<std::string>& args);
  // parse(), and on --help the usage printed to stdout: a command then returns 0 at once.
  bool parse_or_print_usage(const std::vector<std::string>& args);

  bool has(const std::string& name) const;
  bool flag_set(const std::string& name) const { return has(name); }
  std::string get(const std::string& name) const;
  std::vector<std::string> get_all(const std::string& name) const;
  std::int64_t get_int(const std::string& name, std::int64_t min_value, std::int64_t max_value) const;
  std::uint64_t get_u64(const std::string& name) const;
  double get_double(const std::string& name, double min_value, double max_value) const;
  std::string usage() const;
  // An InputError message in the house style: "surge <path>: <what>; see 'surge <path> --help'".
  std::string complaint(const std::string& what) const;
  // `message` as the command says it: "surge <path>: <message>", unless it already starts with "surge ".
  std::string named(const std::string& message) const;
  // Runs `body`, and names this command in front of any InputError it throws (named()).
  template <class Body>
  auto naming_errors(Body&& body) const -> decltype(body()) {
    try {
      return body();
    } catch (const InputError& error) {
      throw InputError(named(error.what()));
    }
  }

 private:
  struct Spec {
    std::string name, value_name, help, default_value;
    bool is_flag = false, required = false, is_repeated = false;
  };
  const Spec* find(const std::string& name) const;

  std::string path_, summary_;
  std::vector<Spec> specs_;
  std::vector<std::string> examples_, notes_;
  std::map<std::string, std::vector<std::string>> values_;
};

}  // namespace surge::cli
