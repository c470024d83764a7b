#pragma once
// Numbers, rates and byte counts as text: the one place that decides how Surge prints them.
#include <cstddef>
#include <string>

namespace surge {

// One number through a printf pattern that takes one double: "%.3g", "%.1f%%", "%.2fx".
std::string format_number(const char* pattern, double value);

// Nine significant digits, so a float reads back exactly; NaN as "nan" whatever its sign.
// For CSV columns that other programs read.
std::string format_precise(double value);

// The shortest text that reads back to the same value.
std::string format_shortest(float value);
std::string format_shortest(double value);

// Six significant digits, three for very large or very small values: axis labels.
std::string format_compact(double value);

// Four significant digits for summaries people read: -198.0, -83.89, 475.0, 66,300 (grouped past 10^4).
std::string format_significant(double value);

// "1 episode", "2 episodes": a count and its noun, singular or plural.
std::string plural(long long count, const std::string& noun);

// Events per second, four significant digits: "1.235e+06".
std::string format_rate(double per_second);

// Thousands grouped: 1234567 -> "1,234,567" (rounded to a whole number).
std::string format_grouped(double value);

// "42.0s" under a minute, else "3m07s".
std::string format_duration(double seconds);

// "1.50 GiB", "12.0 MiB", "512 B".
std::string format_bytes(std::size_t bytes);

// Input echoed in a message: at most `max_chars` bytes of it (never cutting a UTF-8 character), then
// "…" where it was cut; control characters (a newline, a NUL) shown as \n, \0 or \xNN.
std::string format_excerpt(const std::string& text, std::size_t max_chars = 60);

// `text` in double quotes with quotes, backslashes and control characters (DEL included) escaped as
// \", \\, \n, \t, \r and \u00XX: a JSON string, and a TOML basic string, that reads back as `text`.
std::string quoted_escaped(const std::string& text);

}  // namespace surge
