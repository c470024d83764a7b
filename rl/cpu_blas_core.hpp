#pragma once
// Which kernels OpenBLAS runs on this CPU. OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernels
// by CPU model when it is loaded, and takes a model it does not know for a generic x86-64: OpenBLAS
// 0.3.21 runs its Pentium 4 ("Prescott", SSE3) kernels on Xeons newer than itself, about 3.5 times
// slower than the AVX-512 ones those CPUs run. OPENBLAS_CORETYPE, read at load time, overrides the choice.
#include <string>

namespace surge::rl {

// The kernels OpenBLAS chose ("SkylakeX", "Prescott", ...); empty where the CPU GEMM is not OpenBLAS.
std::string openblas_core();
// OpenBLAS's build ("OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..."); only DYNAMIC_ARCH builds read
// OPENBLAS_CORETYPE. Empty where the CPU GEMM is not OpenBLAS.
std::string openblas_config();

// The OPENBLAS_CORETYPE this CPU and its OS support best, where OpenBLAS chose an older generic core
// for it: "Cooperlake" (AVX-512 with BF16), "SkylakeX" (AVX-512) or "Haswell" (AVX2 and FMA). Empty
// where OpenBLAS's own choice stands (a CPU it knows, one without these instructions, or no OpenBLAS).
std::string openblas_core_upgrade(const std::string& chosen);

// Called first thing in main(): where openblas_core_upgrade() names a core and neither
// OPENBLAS_CORETYPE nor SURGE_OPENBLAS_RERUN is set, runs this program again with OPENBLAS_CORETYPE
// set to it (execv of /proc/self/exe, same arguments, same process id); returns when it did not.
// Setting SURGE_OPENBLAS_RERUN (to anything) keeps OpenBLAS's own choice.
void rerun_with_openblas_core(char** argv);

}  // namespace surge::rl
