#include "sim/format.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace surge {

std::string format_number(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

std::string format_precise(double value) {
  if (std::isnan(value)) return "nan";  // printf writes "-nan" for some NaNs
  return format_number("%.9g", value);
}

std::string format_shortest(float value) {
  char text[32];
  const auto result = std::to_chars(text, text + sizeof text, value);
  return std::string(text, result.ptr);
}

std::string format_shortest(double value) {
  char text[64];
  const auto result = std::to_chars(text, text + sizeof text, value);
  return std::string(text, result.ptr);
}

std::string format_compact(double value) {
  const bool extreme = std::fabs(value) >= 1e6 || (std::fabs(value) < 1e-3 && value != 0.0);
  return format_number(extreme ? "%.3g" : "%.6g", value);
}

std::string format_significant(double value) {
  if (std::isnan(value)) return "nan";
  if (value == 0.0) return "0";
  // Past 10^4, whole numbers grouped in thousands, rounded to four significant digits: 66,300.
  if (std::fabs(value) >= 1e4 && std::fabs(value) < 1e15) {
    const double unit = std::pow(10.0, std::floor(std::log10(std::fabs(value))) - 3);
    return format_grouped(std::round(value / unit) * unit);
  }
  // %#.4g keeps trailing zeros (475.0, not 475); the exponent form past 1e6 keeps its four digits.
  std::string text = format_number("%#.4g", value);
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}

std::string plural(long long count, const std::string& noun) {
  return std::to_string(count) + " " + noun + (count == 1 || count == -1 ? "" : "s");
}

std::string format_rate(double per_second) { return format_number("%.4g", per_second); }

std::string format_grouped(double value) {
  std::string digits = std::to_string(static_cast<long long>(std::llround(value)));
  for (int k = static_cast<int>(digits.size()) - 3; k > (digits[0] == '-' ? 1 : 0); k -= 3)
    digits.insert(static_cast<std::size_t>(k), 1,
                  ',');  // not insert(k, ","), which GCC 12 warns about falsely (-Wrestrict)
  return digits;
}

std::string format_duration(double seconds) {
  char text[32];
  if (seconds < 60)
    std::snprintf(text, sizeof text, "%.1fs", seconds);
  else
    std::snprintf(text, sizeof text, "%dm%02ds", static_cast<int>(seconds) / 60, static_cast<int>(seconds) % 60);
  return text;
}

std::string format_bytes(std::size_t bytes) {
  const double value = static_cast<double>(bytes);
  if (bytes < 1024) return std::to_string(bytes) + " B";
  if (bytes < (std::size_t(1) << 20)) return format_number("%.1f KiB", value / 1024.0);
  if (bytes < (std::size_t(1) << 30)) return format_number("%.1f MiB", value / (1024.0 * 1024.0));
  return format_number("%.2f GiB", value / (1024.0 * 1024.0 * 1024.0));
}

std::string format_excerpt(const std::string& text, std::size_t max_chars) {
  std::size_t end = std::min(text.size(), max_chars);
  while (end < text.size() && end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  std::string shown;
  for (std::size_t k = 0; k < end; ++k) {
    const unsigned char c = static_cast<unsigned char>(text[k]);
    if (c == '\n') {
      shown += "\\n";
    } else if (c == '\0') {
      shown += "\\0";
    } else if (c < 0x20 || c == 0x7F) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02X", static_cast<unsigned>(c));
      shown += escaped;
    } else {
      shown += static_cast<char>(c);
    }
  }
  return end < text.size() ? shown + "…" : shown;
}

std::string quoted_escaped(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned char>(c));
          out += buffer;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace surge
