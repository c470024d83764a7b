#pragma once
// exp, log, tanh and sqrt for float and double in SURGE_HD code, so per-sample math can be templated on
// the scalar type: float for training, double for the finite-difference gradient checks.
#include <cmath>

#include "sim/hd.hpp"

namespace surge::rl {

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
