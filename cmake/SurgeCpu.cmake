# Flags for the CPU backend's hot loops (environment stepping, the learner).
#
# SURGE_CPU_NATIVE compiles them for the build machine's instruction set (-march=native: AVX2, AVX-512),
# which runs them 1.4x (learner) and 3x (CartPole stepping, which baseline x86-64 SSE2 cannot vectorise:
# it lacks a vector rounding instruction) faster than baseline x86-64. It is right when the build
# machine is the run machine, as with tools/setup.sh and CI; turn it off to build binaries for other
# machines.
option(SURGE_CPU_NATIVE "Compile the CPU hot loops for this machine's instruction set (-march=native)" ON)
include(CheckCXXCompilerFlag)
check_cxx_compiler_flag(-march=native SURGE_HAVE_MARCH_NATIVE)

# surge_cpu_hot_loops(<target> [EXACT_ARITHMETIC]): host-side flags for a target's hot loops, for its
# C++ sources and, through -Xcompiler, for the host half of its CUDA sources (the device half keeps
# nvcc's own flags). -fno-trapping-math lets GCC vectorise branch-free selects, -fno-math-errno lets it
# inline sqrtf (we read neither floating-point exception flags nor errno). EXACT_ARITHMETIC forbids
# fusing a multiply and an add into one FMA, so that results are the same bits with and without
# SURGE_CPU_NATIVE, scalar or vectorised.
function(surge_cpu_hot_loops target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "EXACT_ARITHMETIC" "" "")
  set(flags -fno-trapping-math -fno-math-errno)
  if(ARG_EXACT_ARITHMETIC)
    list(APPEND flags -ffp-contract=off)
  endif()
  if(SURGE_CPU_NATIVE AND SURGE_HAVE_MARCH_NATIVE)
    list(APPEND flags -march=native)
  endif()
  string(REPLACE ";" "," xcompiler_flags "${flags}")
  target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${flags}>"
                                           "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=${xcompiler_flags}>")
endfunction()
