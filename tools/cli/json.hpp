#pragma once
// A minimal JSON writer for reports: objects of numbers, strings, booleans and nested values.
#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "sim/format.hpp"

namespace surge::cli {

inline std::string json_quote(const std::string& text) { return quoted_escaped(text); }

inline std::string json_number(double value) { return std::isfinite(value) ? format_number("%.10g", value) : "null"; }

// Builds one JSON object, keys in insertion order.
class JsonObject {
 public:
  JsonObject& add(const std::string& key, const std::string& value) { return raw(key, json_quote(value)); }
  JsonObject& add(const std::string& key, const char* value) { return raw(key, json_quote(value)); }
  JsonObject& add(const std::string& key, double value) { return raw(key, json_number(value)); }
  JsonObject& add(const std::string& key, std::int64_t value) { return raw(key, std::to_string(value)); }
  JsonObject& add(const std::string& key, std::uint64_t value) { return raw(key, std::to_string(value)); }
  JsonObject& add(const std::string& key, int value) { return raw(key, std::to_string(value)); }
  JsonObject& add(const std::string& key, bool value) { return raw(key, value ? "true" : "false"); }
  JsonObject& add(const std::string& key, const JsonObject& value) { return raw(key, value.str()); }
  // null when absent.
  template <typename T>
  JsonObject& add(const std::string& key, const std::optional<T>& value) {
    return value ? add(key, *value) : raw(key, "null");
  }
  JsonObject& add(const std::string& key, const std::vector<double>& values) {
    std::string text = "[";
    for (std::size_t k = 0; k < values.size(); ++k) text += (k ? ", " : "") + json_number(values[k]);
    return raw(key, text + "]");
  }
  JsonObject& add(const std::string& key, const std::vector<std::string>& values) {
    std::string text = "[";
    for (std::size_t k = 0; k < values.size(); ++k) text += (k ? ", " : "") + json_quote(values[k]);
    return raw(key, text + "]");
  }
  JsonObject& add_objects(const std::string& key, const std::vector<JsonObject>& values) {
    std::string text = "[";
    for (std::size_t k = 0; k < values.size(); ++k) text += (k ? ",\n  " : "\n  ") + values[k].str();
    return raw(key, text + (values.empty() ? "]" : "\n]"));
  }
  JsonObject& raw(const std::string& key, const std::string& json) {
    entries_.emplace_back(key, json);
    return *this;
  }
  std::string str() const {
    std::string out = "{";
    for (std::size_t k = 0; k < entries_.size(); ++k)
      out += (k ? ", " : "") + json_quote(entries_[k].first) + ": " + entries_[k].second;
    return out + "}";
  }

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
};

// The fields every benchmark report opens with: the Surge that wrote it, the benchmark, and what ran
// where (`what` left out when empty).
inline JsonObject benchmark_json(const std::string& surge_version, const std::string& benchmark,
                                 const std::string& what, const std::string& scenario, const std::string& device) {
  JsonObject json;
  json.add("surge_version", surge_version).add("benchmark", benchmark);
  if (!what.empty()) json.add("what", what);
  json.add("scenario", scenario).add("device", device);
  return json;
}

}  // namespace surge::cli
