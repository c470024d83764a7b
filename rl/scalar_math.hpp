#pragma once
// exp, log, tanh and sqrt for float and double in SURGE_HD code, so per-sample math can be templated on
// the scalar type: float for training, double for the finite-difference gradient checks.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "sim/hd.hpp"

namespace surge::rl {

SURGE_HD_INLINE float float_from_bits(std::int32_t bits) {
#if defined(__CUDA_ARCH__)
  return __int_as_float(bits);
#else
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
#endif
}

// tanh in float, branch-free so that CPU loops vectorise (libm's tanhf is scalar and was most of the
// CPU learner's time), and the same arithmetic on the GPU. Absolute error below 2e-7 everywhere:
//   |x| < 0.5: the odd Taylor series to x^13 (next term < 5e-8 at 0.5);
//   otherwise: (1 - e) / (1 + e) with e = exp(-2|x|), |x| clamped to 9 where tanh is 1 in float, and
//   exp as 2^k * 2^f: k the nearest integer to the exponent in base 2, 2^f (|f| <= 1/2) by its Taylor
//   series in f ln 2 to the 7th power (relative error < 1e-8), 2^k assembled in the exponent bits.
SURGE_HD_INLINE float fast_tanh(float x) {
  const float a = fabsf(x);
  const float s = a * a;
  const float series =
      a * (1.0f + s * (-1.0f / 3 +
                       s * (2.0f / 15 + s * (-17.0f / 315 + s * (62.0f / 2835 + s * (-1382.0f / 155925 +
                                                                                     s * (21844.0f / 6081075.0f)))))));
  const float clamped = a < 9.0f ? a : 9.0f;
  const float t = -2.0f * 1.44269504088896341f * clamped;  // exponent of e in base 2, in [-26, 0]
  const float rounder = 12582912.0f;                       // 1.5 * 2^23: adding it rounds to an integer
  const float k = (t + rounder) - rounder;
  const float g = (t - k) * 0.693147180559945309f;  // f ln 2, |g| <= 0.35
  const float two_f =
      1.0f +
      g * (1.0f +
           g * (1.0f / 2 + g * (1.0f / 6 + g * (1.0f / 24 + g * (1.0f / 120 + g * (1.0f / 720 + g * (1.0f / 5040)))))));
  const float e = two_f * float_from_bits((static_cast<std::int32_t>(k) + 127) << 23);
  const float tail = (1.0f - e) / (1.0f + e);
  const float magnitude = a < 0.5f ? series : tail;
  return x < 0.0f ? -magnitude : magnitude;
}

SURGE_HD_INLINE float scalar_exp(float x) { return expf(x); }
SURGE_HD_INLINE double scalar_exp(double x) { return exp(x); }
SURGE_HD_INLINE float scalar_log(float x) { return logf(x); }
SURGE_HD_INLINE double scalar_log(double x) { return log(x); }
SURGE_HD_INLINE float scalar_tanh(float x) { return tanhf(x); }
SURGE_HD_INLINE double scalar_tanh(double x) { return tanh(x); }
SURGE_HD_INLINE float scalar_sqrt(float x) { return sqrtf(x); }
SURGE_HD_INLINE double scalar_sqrt(double x) { return sqrt(x); }

template <class Scalar>
SURGE_HD_INLINE Scalar scalar_max(Scalar a, Scalar b) {
  return a > b ? a : b;
}
template <class Scalar>
SURGE_HD_INLINE Scalar scalar_min(Scalar a, Scalar b) {
  return a < b ? a : b;
}
template <class Scalar>
SURGE_HD_INLINE Scalar scalar_clamp(Scalar x, Scalar low, Scalar high) {
  return x < low ? low : (x > high ? high : x);
}

}  // namespace surge::rl
