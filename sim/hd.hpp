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
