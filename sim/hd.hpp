#pragma once
// SURGE_HD marks logic that is written once and compiled for both backends:
// __host__ __device__ under nvcc, nothing under a plain host compiler.
#if defined(__CUDACC__)
#define SURGE_HD __host__ __device__
#define SURGE_HD_INLINE __host__ __device__ __forceinline__
#else
#define SURGE_HD
#define SURGE_HD_INLINE inline
#endif

namespace surge {

// x, with where it came from hidden from the host compiler: an addition that follows cannot be fused with
// the product that made x into one FMA. Where GCC fuses a product into a sum depends on the loop the code
// is inlined into, so a per-element function shared by two launchers (one agent's and K agents') can round
// differently in each unless its products are kept apart this way. Device code is unchanged (nvcc fuses
// the same way in every kernel).
SURGE_HD_INLINE double unfused(double x) {
#if !defined(__CUDA_ARCH__) && defined(__GNUC__)
  asm("" : "+x"(x));
#endif
  return x;
}

}  // namespace surge
