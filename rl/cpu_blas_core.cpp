#include "rl/cpu_blas_core.hpp"

#include <unistd.h>

#include <cstdlib>

#if defined(SURGE_HAVE_CBLAS)
#include <cblas.h>
#endif

namespace surge::rl {

namespace {

// OpenBLAS's kernels' name, or its build's description; empty without OpenBLAS.
std::string ask_openblas(bool build) {
#if defined(SURGE_HAVE_CBLAS) && defined(OPENBLAS_VERSION)
  const char* answer = build ? openblas_get_config() : openblas_get_corename();
  return answer ? std::string(answer) : std::string();
#else
  (void)build;
  return {};
#endif
}

}  // namespace

std::string openblas_core() { return ask_openblas(false); }

std::string openblas_config() { return ask_openblas(true); }

std::string openblas_core_upgrade(const std::string& chosen) {
  // The generic cores OpenBLAS falls back to for an x86-64 model it does not know.
  if (chosen != "Prescott" && chosen != "Core2" && chosen != "Nehalem" && chosen != "Penryn" && chosen != "Dunnington")
    return {};
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // libgcc's CPU model checks the OS's saved register state (XCR0) too, so a feature named here can run.
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  if (avx512 && __builtin_cpu_supports("avx512bf16")) return "Cooperlake";
  if (avx512) return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return {};
}

void rerun_with_openblas_core(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") || std::getenv("SURGE_OPENBLAS_RERUN")) return;
  if (openblas_config().find("DYNAMIC_ARCH") == std::string::npos) return;  // one core, built in
  const std::string core = openblas_core_upgrade(openblas_core());
  if (core.empty()) return;
  // Marked first, so that a program that comes back (exec failed, or OpenBLAS ignores the name) stops here.
  if (setenv("SURGE_OPENBLAS_RERUN", "1", 1) != 0 || setenv("OPENBLAS_CORETYPE", core.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  // Still here: the exec failed; go on with OpenBLAS's own kernels.
  unsetenv("OPENBLAS_CORETYPE");
}

}  // namespace surge::rl
