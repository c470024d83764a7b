// The host's branch-free lane_sinf/lane_cosf/lane_sincosf against libm's sin and cos in double,
// rounded to float: within half an ulp plus a hair (the polynomials' and the reduction's own error),
// equal to each other, odd and even as sine and cosine are, and right at zeros, NaN and infinities.
#include <catch2/catch.hpp>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "scenarios/cartpole.hpp"
#include "sim/lane_math.hpp"
#include "sim/select_bits.hpp"

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

// SmallAngleTrig claims LaneTrig's very bits for |x| <= kSmallAngle, and its polynomials are shorter than
// LaneTrig's, which no argument shows: so every float from 0 to the bound (about 1.05e9, a few seconds) is
// checked against LaneTrig's polynomials for k = 0 (where sincos_branch_free's reduction gives r = x, exactly).
// The negative ones follow: for x != 0 both forms are odd (sine) and even (cosine) to the bit, as negation
// commutes with IEEE products and with sums that are not exactly zero (none is, here); zero's sign comes from
// the `x == 0` select, and -0 is among the ends checked below. Then every 61st float of the range, both signs,
// and the ends and their neighbours, against LaneTrig itself.
TEST_CASE("SmallAngleTrig gives LaneTrig's bits wherever |x| <= kSmallAngle", "[lane_math]") {
  const auto same = [](float a, float b) { return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b); };
  const auto check = [&](float x) {
    float small_sin = 0.0f, small_cos = 0.0f, lane_sin = 0.0f, lane_cos = 0.0f;
    surge::SmallAngleTrig::sincos(x, small_sin, small_cos);
    surge::LaneTrig::sincos(x, lane_sin, lane_cos);
    return same(small_sin, lane_sin) && same(small_cos, lane_cos);
  };
  constexpr float bound = surge::SmallAngleTrig::kSmallAngle;
  const std::uint32_t last = std::bit_cast<std::uint32_t>(bound);
  // Counted without a branch, so that the loop vectorises.
  std::int64_t differing = 0;
  for (std::uint32_t bits = 0; bits <= last; ++bits) {
    const double r = static_cast<double>(std::bit_cast<float>(bits));
    using namespace surge::lane_math_detail;
    const std::uint32_t sin_bits = std::bit_cast<std::uint32_t>(static_cast<float>(sin_poly(r))) ^
                                   std::bit_cast<std::uint32_t>(static_cast<float>(sin_poly_small(r)));
    const std::uint32_t cos_bits = std::bit_cast<std::uint32_t>(static_cast<float>(cos_poly(r))) ^
                                   std::bit_cast<std::uint32_t>(static_cast<float>(cos_poly_small(r)));
    differing += (sin_bits | cos_bits) != 0 ? 1 : 0;
  }
  INFO(std::int64_t{last} + 1 << " floats checked against the long polynomials");
  CHECK(differing == 0);
  CHECK(same(surge::lane_math_detail::sincos_small(-0.2f).sin, -surge::lane_math_detail::sincos_small(0.2f).sin));
  std::int64_t sampled_differing = 0;
  for (std::uint32_t bits = 0; bits <= last; bits += 61) {
    const float x = std::bit_cast<float>(bits);
    sampled_differing += check(x) ? 0 : 1;
    sampled_differing += check(-x) ? 0 : 1;
  }
  CHECK(sampled_differing == 0);
  const float ends[] = {bound,
                        std::nextafter(bound, 0.0f),
                        0.0f,
                        std::numeric_limits<float>::denorm_min(),
                        std::numeric_limits<float>::min(),
                        0.2094395f};
  for (float x : ends) {
    INFO("x = " << x);
    CHECK(check(x));
    CHECK(check(-x));
  }
  // The short polynomials are exact only so far: the first float where the sine's differs lies just beyond.
  CHECK(!same(surge::lane_math_detail::sincos_small(0.25516003f).sin,
              static_cast<float>(surge::lane_math_detail::sin_poly(0.25516003f))));
  // Beyond the range the shortcut is wrong (this is why SmallAngleTrig::covers is checked first).
  CHECK(!check(3.0f));
  CHECK(surge::SmallAngleTrig::covers(bound));
  CHECK(surge::SmallAngleTrig::covers(-bound));
  CHECK(!surge::SmallAngleTrig::covers(std::nextafter(bound, 1.0f)));
  CHECK(!surge::SmallAngleTrig::covers(std::nextafter(-bound, -1.0f)));
  CHECK(!surge::SmallAngleTrig::covers(std::numeric_limits<float>::quiet_NaN()));
  CHECK(surge::CartPole::step_angle(surge::CartPole::State{1.0f, 2.0f, 0.125f, 4.0f}) == 0.125f);
}

TEST_CASE("CartPole's step given SmallAngleTrig's sine and cosine gives LaneTrig's step, bit for bit", "[lane_math]") {
  // GivenSinCos, as the CPU rollout hands the values of its pass of sines and cosines to the step.
  std::mt19937 draw(17);
  std::uniform_real_distribution<float> position(-2.4f, 2.4f), speed(-3.0f, 3.0f), angle(-0.25f, 0.25f);
  const surge::CartPole::Params p{9.8f, 1.0f, 0.1f, 0.5f, 10.0f, 0.02f};  // the defaults, in kParams' order
  for (int k = 0; k < 20000; ++k) {
    const surge::CartPole::State start{position(draw), speed(draw), angle(draw), speed(draw)};
    const std::int32_t action = k & 1;
    surge::CartPole::State lane = start, given = start;
    const surge::StepResult lane_result = surge::CartPole::step(lane, p, action);
    float sin_x = 0.0f, cos_x = 0.0f;
    surge::SmallAngleTrig::sincos(surge::CartPole::step_angle(start), sin_x, cos_x);
    const surge::StepResult given_result =
        surge::CartPole::step(given, p, action, surge::GivenSinCos{surge::CartPole::step_angle(start), sin_x, cos_x});
    REQUIRE(std::bit_cast<std::array<std::uint32_t, 4>>(given) == std::bit_cast<std::array<std::uint32_t, 4>>(lane));
    REQUIRE(given_result.reward == lane_result.reward);
    REQUIRE(given_result.terminated == lane_result.terminated);
  }
}

namespace {

template <class T>
bool same_select(bool take, T a, T b) {
  const T expected = take ? a : b, got = surge::select_bits(take, a, b);
  return std::memcmp(&expected, &got, sizeof(T)) == 0;
}

}  // namespace

TEST_CASE("select_bits is the ternary, bit for bit", "[lane_math]") {
  const float floats[] = {0.0f,
                          -0.0f,
                          1.5f,
                          std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::denorm_min(),
                          std::bit_cast<float>(0x7fc01234u),   // a quiet NaN with a payload
                          std::bit_cast<float>(0xff801234u)};  // a signalling one, negative
  const double doubles[] = {0.0, -0.0, -2.25, std::bit_cast<double>(0x7ff8000000abcdefull),
                            std::numeric_limits<double>::denorm_min()};
  const std::int32_t ints[] = {0, -1, 7, std::numeric_limits<std::int32_t>::min()};
  const std::uint64_t words[] = {0, 4, ~0ull, 1ull << 63};
  for (bool take : {false, true}) {
    for (float a : floats)
      for (float b : floats) CHECK(same_select(take, a, b));
    for (double a : doubles)
      for (double b : doubles) CHECK(same_select(take, a, b));
    for (std::int32_t a : ints)
      for (std::int32_t b : ints) CHECK(same_select(take, a, b));
    for (std::uint64_t a : words)
      for (std::uint64_t b : words) CHECK(same_select(take, a, b));
  }
}
