// The learner's precision: names, what each backend runs, and the refusals (rl/precision.hpp).
#include "rl/precision.hpp"

#include "rl/actor_critic.hpp"
#include "rl/fused_mlp.hpp"
#include "rl/fused_mlp_bf16.hpp"
#include "rl/gemm.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"

namespace surge::rl {

bool is_precision_name(const std::string& name) { return name == "fp32" || name == "tf32" || name == "bf16"; }

Precision parse_precision(const std::string& name) {
  if (name == "fp32") return Precision::Fp32;
  if (name == "tf32") return Precision::Tf32;
  if (name == "bf16") return Precision::Bf16;
  throw InputError("precision '" + format_excerpt(name) + "' is not \"fp32\", \"tf32\" or \"bf16\"");
}

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::Tf32: return "tf32";
    case Precision::Bf16: return "bf16";
    case Precision::Fp32: break;
  }
  return "fp32";
}

std::vector<std::string> cpu_precisions() {
  if (bf16_native_supported()) return {"fp32", "bf16"};
  return {"fp32"};
}

std::vector<std::string> cuda_precisions(int cc_major) {
  if (cc_major >= 8) return {"fp32", "tf32", "bf16"};
  return {"fp32"};
}

void check_precision(const ActorCritic& network, Device device) {
  const NetworkConfig& config = network.config();
  const Precision precision = parse_precision(config.precision);
  if (precision == Precision::Fp32) return;
  const std::string value = "precision = \"" + config.precision + "\"";
  if (device.is_cuda()) {
    const int major = cuda_compute_capability(device) / 10;
    if (major < 8)
      throw InputError(value + " needs a GPU of compute capability 8.0 or newer; " + device.str() + " is " +
                       std::to_string(major) + "." + std::to_string(cuda_compute_capability(device) % 10) +
                       "; use --set precision=fp32");
    return;
  }
  if (precision == Precision::Tf32)
    throw InputError(value +
                     " is a CUDA format (tensor cores); the CPU has no TF32 arithmetic: use --set "
                     "precision=fp32, or bf16 on a CPU with AVX-512 BF16");
  if (!bf16_native_built())
    throw InputError(value +
                     ": this build has no AVX-512 BF16 kernel (an x86-64 GCC >= 10 or Clang >= 9 "
                     "build has); use --set precision=fp32");
  if (!bf16_native_supported())
    throw InputError(value +
                     " on the CPU needs AVX-512 BF16 (avx512_bf16 in /proc/cpuinfo), which this CPU "
                     "lacks; use --set precision=fp32 (surge doctor lists the precisions this machine runs)");
  if (!config.cpu_fused_mlp || !fused_mlp_fits(network.actor()) || !fused_mlp_fits(network.critic()))
    throw InputError(value +
                     " on the CPU runs on the fused MLP path only: it needs cpu_fused_mlp = true and hidden "
                     "layers at most " +
                     std::to_string(kFusedMlpMaxWidth) + " wide; use --set precision=fp32");
}

}  // namespace surge::rl
