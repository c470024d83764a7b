// sim/format: how numbers, rates and byte counts read.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>

#include "sim/format.hpp"

using namespace surge;

TEST_CASE("format_number applies one printf pattern") {
  CHECK(format_number("%.3g", 1234.5) == "1.23e+03");
  CHECK(format_number("%.1f%%", 12.345) == "12.3%");
  CHECK(format_number("%.2fx", 1.5) == "1.50x");
}

TEST_CASE("format_precise keeps nine significant digits, enough for any float") {
  CHECK(format_precise(0.5) == "0.5");
  CHECK(format_precise(1.0 / 3.0) == "0.333333333");
  CHECK(format_precise(123456789012.0) == "1.23456789e+11");
  const float value = 0.1f;
  CHECK(std::strtof(format_precise(value).c_str(), nullptr) == value);
  CHECK(format_precise(std::numeric_limits<double>::quiet_NaN()) == "nan");
  CHECK(format_precise(-std::numeric_limits<double>::quiet_NaN()) == "nan");
  CHECK(format_precise(-INFINITY) == "-inf");
}

TEST_CASE("format_shortest reads back to the same value") {
  CHECK(format_shortest(0.1f) == "0.1");
  CHECK(format_shortest(0.1) == "0.1");
  CHECK(format_shortest(3.0f) == "3");
  CHECK(format_shortest(1e-7f) == "1e-07");
  const double third = 1.0 / 3.0;
  CHECK(std::strtod(format_shortest(third).c_str(), nullptr) == third);
}

TEST_CASE("format_compact shortens only very large and very small values") {
  CHECK(format_compact(0.0) == "0");
  CHECK(format_compact(250000.0) == "250000");
  CHECK(format_compact(0.125) == "0.125");
  CHECK(format_compact(2.5e6) == "2.5e+06");
  CHECK(format_compact(1.23456e-4) == "0.000123");
}

TEST_CASE("format_rate keeps four significant digits") {
  CHECK(format_rate(1234567.0) == "1.235e+06");
  CHECK(format_rate(987.0) == "987");
}

TEST_CASE("format_grouped groups thousands, sign included") {
  CHECK(format_grouped(0) == "0");
  CHECK(format_grouped(999) == "999");
  CHECK(format_grouped(1234567.4) == "1,234,567");
  CHECK(format_grouped(-1234) == "-1,234");
  CHECK(format_grouped(-123) == "-123");
}

TEST_CASE("format_duration switches to minutes at a minute") {
  CHECK(format_duration(42.04) == "42.0s");
  CHECK(format_duration(187.0) == "3m07s");
}

TEST_CASE("format_bytes picks the unit") {
  const std::pair<std::size_t, const char*> cases[] = {{0, "0 B"},
                                                       {1023, "1023 B"},
                                                       {1536, "1.5 KiB"},
                                                       {std::size_t(12) << 20, "12.0 MiB"},
                                                       {std::size_t(3) << 29, "1.50 GiB"}};
  for (const auto& [bytes, text] : cases) CHECK(format_bytes(bytes) == text);
}

TEST_CASE("format_significant gives four significant digits and keeps them") {
  CHECK(format_significant(-198.019397) == "-198.0");
  CHECK(format_significant(-83.89) == "-83.89");
  CHECK(format_significant(475.0) == "475.0");
  CHECK(format_significant(1234.0) == "1234");
  CHECK(format_significant(0.001234567) == "0.001235");
  CHECK(format_significant(1234567.0) == "1,235,000");
  CHECK(format_significant(-66304.0) == "-66,300");
  CHECK(format_significant(1e20) == "1.000e+20");
  CHECK(format_significant(std::nan("")) == "nan");
  CHECK(format_significant(0.0) == "0");
}

TEST_CASE("plural agrees with its count") {
  CHECK(plural(1, "episode") == "1 episode");
  CHECK(plural(0, "episode") == "0 episodes");
  CHECK(plural(2, "iteration") == "2 iterations");
}
