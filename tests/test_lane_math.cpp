// The host's branch-free lane_sinf/lane_cosf/lane_sincosf against libm's sin and cos in double,
// rounded to float: within half an ulp plus a hair (the polynomials' and the reduction's own error),
// equal to each other, odd and even as sine and cosine are, and right at zeros, NaN and infinities.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "scenarios/cartpole.hpp"
#include "sim/lane_math.hpp"

namespace {

// |value - exact| in units of the exact result's float ulp; the exact value is libm's double.
double ulps(float value, double exact) {
  const double magnitude = std::max(std::abs(exact), static_cast<double>(std::numeric_limits<float>::min()));
  const double ulp = std::ldexp(1.0, std::ilogb(static_cast<float>(magnitude)) - 23);
  return std::abs(static_cast<double>(value) - exact) / ulp;
}

void check_against_libm(float x, double& worst) {
  float sin_x = 0.0f, cos_x = 0.0f;
  surge::lane_sincosf(x, sin_x, cos_x);
  REQUIRE(surge::lane_sinf(x) == sin_x);
  REQUIRE(surge::lane_cosf(x) == cos_x);
  REQUIRE(surge::lane_sinf(-x) == -sin_x);
  REQUIRE(surge::lane_cosf(-x) == cos_x);
  worst =
      std::max({worst, ulps(sin_x, std::sin(static_cast<double>(x))), ulps(cos_x, std::cos(static_cast<double>(x)))});
}

}  // namespace

TEST_CASE("lane_sinf and lane_cosf are correctly rounded but for a hair, up to 1e8", "[lane_math]") {
  double worst = 0.0;
  std::mt19937 generator(11);
  const float ranges[] = {1.0f, 4.0f, 100.0f, 1e4f, 1e6f, 1e8f};
  for (float range : ranges) {
    std::uniform_real_distribution<float> uniform(-range, range);
    for (int k = 0; k < 200000; ++k) check_against_libm(uniform(generator), worst);
  }
  // Near multiples of pi/2, where the reduction cancels most digits.
  for (int k = -2000; k <= 2000; ++k) {
    const float near = static_cast<float>(k * 1.5707963267948966);
    check_against_libm(near, worst);
    check_against_libm(std::nextafter(near, 1e30f), worst);
    check_against_libm(std::nextafter(near, -1e30f), worst);
  }
  INFO("worst error " << worst << " ulp");
  CHECK(worst < 0.5001);
}

TEST_CASE("lane_sinf and lane_cosf at zeros, tiny, huge and non-finite arguments", "[lane_math]") {
  CHECK(surge::lane_sinf(0.0f) == 0.0f);
  CHECK(!std::signbit(surge::lane_sinf(0.0f)));
  CHECK(std::signbit(surge::lane_sinf(-0.0f)));
  CHECK(surge::lane_cosf(0.0f) == 1.0f);
  CHECK(surge::lane_cosf(-0.0f) == 1.0f);
  CHECK(surge::lane_sinf(1e-30f) == 1e-30f);
  CHECK(surge::lane_sinf(std::numeric_limits<float>::denorm_min()) == std::numeric_limits<float>::denorm_min());
  const float huge[] = {1e9f, 3e12f, 1e20f, 3.4e38f};
  for (float x : huge) {  // no longer accurate, but bounded
    CHECK(std::abs(surge::lane_sinf(x)) <= 1.0f);
    CHECK(std::abs(surge::lane_cosf(x)) <= 1.0f);
  }
  const float non_finite[] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::quiet_NaN()};
  for (float x : non_finite) {
    CHECK(std::isnan(surge::lane_sinf(x)));
    CHECK(std::isnan(surge::lane_cosf(x)));
  }
}

// SmallAngleTrig claims LaneTrig's very bits for |x| <= kSmallAngle. Every 61st float of the range (about
// 3.5e7 of the 2.1e9 there are: the bit patterns step through every exponent and every run of mantissa
// bits), and the range's ends and their neighbours.
TEST_CASE("SmallAngleTrig gives LaneTrig's bits wherever |x| <= kSmallAngle", "[lane_math]") {
  const auto check = [](float x) {
    float small_sin = 0.0f, small_cos = 0.0f, lane_sin = 0.0f, lane_cos = 0.0f;
    surge::SmallAngleTrig::sincos(x, small_sin, small_cos);
    surge::LaneTrig::sincos(x, lane_sin, lane_cos);
    return std::bit_cast<std::uint32_t>(small_sin) == std::bit_cast<std::uint32_t>(lane_sin) &&
           std::bit_cast<std::uint32_t>(small_cos) == std::bit_cast<std::uint32_t>(lane_cos);
  };
  constexpr float bound = surge::SmallAngleTrig::kSmallAngle;
  const std::uint32_t last = std::bit_cast<std::uint32_t>(bound);
  std::int64_t checked = 0, differing = 0;
  for (std::uint32_t bits = 0; bits <= last; bits += 61) {
    const float x = std::bit_cast<float>(bits);
    differing += check(x) ? 0 : 1;
    differing += check(-x) ? 0 : 1;
    checked += 2;
  }
  const float ends[] = {bound,
                        std::nextafter(bound, 0.0f),
                        0.0f,
                        std::numeric_limits<float>::denorm_min(),
                        std::numeric_limits<float>::min(),
                        0.2094395f,
                        0.25f};
  for (float x : ends) {
    INFO("x = " << x);
    CHECK(check(x));
    CHECK(check(-x));
  }
  INFO(checked << " arguments checked");
  CHECK(differing == 0);
  // Beyond the range the shortcut is wrong (this is why CartPole::small_angles is checked first).
  CHECK(!check(3.0f));
  CHECK(surge::CartPole::small_angles(surge::CartPole::State{0.0f, 0.0f, bound, 0.0f}));
  CHECK(surge::CartPole::small_angles(surge::CartPole::State{0.0f, 0.0f, -bound, 0.0f}));
  CHECK(!surge::CartPole::small_angles(surge::CartPole::State{0.0f, 0.0f, std::nextafter(bound, 1.0f), 0.0f}));
  CHECK(!surge::CartPole::small_angles(
      surge::CartPole::State{0.0f, 0.0f, std::numeric_limits<float>::quiet_NaN(), 0.0f}));
}
