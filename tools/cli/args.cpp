#include "tools/cli/args.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "sim/error.hpp"
#include "sim/format.hpp"

namespace surge::cli {
namespace {

// The text less the spaces and tabs around it.
std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// Digits from `at`; returns where they end.
std::size_t skip_digits(const std::string& text, std::size_t at) {
  while (at < text.size() && text[at] >= '0' && text[at] <= '9') ++at;
  return at;
}

}  // namespace

std::optional<long long> parse_integer_text(const std::string& text) {
  const std::string number = trimmed(text);
  const std::size_t start = !number.empty() && (number[0] == '+' || number[0] == '-') ? 1 : 0;
  if (start == number.size() || skip_digits(number, start) != number.size()) return std::nullopt;
  errno = 0;
  const long long value = std::strtoll(number.c_str(), nullptr, 10);
  if (errno == ERANGE) return std::nullopt;
  return value;
}

std::optional<double> parse_number_text(const std::string& text) {
  const std::string number = trimmed(text);
  std::size_t at = !number.empty() && (number[0] == '+' || number[0] == '-') ? 1 : 0;
  const std::size_t integer_end = skip_digits(number, at);
  bool digits = integer_end > at;
  at = integer_end;
  if (at < number.size() && number[at] == '.') {
    const std::size_t fraction_end = skip_digits(number, at + 1);
    digits = digits || fraction_end > at + 1;
    at = fraction_end;
  }
  if (digits && at < number.size() && (number[at] == 'e' || number[at] == 'E')) {
    std::size_t exponent = at + 1;
    if (exponent < number.size() && (number[exponent] == '+' || number[exponent] == '-')) ++exponent;
    const std::size_t exponent_end = skip_digits(number, exponent);
    at = exponent_end > exponent ? exponent_end : std::string::npos;
  }
  if (!digits || at != number.size()) return std::nullopt;
  const double value = std::strtod(number.c_str(), nullptr);
  if (!std::isfinite(value)) return std::nullopt;
  return value;
}

Command::Command(std::string path, std::string summary) : path_(std::move(path)), summary_(std::move(summary)) {}

Command& Command::option(const std::string& name, const std::string& value_name, const std::string& help,
                         const std::string& default_value, bool required) {
  specs_.push_back({name, value_name, help, default_value, false, required, false});
  return *this;
}

Command& Command::repeated(const std::string& name, const std::string& value_name, const std::string& help) {
  specs_.push_back({name, value_name, help, "", false, false, true});
  return *this;
}

Command& Command::flag(const std::string& name, const std::string& help) {
  specs_.push_back({name, "", help, "", true, false, false});
  return *this;
}

Command& Command::example(const std::string& line) {
  examples_.push_back(line);
  return *this;
}

Command& Command::note(const std::string& text) {
  notes_.push_back(text);
  return *this;
}

const Command::Spec* Command::find(const std::string& name) const {
  for (const Spec& spec : specs_)
    if (spec.name == name) return &spec;
  return nullptr;
}

std::string Command::complaint(const std::string& what) const {
  return "surge " + path_ + ": " + what + "; see 'surge " + path_ + " --help'";
}

std::string Command::named(const std::string& message) const {
  return message.rfind("surge ", 0) == 0 ? message : "surge " + path_ + ": " + message;
}

bool Command::parse(const std::vector<std::string>& args) {
  values_.clear();
  for (std::size_t k = 0; k < args.size(); ++k) {
    const std::string& arg = args[k];
    if (arg == "--help" || arg == "-h") return false;
    if (arg.rfind("--", 0) != 0) throw InputError(complaint("unexpected argument '" + format_excerpt(arg) + "'"));
    std::string name = arg.substr(2);
    std::optional<std::string> inline_value;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const Spec* spec = find(name);
    if (!spec) throw InputError(complaint("unknown option '--" + format_excerpt(name) + "'"));
    if (spec->is_flag) {
      if (inline_value) throw InputError(complaint("--" + name + " takes no value"));
      values_[name].push_back("1");
      continue;
    }
    std::string value;
    if (inline_value) {
      value = *inline_value;
    } else {
      if (k + 1 >= args.size()) throw InputError(complaint("--" + name + " needs a value (" + spec->value_name + ")"));
      value = args[++k];
      // "--out --help" is a forgotten value, not a folder named --help.
      const std::string next = value.rfind("--", 0) == 0 ? value.substr(2, value.find('=') - 2) : "";
      if (value == "-h" || next == "help" || (!next.empty() && find(next)))
        throw InputError(complaint("--" + name + " needs a value (" + spec->value_name + "), not the option '" +
                                   format_excerpt(value) + "'"));
    }
    if (!spec->is_repeated && values_.count(name)) throw InputError(complaint("--" + name + " was given twice"));
    values_[name].push_back(value);
  }
  for (const Spec& spec : specs_)
    if (spec.required && !values_.count(spec.name)) throw InputError(complaint("--" + spec.name + " is required"));
  return true;
}

bool Command::has(const std::string& name) const {
  if (values_.count(name)) return true;
  const Spec* spec = find(name);
  return spec && !spec->is_flag && !spec->default_value.empty();
}

std::string Command::get(const std::string& name) const {
  if (auto it = values_.find(name); it != values_.end()) return it->second.back();
  const Spec* spec = find(name);
  SURGE_CHECK(spec, "option --" + name + " was never declared");
  return spec->default_value;
}

std::vector<std::string> Command::get_all(const std::string& name) const {
  if (auto it = values_.find(name); it != values_.end()) return it->second;
  return {};
}

std::int64_t Command::get_int(const std::string& name, std::int64_t min_value, std::int64_t max_value) const {
  const std::string text = get(name);
  const std::optional<long long> value = parse_integer_text(text);
  if (!value) throw InputError(complaint("--" + name + " '" + format_excerpt(text) + "' is not an integer"));
  if (*value < min_value || *value > max_value)
    throw InputError(complaint("--" + name + " " + format_excerpt(text) + " is out of range [" +
                               std::to_string(min_value) + ", " + std::to_string(max_value) + "]"));
  return *value;
}

std::uint64_t Command::get_u64(const std::string& name) const {
  const std::string text = get(name);
  const std::string number = trimmed(text);
  const std::size_t start = !number.empty() && number[0] == '+' ? 1 : 0;
  errno = 0;
  const unsigned long long value = std::strtoull(number.c_str() + start, nullptr, 10);
  if (start == number.size() || skip_digits(number, start) != number.size() || errno == ERANGE)
    throw InputError(complaint("--" + name + " '" + format_excerpt(text) + "' is not a non-negative integer"));
  return value;
}

double Command::get_double(const std::string& name, double min_value, double max_value) const {
  const std::string text = get(name);
  const std::optional<double> value = parse_number_text(text);
  if (!value) throw InputError(complaint("--" + name + " '" + format_excerpt(text) + "' is not a number"));
  if (*value < min_value || *value > max_value) {
    std::ostringstream range;
    range << "[" << min_value << ", " << max_value << "]";
    throw InputError(complaint("--" + name + " " + format_excerpt(text) + " is out of range " + range.str()));
  }
  return *value;
}

bool Command::parse_or_print_usage(const std::vector<std::string>& args) {
  if (parse(args)) return true;
  std::cout << usage();
  return false;
}

std::string Command::usage() const {
  std::ostringstream out;
  out << "Usage: surge " << path_ << " [options]\n\n" << summary_ << "\n\nOptions:\n";
  std::size_t width = 0;
  auto left = [](const Spec& spec) { return "--" + spec.name + (spec.is_flag ? "" : " " + spec.value_name); };
  for (const Spec& spec : specs_) width = std::max(width, left(spec).size());
  width = std::max<std::size_t>(width, 10);
  for (const Spec& spec : specs_) {
    const std::string l = left(spec);
    out << "  " << l << std::string(width - l.size() + 2, ' ') << spec.help;
    if (spec.required) out << " (required)";
    if (!spec.default_value.empty()) out << " [default: " << spec.default_value << "]";
    if (spec.is_repeated) out << " (repeatable)";
    out << "\n";
  }
  out << "  --help" << std::string(width - 6 + 2, ' ') << "show this help\n";
  for (const std::string& n : notes_) out << "\n" << n << "\n";
  if (!examples_.empty()) {
    out << "\nExamples:\n";
    for (const std::string& e : examples_) out << "  " << e << "\n";
  }
  return out.str();
}

}  // namespace surge::cli
