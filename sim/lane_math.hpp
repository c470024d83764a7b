#pragma once
// sinf and cosf for per-environment code. On the device they are CUDA's own sinf and cosf. On the host
// they are computed branch-free, so that a loop stepping many environments side by side vectorises
// (libm's sinf is a call the compiler cannot vectorise), and a scalar call gives the very same bits
// as a lane of the vectorised loop.
//
// Host method: in double precision, x = k pi/2 + r with |r| <= pi/4 (pi/2 split in three parts, the
// first two with 27 significant bits so that k times either is exact for |k| < 2^26); Taylor
// polynomials of sin r to r^11 and cos r to r^12, whose truncation errors (< 2e-11 on |r| <= pi/4) are
// far below a float's half ulp; the quadrant k mod 4 picks which and its sign. The result is the
// correctly rounded float except within ~1e-11 of a rounding boundary. The reduction is exact for
// |x| < 2^26 pi/2 (about 1e8, where a float's spacing is already 8); beyond that it loses accuracy,
// gradually and then entirely (the result stays within [-1, 1]). NaN and infinities give NaN, as
// sinf does.
#include <cassert>
#include <cmath>
#include <cstdint>

#include "sim/hd.hpp"

namespace surge {

namespace lane_math_detail {

struct SinCos {
  float sin, cos;
};

// The Taylor coefficients of sin r (kSin3: r^3's, ...) and cos r, for the full polynomials and the small-angle
// ones, which stop a term sooner. (Scalars: device code may use a constexpr scalar, not a host array.)
inline constexpr double kSin3 = -1.0 / 6.0, kSin5 = 1.0 / 120.0, kSin7 = -1.0 / 5040.0, kSin9 = 1.0 / 362880.0,
                        kSin11 = -1.0 / 39916800.0;
inline constexpr double kCos2 = -1.0 / 2.0, kCos4 = 1.0 / 24.0, kCos6 = -1.0 / 720.0, kCos8 = 1.0 / 40320.0,
                        kCos10 = -1.0 / 3628800.0, kCos12 = 1.0 / 479001600.0;

SURGE_HD_INLINE double sin_poly(double r) {
  const double r2 = r * r;
  return r + r * r2 * (kSin3 + r2 * (kSin5 + r2 * (kSin7 + r2 * (kSin9 + r2 * kSin11))));
}

SURGE_HD_INLINE double cos_poly(double r) {
  const double r2 = r * r;
  return 1.0 + r2 * (kCos2 + r2 * (kCos4 + r2 * (kCos6 + r2 * (kCos8 + r2 * (kCos10 + r2 * kCos12)))));
}

// Both at once, sharing the reduction and the polynomials (a compiler would not merge two calls).
SURGE_HD_INLINE SinCos sincos_branch_free(float x) {
  constexpr double kTwoOverPi = 0.63661977236758134308;
  constexpr double kHalfPi1 = 0x1.921fb54p+0;
  constexpr double kHalfPi2 = 0x1.10b461p-30;
  constexpr double kHalfPi3 = 0x1.a62633145c06ep-58;
  const double xd = static_cast<double>(x);
  const double k = nearbyint(xd * kTwoOverPi);
  // |r| <= pi/4 wherever the reduction is exact; the clamp keeps the far-out rest within [-1, 1], and
  // as comparisons (not fmin/fmax) it lets the NaN of an infinite or NaN x through.
  const double reduced = ((xd - k * kHalfPi1) - k * kHalfPi2) - k * kHalfPi3;
  const double r = reduced < -1.0 ? -1.0 : reduced > 1.0 ? 1.0 : reduced;
  const float sin_r = static_cast<float>(sin_poly(r)), cos_r = static_cast<float>(cos_poly(r));
  // The quadrant as a 32-bit integer (k bounded, NaN included, so the conversion is defined; GCC does
  // not vectorise fmin/fmax), then selects on floats: GCC vectorises 16 float lanes with 32-bit masks,
  // not masks of doubles mixed with floats.
  const double k_bounded = !(k >= -0x1p30) ? -0x1p30 : k > 0x1p30 ? 0x1p30 : k;
  const std::int32_t quadrant = static_cast<std::int32_t>(k_bounded);
  const bool odd = (quadrant & 1) != 0;
  const float sin_magnitude = odd ? cos_r : sin_r, cos_magnitude = odd ? sin_r : cos_r;
  const float sin_x = (quadrant & 2) != 0 ? -sin_magnitude : sin_magnitude;
  const float cos_x = ((quadrant + 1) & 2) != 0 ? -cos_magnitude : cos_magnitude;
  return {x == 0.0f ? x : sin_x, cos_x};  // sin(-0) is -0
}

// sincos_branch_free where |x| <= kSmallAngle: there k = nearbyint(x 2/pi) is 0, so the reduction gives r = x
// exactly, and the clamp and the quadrant selects are the identity; what is left is the two polynomials of x
// and the sign of a zero. Within kSmallAngle the polynomials also drop their last term (sin r to r^9, cos r to
// r^10): rounded to float, they give the full ones' results for every float there, as tests/test_lane_math.cpp
// checks one by one (the first float that differs lies beyond 0.255, in the sine). So: the same bits, without
// the work every lane pays for the general case.
inline constexpr float kSmallAngle = 0.25f;

SURGE_HD_INLINE double sin_poly_small(double r) {
  const double r2 = r * r;
  return r + r * r2 * (kSin3 + r2 * (kSin5 + r2 * (kSin7 + r2 * kSin9)));
}

SURGE_HD_INLINE double cos_poly_small(double r) {
  const double r2 = r * r;
  return 1.0 + r2 * (kCos2 + r2 * (kCos4 + r2 * (kCos6 + r2 * (kCos8 + r2 * kCos10))));
}

SURGE_HD_INLINE SinCos sincos_small(float x) {
  const double r = static_cast<double>(x);
  const float sin_x = static_cast<float>(sin_poly_small(r)), cos_x = static_cast<float>(cos_poly_small(r));
  return {x == 0.0f ? x : sin_x, cos_x};
}

}  // namespace lane_math_detail

SURGE_HD_INLINE float lane_sinf(float x) {
#if defined(__CUDA_ARCH__)
  return sinf(x);
#else
  return lane_math_detail::sincos_branch_free(x).sin;
#endif
}

SURGE_HD_INLINE float lane_cosf(float x) {
#if defined(__CUDA_ARCH__)
  return cosf(x);
#else
  return lane_math_detail::sincos_branch_free(x).cos;
#endif
}

// sin x and cos x together: on the host half the work of calling both.
SURGE_HD_INLINE void lane_sincosf(float x, float& sin_x, float& cos_x) {
#if defined(__CUDA_ARCH__)
  sin_x = sinf(x);
  cos_x = cosf(x);
#else
  const lane_math_detail::SinCos both = lane_math_detail::sincos_branch_free(x);
  sin_x = both.sin;
  cos_x = both.cos;
#endif
}

// How a step takes sines and cosines, as a template argument of the scenario's step: LaneTrig for any
// argument; SmallAngleTrig only where every argument has |x| <= kSmallAngle (the caller checks), with
// the same bits as LaneTrig and about half the host's work.
struct LaneTrig {
  SURGE_HD_INLINE static void sincos(float x, float& sin_x, float& cos_x) { lane_sincosf(x, sin_x, cos_x); }
};

// The sine and cosine of a step's one angle, taken beforehand (a loop over many environments may take them
// in a pass of its own): a step given this gets the bits of the policy that took them. Debug builds check
// that the step asks for the angle they were taken of.
struct GivenSinCos {
  float angle, sin_x, cos_x;
  SURGE_HD_INLINE void sincos([[maybe_unused]] float x, float& sin_out, float& cos_out) const {
    assert(x == angle || (x != x && angle != angle));
    sin_out = sin_x;
    cos_out = cos_x;
  }
};

struct SmallAngleTrig {
  static constexpr float kSmallAngle = lane_math_detail::kSmallAngle;
  // Whether x is an argument this policy takes (NaN is not).
  SURGE_HD_INLINE static bool covers(float x) { return x >= -kSmallAngle && x <= kSmallAngle; }
  SURGE_HD_INLINE static void sincos(float x, float& sin_x, float& cos_x) {
#if defined(__CUDA_ARCH__)
    lane_sincosf(x, sin_x, cos_x);
#else
    const lane_math_detail::SinCos both = lane_math_detail::sincos_small(x);
    sin_x = both.sin;
    cos_x = both.cos;
#endif
  }
};

}  // namespace surge
